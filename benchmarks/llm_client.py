"""The OpenAI-compatible client (fewshot_models.backends.openai) against a fake server on its own process, keeping
its answers where ``run_baselines`` keeps them: a run's store (``baselines.store.RunStore``: the run's
``BaselineResponse`` rows) in a scratch database, on SQLite and on PostgreSQL.

1. Requests per second at concurrency 1, 8 and 32 against a fake that answers at once, through the run's store:
   the client must not be the bottleneck (target: at least 200 requests/s at 32).
2. The client, through the run's store, against a plain httpx loop that keeps nothing (32 threads sharing one
   httpx.Client, each posting the next request as soon as its last is answered) at concurrency 32, for a batch of
   250 and one of 4,000, in one run, rounds interleaved: keeping the answers must not slow the client down, nor
   the cost of a request grow with the batch (target: at least 0.95 of the loop at both, on both databases).
3. What an SST-2 ``icl`` run keeps of its answers (10 shots, split 1, the official test set, the echo path):
   bytes of the requests and answers as they were kept before (JSON) and as they are kept now (the request's
   hash, what scoring needs, compressed).
4. A six-task ``worker`` sweep (every CLUES task, 10 shots, split 1, the official test sets) against a fake that
   answers after 200 ms, as a loaded inference server might: its request count and wall time.

The fake (tests/baselines/fake_openai.py) runs in a subprocess so that its threads do not share this process's
interpreter lock with the client's; parts 1 and 2 run in one subprocess per database (Django is set up for one
database per process): a scratch SQLite file, and a scratch database on the PostgreSQL server of
``--postgres`` (default: ``DATABASE_URL``'s server, else postgres://postgres@127.0.0.1:5432), created, migrated
and dropped. Usage: .venv/bin/python benchmarks/llm_client.py [--requests 2000] [--latency 0.2]
[--concurrency 8] [--rounds 6] [--databases sqlite postgresql] [--postgres URL] [--skip-sweep]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import queue
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from pathlib import Path
from urllib.parse import urlsplit

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


_RUN_SEEDS = itertools.count(1)


def run_store():
    """A new run's store, as ``run_baselines`` opens it for a run on a server (Django set up: the store part)."""
    from baselines.models import BaselineRun
    from baselines.store import RunStore
    from tasks_data.models import Task

    task, _ = Task.objects.get_or_create(slug="sst2", defaults={"source": "benchmark", "fingerprint": "-"})
    run = BaselineRun.objects.create(
        task=task,
        method="worker",
        model="tiny-model",
        backend="openai",
        server="http://127.0.0.1/v1",
        shots=10,
        split=1,
        seed=next(_RUN_SEEDS),
        status=BaselineRun.Status.RUNNING,
        attempts=1,
    )
    return RunStore(run)


