"""The OpenAI-compatible client (fewshot_models.backends.openai) against a fake server on its own process.

1. Requests per second at concurrency 1, 8 and 32 against a fake that answers at once: the client must not be
   the bottleneck (target: at least 200 requests/s at 32).
2. A six-task ``worker`` sweep (every CLUES task, 10 shots, split 1, the official test sets) against a fake that
   answers after 200 ms, as a loaded inference server might: its request count and wall time.

The fake (tests/baselines/fake_openai.py) runs in a subprocess so that its threads do not share this process's
interpreter lock with the client's. Usage: .venv/bin/python benchmarks/llm_client.py [--requests 2000]
[--latency 0.2] [--concurrency 8] [--skip-sweep]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fewshot_models import METHODS, AdapterConfig  # noqa: E402
from fewshot_models.backends import ChatRequest, MemoryStore, open_backend  # noqa: E402
from fewshot_models.clues_io import load_split  # noqa: E402
from tasks_data.registry import TASKS  # noqa: E402


class Fake:
    def __init__(self, latency: float):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.baselines.fake_openai", "--latency", str(latency)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.base_url = self.proc.stdout.readline().strip()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.proc.terminate()
        self.proc.wait(timeout=10)


def throughput(base_url: str, concurrency: int, n: int) -> tuple[float, dict]:
    config = AdapterConfig(
        model="tiny-model", backend="openai", server=base_url, concurrency=concurrency, store=MemoryStore()
    )
    requests = [ChatRequest(messages=(("user", f"item {i}: is this positive?"),), max_tokens=4) for i in range(n)]
    with open_backend(config, method="worker") as backend:
        start = time.perf_counter()
        answers = backend.chat(requests)
        seconds = time.perf_counter() - start
        tally = backend.tally.as_dict()
    assert len(answers) == n and tally["requests"] == n + tally["retries"], tally
    return n / seconds, tally


def worker_sweep(base_url: str, zip_path: str, concurrency: int) -> list[dict]:
    rows = []
    for slug, task in TASKS.items():
        train = load_split(zip_path, task, task.train_filename(10, 1))
        test = load_split(zip_path, task, task.test_filename)
        config = AdapterConfig(
            model="tiny-model", backend="openai", server=base_url, concurrency=concurrency, store=MemoryStore()
        )
        start = time.perf_counter()
        result = METHODS["worker"]().run(task, train, test, config)
        rows.append(
            {
                "task": slug,
                "training": len(train),
                "test": len(test),
                "requests": result.usage["requests"],
                "seconds": time.perf_counter() - start,
                "train_seconds": result.train_seconds,
                "prompt_tokens": result.usage["prompt_tokens"],
            }
        )
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=8, help="of the worker sweep")
    parser.add_argument("--skip-sweep", action="store_true")
    args = parser.parse_args()
    os.environ.pop("OPENAI_API_KEY", None)  # the fakes take no key
    print(f"1. requests/s against a fake answering at once ({args.requests} chat requests each)")
    with Fake(0.0) as fake:
        throughput(fake.base_url, 8, 100)  # warm-up
        for concurrency in (1, 8, 32):
            rate, tally = throughput(fake.base_url, concurrency, args.requests)
            verdict = (
                "" if concurrency != 32 else ("  (target >= 200: met)" if rate >= 200 else "  (target >= 200: NOT met)")
            )
            print(f"   concurrency {concurrency:>2}: {rate:7.1f} requests/s, {tally['retries']} retries{verdict}")
    if args.skip_sweep:
        return
    zip_path = os.environ.get("CLUES_DATA") or str(ROOT.parent / "shared" / "clues" / "CLUES-JSON.zip")
    if not Path(zip_path).is_file():
        print(f"2. skipped: no CLUES-JSON.zip at {zip_path} (set CLUES_DATA)")
        return
    print(
        f"2. six-task worker sweep, 10 shots split 1, against a fake answering after {args.latency * 1000:.0f} ms "
        f"(concurrency {args.concurrency})"
    )
    with Fake(args.latency) as fake:
        start = time.perf_counter()
        rows = worker_sweep(fake.base_url, zip_path, args.concurrency)
        wall = time.perf_counter() - start
    print(f"   {'task':<9} {'training':>8} {'test':>5} {'requests':>8} {'seconds':>8} {'of which training':>18}")
    for r in rows:
        print(
            f"   {r['task']:<9} {r['training']:>8} {r['test']:>5} {r['requests']:>8} {r['seconds']:>8.1f} "
            f"{r['train_seconds']:>18.1f}"
        )
    total = sum(r["requests"] for r in rows)
    floor = sum(r["training"] + r["test"] / args.concurrency for r in rows) * args.latency
    print(
        f"   all six: {total} requests in {wall:.1f} s wall ({total / wall:.1f} requests/s; the floor at this "
        f"latency and concurrency is {floor:.1f} s)"
    )


if __name__ == "__main__":
    main()
