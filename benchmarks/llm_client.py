"""The OpenAI-compatible client (fewshot_models.backends.openai) against a fake server on its own process.

1. Requests per second at concurrency 1, 8 and 32 against a fake that answers at once: the client must not be
   the bottleneck (target: at least 200 requests/s at 32).
2. The client against a plain httpx loop (32 threads sharing one httpx.Client, each posting the next request as
   soon as its last is answered) at concurrency 32, for a batch of 250 and one of 4,000, in one run, rounds
   interleaved: the cost of a request must not grow with the batch (target: at least 0.95 of the loop at both).
3. What an SST-2 ``icl`` run keeps of its answers (10 shots, split 1, the official test set, the echo path):
   bytes of the requests and answers as they were kept before (JSON) and as they are kept now (the request's
   hash, what scoring needs, compressed).
4. A six-task ``worker`` sweep (every CLUES task, 10 shots, split 1, the official test sets) against a fake that
   answers after 200 ms, as a loaded inference server might: its request count and wall time.

The fake (tests/baselines/fake_openai.py) runs in a subprocess so that its threads do not share this process's
interpreter lock with the client's. Usage: .venv/bin/python benchmarks/llm_client.py [--requests 2000]
[--latency 0.2] [--concurrency 8] [--rounds 3] [--skip-sweep]
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import statistics
import subprocess
import sys
import threading
import time
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fewshot_models import METHODS, AdapterConfig  # noqa: E402
from fewshot_models.backends import ChatRequest, MemoryStore, open_backend  # noqa: E402
from fewshot_models.clues_io import load_split  # noqa: E402
from tasks_data.registry import CLUES_TASKS  # noqa: E402


class Fake:
    def __init__(self, latency: float):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.baselines.fake_openai", "--latency", str(latency)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None  # stdout=PIPE
        self.base_url = self.proc.stdout.readline().strip()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.proc.terminate()
        self.proc.wait(timeout=10)


def throughput(base_url: str, concurrency: int, n: int, repeat: int = 1) -> tuple[float, dict]:
    """Requests/s of the client over ``repeat`` batches of ``n`` (each batch one call, as a method makes it)."""
    config = AdapterConfig(
        model="tiny-model", backend="openai", server=base_url, concurrency=concurrency, store=MemoryStore()
    )
    batches = [
        [ChatRequest(messages=(("user", f"item {b}.{i}: is this positive?"),), max_tokens=4) for i in range(n)]
        for b in range(repeat)
    ]
    with open_backend(config, method="worker") as backend:
        start = time.perf_counter()
        answers = [a for batch in batches for a in backend.chat(batch)]
        seconds = time.perf_counter() - start
        tally = backend.tally.as_dict()
    assert len(answers) == n * repeat and tally["requests"] == n * repeat + tally["retries"], tally
    return n * repeat / seconds, tally


def plain_loop(base_url: str, concurrency: int, n: int, repeat: int = 1) -> float:
    """Requests/s of the simplest client that could do the job: threads sharing one httpx.Client, over ``repeat``
    batches of ``n`` (each batch its threads, as each of the client's calls)."""
    import httpx

    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    with httpx.Client(base_url=base_url + "/", limits=limits, timeout=120) as client:
        start = time.perf_counter()
        for b in range(repeat):
            _plain_batch(client, concurrency, n, b)
        return n * repeat / (time.perf_counter() - start)


def _plain_batch(client, concurrency: int, n: int, b: int) -> None:
    jobs: queue.SimpleQueue[int] = queue.SimpleQueue()
    for i in range(n):
        jobs.put(i)

    def work():
        while True:
            try:
                i = jobs.get_nowait()
            except queue.Empty:
                return
            body = {
                "model": "tiny-model",
                "messages": [{"role": "user", "content": f"item {b}.{i}: is this positive?"}],
                "max_tokens": 4,
                "temperature": 0.0,
            }
            response = client.post("chat/completions", json=body)
            response.raise_for_status()
            response.json()["choices"][0]["message"]["content"]

    threads = [threading.Thread(target=work) for _ in range(min(concurrency, n))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def client_against_loop(base_url: str, sizes=(250, 4000), concurrency: int = 32, rounds: int = 3) -> dict:
    """Median requests/s of the client and of the plain loop per batch size, rounds interleaved; a small batch
    is sent several times over (4,000 requests in all) so that each figure is as long as the large one's."""
    rates: dict = {n: {"client": [], "loop": []} for n in sizes}
    for _ in range(rounds):
        for n in sizes:
            repeat = max(1, 4000 // n)
            rates[n]["loop"].append(plain_loop(base_url, concurrency, n, repeat))
            rates[n]["client"].append(throughput(base_url, concurrency, n, repeat)[0])
    return {n: {k: statistics.median(v) for k, v in r.items()} for n, r in rates.items()}


def stored_bytes(base_url: str, zip_path: str) -> dict:
    """An SST-2 icl run (10 shots, split 1) over the fake's echo path: what keeping its answers costs, as they were
    kept before (the request's URL and body and the whole answer, as JSON) and as they are kept now."""
    from fewshot_models.backends import http

    before = []
    send = http.Exchange.send

    def measuring(self, method, path, body=None, **kw):
        answer = send(self, method, path, body, **kw)
        if body is not None:
            request = {"url": f"{self.server}/{path}", "body": body}
            before.append(len(json.dumps(request).encode()) + len(json.dumps(answer).encode()))
        return answer

    task = CLUES_TASKS["sst2"]
    train = load_split(zip_path, task, task.train_filename(10, 1))
    test = load_split(zip_path, task, task.test_filename)
    store = MemoryStore()
    config = AdapterConfig(model="tiny-model", backend="openai", server=base_url, concurrency=8, store=store)
    http.Exchange.send = measuring  # type: ignore[method-assign]  # measured in place, put back below
    try:
        result = METHODS["icl"]().run(task, train, test, config)
    finally:
        http.Exchange.send = send  # type: ignore[method-assign]
    assert result.usage is not None  # a server's run counts what it asked
    after = [64 + len(zlib.compress(json.dumps(r, separators=(",", ":")).encode(), 9)) for r in store.items.values()]
    return {
        "requests": result.usage["requests"],
        "before": sum(before),
        "after": sum(after),
        "scoring": result.notes["scoring"],
    }


def worker_sweep(base_url: str, zip_path: str, concurrency: int) -> list[dict]:
    rows = []
    for slug, task in CLUES_TASKS.items():
        train = load_split(zip_path, task, task.train_filename(10, 1))
        test = load_split(zip_path, task, task.test_filename)
        config = AdapterConfig(
            model="tiny-model", backend="openai", server=base_url, concurrency=concurrency, store=MemoryStore()
        )
        start = time.perf_counter()
        result = METHODS["worker"]().run(task, train, test, config)
        assert result.usage is not None  # a server's run counts what it asked
        again = set(result.notes["re_asked_items"])  # a second try after the validation message
        rows.append(
            {
                "task": slug,
                "training": len(train),
                "test": len(test),
                "again_training": sum(ex.uid in again for ex in train),
                "again_test": sum(ex.uid in again for ex in test),
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
    parser.add_argument("--rounds", type=int, default=3, help="of the client against the plain loop")
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
        print(f"2. the client against a plain 32-thread httpx loop, median of {args.rounds} interleaved rounds")
        for n, r in client_against_loop(fake.base_url, rounds=args.rounds).items():
            ratio = r["client"] / r["loop"]
            verdict = "met" if ratio >= 0.95 else "NOT met"
            print(
                f"   batch {n:>5}: client {r['client']:7.1f} requests/s, loop {r['loop']:7.1f}: ratio {ratio:.3f} "
                f"(target >= 0.95: {verdict})"
            )
    zip_path = os.environ.get("CLUES_DATA") or str(ROOT.parent / "shared" / "clues" / "CLUES-JSON.zip")
    if not Path(zip_path).is_file():
        print(f"3, 4. skipped: no CLUES-JSON.zip at {zip_path} (set CLUES_DATA)")
        return
    with Fake(0.0) as fake:
        kept = stored_bytes(fake.base_url, zip_path)
    times = kept["before"] / kept["after"]
    print(
        f"3. an SST-2 icl run ({kept['requests']} requests; {kept['scoring']}): answers kept in "
        f"{kept['before']:,} bytes before, {kept['after']:,} bytes now ({times:.0f} times less)"
    )
    if args.skip_sweep:
        return
    print(
        f"4. six-task worker sweep, 10 shots split 1, against a fake answering after {args.latency * 1000:.0f} ms "
        f"(concurrency {args.concurrency})"
    )
    with Fake(args.latency) as fake:
        start = time.perf_counter()
        rows = worker_sweep(fake.base_url, zip_path, args.concurrency)
        wall = time.perf_counter() - start
    print(
        f"   {'task':<9} {'training':>8} {'test':>5} {'asked again':>11} {'requests':>8} {'seconds':>8} "
        f"{'of which training':>18}"
    )
    for r in rows:
        again = r["again_training"] + r["again_test"]
        print(
            f"   {r['task']:<9} {r['training']:>8} {r['test']:>5} {again:>11} {r['requests']:>8} {r['seconds']:>8.1f} "
            f"{r['train_seconds']:>18.1f}"
        )
    total = sum(r["requests"] for r in rows)
    # training requests go one after the other; test requests (and their second tries) `concurrency` at a time
    floor = args.latency * sum(
        r["training"] + r["again_training"] + (r["test"] + r["again_test"]) / args.concurrency for r in rows
    )
    print(
        f"   all six: {total} requests in {wall:.1f} s wall ({total / wall:.1f} requests/s; the floor at this "
        f"latency and concurrency is {floor:.1f} s)"
    )


if __name__ == "__main__":
    main()