def throughput(base_url: str, concurrency: int, n: int, repeat: int = 1, store=None) -> tuple[float, dict]:
    """Requests/s of the client over ``repeat`` batches of ``n`` (each batch one call, as a method makes it),
    keeping its answers in ``store`` (default: a new run's store)."""
    config = AdapterConfig(
        model="tiny-model",
        backend="openai",
        server=base_url,
        concurrency=concurrency,
        store=store if store is not None else run_store(),
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
    if store is None:  # every answer is in the run's rows
        from baselines.models import BaselineResponse

        kept = BaselineResponse.objects.filter(run_id=config.store.run_id).count()
        assert kept == n * repeat, (kept, n * repeat)
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
    """Per batch size, each round's requests/s and CPU seconds per request (this process, every thread) of the
    client (through a run's store) and of the plain loop, run back to back (each first in every other round),
    rounds interleaved; a small batch is
    sent several times over (4,000 requests in all) so that each figure is as long as the large one's. The ratio
    of each round's two rates (run seconds apart) is what a machine's other work disturbs least: their median is
    the figure."""
    figures: dict = {n: {"client": [], "loop": [], "client_cpu": [], "loop_cpu": []} for n in sizes}
    for r in range(rounds):
        for n in sizes:
            repeat = max(1, 4000 // n)
            for who in ("loop", "client") if r % 2 == 0 else ("client", "loop"):  # neither always goes first
                cpu = time.process_time()
                if who == "loop":
                    figures[n][who].append(plain_loop(base_url, concurrency, n, repeat))
                else:
                    figures[n][who].append(throughput(base_url, concurrency, n, repeat)[0])
                figures[n][f"{who}_cpu"].append((time.process_time() - cpu) / (n * repeat))
    for r in figures.values():
        r["ratios"] = [c / lo for c, lo in zip(r["client"], r["loop"], strict=True)]
        r["ratio"] = statistics.median(r["ratios"])
    return figures


def store_figures(base_url: str, requests: int, rounds: int) -> dict:
    """Parts 1 and 2 on this process's database (a scratch one, migrated here)."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "clues_platform.settings")
    django.setup()
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0)
    throughput(base_url, 8, 100)  # warm-up
    rates = {}
    for concurrency in (1, 8, 32):
        rate, tally = throughput(base_url, concurrency, requests)
        rates[concurrency] = {"rate": rate, "retries": tally["retries"]}
    return {
        "database": _database_name(connection),
        "throughput": rates,
        "against_loop": client_against_loop(base_url, rounds=rounds),
    }


def _database_name(connection) -> str:
    if connection.vendor == "sqlite":
        return "SQLite " + ".".join(map(str, connection.Database.sqlite_version_info))
    version = connection.pg_version  # e.g. 150014
    return f"PostgreSQL {version // 10000}.{version % 10000}"


class ScratchDatabase:
    """A database for one subprocess: a new SQLite file, or a new database on a PostgreSQL server (dropped)."""

    def __init__(self, kind: str, postgres: str):
        self.kind, self.postgres, self.name = kind, postgres, f"clues_bench_llm_{os.getpid()}"
        self.folder = tempfile.TemporaryDirectory(prefix="llm-client-")

    def __enter__(self) -> str:
        if self.kind == "sqlite":
            return f"sqlite:///{self.folder.name}/bench.sqlite3"
        import psycopg

        with psycopg.connect(self._admin(), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{self.name}"')
            conn.execute(f'CREATE DATABASE "{self.name}"')
        return urlsplit(self.postgres)._replace(path="/" + self.name).geturl()

    def _admin(self) -> str:
        return urlsplit(self.postgres)._replace(scheme="postgresql", path="/postgres").geturl()

    def __exit__(self, *exc):
        if self.kind == "postgresql":
            import psycopg

            with psycopg.connect(self._admin(), autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')
        self.folder.cleanup()


def on_database(kind: str, postgres: str, base_url: str, requests: int, rounds: int) -> dict:
    with ScratchDatabase(kind, postgres) as url:
        env = {k: v for k, v in os.environ.items() if k not in ("CELERY_BROKER_URL", "CACHE_URL", "REDIS_URL")}
        env["DATABASE_URL"] = url
        done = subprocess.run(
            [sys.executable, __file__, "--store-figures", base_url, "--requests", str(requests)]
            + ["--rounds", str(rounds)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
    if done.returncode:
        raise SystemExit(f"the {kind} part failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


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
    parser.add_argument(
        "--rounds", type=int, default=6, help="of the client against the plain loop (even: each first as often)"
    )
    parser.add_argument("--databases", nargs="+", choices=("sqlite", "postgresql"), default=["sqlite", "postgresql"])
    parser.add_argument(
        "--postgres",
        default=os.environ.get("DATABASE_URL", "")
        if os.environ.get("DATABASE_URL", "").startswith("postgres")
        else "postgres://postgres@127.0.0.1:5432/postgres",
        help="a PostgreSQL server to make a scratch database on",
    )
    parser.add_argument("--skip-sweep", action="store_true")
    parser.add_argument("--store-figures", metavar="BASE_URL", help=argparse.SUPPRESS)  # one database's parts 1, 2
    args = parser.parse_args()
    os.environ.pop("OPENAI_API_KEY", None)  # the fakes take no key
    if args.store_figures:
        print(json.dumps(store_figures(args.store_figures, args.requests, args.rounds)))
        return
    load = os.getloadavg()
    print(f"load average at the start: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    with Fake(0.0) as fake:
        for kind in args.databases:
            figures = on_database(kind, args.postgres, fake.base_url, args.requests, args.rounds)
            print(f"on {figures['database']}, answers kept in a run's store (baselines.store.RunStore):")
            print(f"1. requests/s against a fake answering at once ({args.requests} chat requests each)")
            for concurrency, r in figures["throughput"].items():
                rate = r["rate"]
                verdict = "" if concurrency != "32" else f"  (target >= 200: {'met' if rate >= 200 else 'NOT met'})"
                print(f"   concurrency {concurrency:>2}: {rate:7.1f} requests/s, {r['retries']} retries{verdict}")
            print(
                f"2. the client against a plain 32-thread httpx loop, {args.rounds} rounds (each: both back to back, "
                "in turn first); the figure is the median of the rounds' ratios"
            )
            for n, r in figures["against_loop"].items():
                ratio = r["ratio"]
                rounds = ", ".join(f"{c:.0f}/{lo:.0f}" for c, lo in zip(r["client"], r["loop"], strict=True))
                cpu = statistics.median(r["client_cpu"]) * 1e6, statistics.median(r["loop_cpu"]) * 1e6
                print(
                    f"   batch {n:>5}: ratio {ratio:.3f} (target >= 0.95: {'met' if ratio >= 0.95 else 'NOT met'}); "
                    f"requests/s per round (client/loop): {rounds}; CPU per request (median, this process): "
                    f"client {cpu[0]:.0f} us, loop {cpu[1]:.0f} us"
                )
    load = os.getloadavg()
    print(f"load average after parts 1-2: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
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
