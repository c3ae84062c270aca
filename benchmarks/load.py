#!/usr/bin/env python
"""Load test: simulated crowdworkers through the real HTTP endpoints, on gunicorn + PostgreSQL + Redis.

    .venv/bin/python benchmarks/load.py [--workers 200] [--think 5] [--answers 30] [--task sst2]

It builds a throwaway database (``clues_bench``), imports the data (CLUES_DATA, else the official zip
beside the repository, else the demo), launches a one-cohort study with room for every simulated
worker, and starts gunicorn with production settings (DEBUG=0, Redis cache and sessions, persistent
connections, prepared statements). Then, in three phases:

1. **realistic**: N workers arrive through their Prolific-style links over ``--ramp`` seconds, then
   fetch the current item and answer it, ``--answers`` times each (training step, then test step),
   pausing ``--think`` seconds on average (uniform 0.5x-1.5x) before each answer. The default, 200
   workers each answering an SST-2 item every 5 s, is a demanding pace: SST-2 is the quickest task
   of CLUES, and careful crowdworkers take longer over a sentence;
2. **saturation**: the same journeys with no pause and no ramp (new workers each time), to measure the platform's
   throughput;
3. **ceiling**: the same number of clients, with no pause, against one DRF view doing one INSERT on
   the same stack (``benchmarks.ceiling``): the most this machine's stack can serve.

Phases 2 and 3 alternate in blocks, platform-ceiling-ceiling-platform (``--rounds`` times), so that a machine
that slows down or speeds up during the run weighs on both alike; the ratio is the platform's requests per second
over all its blocks against the ceiling's over all of its.

It prints requests/s, p50/p95/p99 latency of answer submission, of fetching the current item and of
joining, errors, the CPU time per request of gunicorn, PostgreSQL and the load generator (which
runs on the same machine), the throughput ratio to the ceiling, and an integrity check: answers
acknowledged (201) = answers stored, no duplicates, nothing stored that was not acknowledged.
Exit status 1 when a target is missed (see benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import resource
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psycopg
import redis

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as a script: the handles are computed by the platform's own code
    sys.path.insert(0, str(REPO))
PYTHON = sys.executable
RETRYABLE = {502, 503, 504}


# ---------------------------------------------------------------- the server under test


# --hot-path: the name settings.CLUES_HOT_PATH gives ("orm" is registered by the benchmark's app, installed with
# CLUES_BENCH_CEILING below).
HOT_PATHS = ("sql", "orm")


@dataclass
class Server:
    db_name: str = "clues_bench"
    port: int = 8642
    gunicorn_workers: int = 5
    gunicorn_threads: int = 1  # more than 1: the gthread worker class
    log_file: Path | None = None  # the server's output (default: this terminal)
    pg: str = "postgres://postgres@127.0.0.1:5432"
    cache_url: str = "redis://127.0.0.1:6379/3"
    hot_path: str = "sql"  # the worker's hot path: hand-written SQL or the ORM oracle (settings.CLUES_HOT_PATH)
    proc: subprocess.Popen | None = None
    tmp: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="clues-bench-")))
    secret_key: str = field(default_factory=lambda: secrets.token_urlsafe(50))  # one for every process it starts

    @property
    def database_url(self) -> str:
        return f"{self.pg}/{self.db_name}"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict:
        return {
            **os.environ,
            "DATABASE_URL": self.database_url,
            "DEBUG": "0",
            "SECRET_KEY": self.secret_key,
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            # Plain HTTP on loopback: no TLS redirect, cookies without the Secure flag.
            "SECURE_SSL_REDIRECT": "0",
            "SECURE_COOKIES": "0",
            "STATIC_ROOT": str(self.tmp / "static"),
            "CLUES_BENCH_CEILING": "1",
            "CONN_MAX_AGE": "600",
            # Every simulated worker joins from 127.0.0.1: lift the per-address join limit.
            "JOIN_RATE_LIMIT": "0",
            "LOG_LEVEL": "WARNING",
            # The shared cache production uses (sessions, rate limits); database 3 is the benchmark's own.
            "CACHE_URL": self.cache_url,
            "CLUES_HOT_PATH": self.hot_path,
        }

    def manage(self, *args: str) -> str:
        result = subprocess.run([PYTHON, "manage.py", *args], cwd=REPO, env=self.env(), capture_output=True, text=True)
        if result.returncode:
            raise SystemExit(f"manage.py {' '.join(args)} failed:\n{result.stderr}")
        return result.stdout

    def describe(self) -> str:
        kind = (
            f"{self.gunicorn_workers} gthread workers x {self.gunicorn_threads} threads"
            if self.gunicorn_threads > 1
            else f"{self.gunicorn_workers} sync workers"
        )
        return (
            f"gunicorn {kind}, DEBUG=0, PostgreSQL ({self.db_name}), Redis cache and sessions ({self.cache_url}), "
            f"hot path {self.hot_path}"
        )

    def prepare(self, *, task: str, shots: int, workers: int) -> str:
        """Fresh database, data, one launched study; returns the cohort's join path."""
        with psycopg.connect(f"{self.pg}/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{self.db_name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{self.db_name}"')
        redis.Redis.from_url(self.cache_url).flushdb()  # the benchmark's own Redis database: old sessions, counts
        self.manage("migrate", "--noinput", "-v0")
        data = os.environ.get("CLUES_DATA") or str(REPO.parent / "shared" / "clues" / "CLUES-JSON.zip")
        self.manage("import_clues", data) if Path(data).exists() else self.manage("import_clues", "--demo")
        self.manage("ensure_local_researcher")  # launch_study's default owner
        out = self.manage(
            "launch_study",
            "--name",
            "load benchmark",
            "--tasks",
            task,
            "--shots",
            str(shots),
            "--workers",
            str(workers),
            "--no-filter-fraction",
            "--platform",
            "prolific",
        )
        return next(line.split()[2] for line in out.splitlines() if line.startswith(f"{task} {shots} "))

    def start(self) -> None:
        self.manage("collectstatic", "--noinput", "-v0")
        workers = ["--workers", str(self.gunicorn_workers)]
        if self.gunicorn_threads > 1:
            workers += ["--worker-class", "gthread", "--threads", str(self.gunicorn_threads)]
        log = open(self.log_file, "ab") if self.log_file else None  # the child keeps it; closed at exit
        self.proc = subprocess.Popen(
            [
                PYTHON,
                "-m",
                "gunicorn",
                "clues_platform.wsgi",
                "--bind",
                f"127.0.0.1:{self.port}",
                *workers,
                "--backlog",
                "2048",
                "--log-level",
                "warning",
            ],
            cwd=REPO,
            env=self.env(),
            start_new_session=True,
            stdout=log,
            stderr=log,
        )
        # A loaded machine can take over a minute to import Django in five workers.
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.base_url}/", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        self.stop()  # else gunicorn keeps the port and the next run talks to a stale server
        raise SystemExit("gunicorn did not start within 180 s")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def stored_answers(self) -> Counter:
        """(worker external id, item handle) -> how many rows, read straight from the database; the handle is the
        one the worker was shown and acknowledged (the worker never sees an item's database id)."""
        from annotation.handles import item_handle

        with psycopg.connect(self.database_url) as conn:
            rows = conn.execute(
                "SELECT w.external_id, e.id, a.example_id, count(*) FROM annotation_answer a "
                "JOIN annotation_enrollment e ON e.id = a.enrollment_id "
                "JOIN annotation_worker w ON w.id = e.worker_id GROUP BY 1, 2, 3"
            ).fetchall()
        return Counter(
            {
                (pid, item_handle(enrollment_id=enrollment, item_id=item, secret=self.secret_key)): n
                for pid, enrollment, item, n in rows
            }
        )


# ---------------------------------------------------------------- simulated workers


@dataclass
class Stats:
    latency: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    statuses: Counter = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    acknowledged: set = field(default_factory=set)
    requests: int = 0
    started: float = 0.0
    finished: float = 0.0
    events: list = field(default_factory=list)  # (time.monotonic() at the end, kind, status or exception name)

    def record(self, kind: str, seconds: float, status: int | str) -> None:
        if isinstance(status, int):
            self.latency[kind].append(seconds)
        self.statuses[(kind, status)] += 1
        self.requests += 1
        self.events.append((time.monotonic(), kind, status))


def answer_for(item: dict) -> list:
    """A valid answer to the item as the API shows it (the load test measures the platform, not the worker):
    its first choice where it offers choices (labels, candidates), else "none"."""
    if item.get("labels"):
        return [item["labels"][0]]
    if item.get("candidates"):
        first = item["candidates"][0]
        return [{"start": first["start"], "end": first["end"]}]
    return []  # the answer is marked in the text: "none" is valid there


async def timed(client: httpx.AsyncClient, stats: Stats, kind: str, method: str, url: str, **kw) -> httpx.Response:
    start = time.perf_counter()
    response = await client.request(method, url, **kw)
    stats.record(kind, time.perf_counter() - start, response.status_code)
    return response


async def retrying(client, stats, kind, method, url, *, retry_unavailable: bool, **kw) -> httpx.Response:
    """One request; while the platform is unavailable (503 or no connection) and retrying is on, again."""
    delay = 0.2
    while True:
        try:
            response = await timed(client, stats, kind, method, url, **kw)
        except httpx.TransportError as exc:
            stats.record(kind, 0.0, type(exc).__name__)
            if not retry_unavailable:
                raise
        else:
            if response.status_code not in RETRYABLE or not retry_unavailable:
                return response
        await asyncio.sleep(delay)
        delay = min(delay * 2, 2.0)


async def simulated_worker(
    base_url: str,
    join_path: str,
    pid: str,
    stats: Stats,
    *,
    answers: int,
    think: float,
    rng: random.Random,
    retry_unavailable: bool = False,
    arrive: float = 0.0,
) -> None:
    if arrive:
        await asyncio.sleep(arrive)
    async with httpx.AsyncClient(base_url=base_url, timeout=60, follow_redirects=False) as client:
        params = {"PROLIFIC_PID": pid, "STUDY_ID": "bench", "SESSION_ID": f"s-{pid}"}
        response = await retrying(
            client, stats, "join", "GET", join_path, params=params, retry_unavailable=retry_unavailable
        )
        if response.status_code != 302:
            stats.errors.append(f"{pid}: join answered {response.status_code}")
            return
        headers = {"X-CSRFToken": client.cookies.get("csrftoken", ""), "Referer": base_url}
        for _ in range(answers):
            response = await retrying(
                client, stats, "current", "GET", "/api/work/current/", retry_unavailable=retry_unavailable
            )
            if response.status_code != 200:
                stats.errors.append(f"{pid}: current answered {response.status_code}: {response.text[:120]}")
                return
            state = response.json()
            if state["item"] is None:
                return
            if think:
                await asyncio.sleep(think * rng.uniform(0.5, 1.5))
            item = state["item"]
            response = await retrying(
                client,
                stats,
                "answer",
                "POST",
                "/api/work/answer/",
                headers=headers,
                json={"item": item["id"], "answer": answer_for(item)},
                retry_unavailable=retry_unavailable,
            )
            if response.status_code == 201:
                stats.acknowledged.add((pid, item["id"]))
            elif retry_unavailable and response.status_code == 409:
                continue  # stored by a request whose response was lost in the outage: fetch the next item
            else:
                stats.errors.append(f"{pid}: answer answered {response.status_code}: {response.text[:120]}")
                return


async def ceiling_client(base_url: str, stats: Stats, requests: int) -> None:
    async with httpx.AsyncClient(base_url=base_url, timeout=60) as client:
        for i in range(requests):
            response = await timed(client, stats, "ceiling", "POST", "/bench/ceiling/", json={"value": i})
            if response.status_code != 201:
                stats.errors.append(f"ceiling answered {response.status_code}")


async def run_workers(
    server: Server,
    join_path: str,
    *,
    workers: int,
    answers: int,
    think: float,
    prefix: str,
    seed: int = 0,
    retry_unavailable: bool = False,
    stats: Stats | None = None,
    ramp: float = 0.0,
) -> Stats:
    """``workers`` simulated workers; with ``ramp``, they arrive evenly spread over that many seconds."""
    stats = stats or Stats()
    rng = random.Random(seed)
    stats.started = time.perf_counter()
    await asyncio.gather(
        *(
            # Worker ids are valid Prolific PIDs (24 hexadecimal characters) beginning with the run's prefix.
            simulated_worker(
                server.base_url,
                join_path,
                f"{prefix}{n:0{24 - len(prefix)}x}",
                stats,
                answers=answers,
                think=think,
                rng=random.Random(rng.random()),
                retry_unavailable=retry_unavailable,
                arrive=ramp * n / workers,
            )
            for n in range(workers)
        )
    )
    stats.finished = time.perf_counter()
    return stats


async def run_ceiling(server: Server, *, clients: int, requests: int) -> Stats:
    stats = Stats()
    stats.started = time.perf_counter()
    await asyncio.gather(*(ceiling_client(server.base_url, stats, requests // clients) for _ in range(clients)))
    stats.finished = time.perf_counter()
    return stats


# ---------------------------------------------------------------- reporting


def percentiles(values: list[float]) -> str:
    if len(values) < 2:
        return "n/a"
    q = statistics.quantiles(values, n=100, method="inclusive")
    return f"p50 {1000 * q[49]:6.1f} ms  p95 {1000 * q[94]:6.1f} ms  p99 {1000 * q[98]:6.1f} ms  (n={len(values)})"


def throughput(stats: Stats, kinds=("current", "answer")) -> float:
    count = sum(n for (kind, _), n in stats.statuses.items() if kind in kinds)
    return count / max(stats.finished - stats.started, 1e-9)


def integrity(stats: Stats, stored: Counter, prefix: str) -> tuple[bool, str]:
    mine = Counter({k: n for k, n in stored.items() if k[0].startswith(prefix)})
    duplicates = sum(1 for n in mine.values() if n > 1)
    lost = stats.acknowledged - set(mine)
    unacknowledged = set(mine) - stats.acknowledged
    ok = not duplicates and not lost
    text = (
        f"acknowledged {len(stats.acknowledged)}, stored {sum(mine.values())}, lost {len(lost)}, "
        f"duplicated {duplicates}, stored but not acknowledged {len(unacknowledged)}"
    )
    return ok, text


def error_count(stats: Stats) -> int:
    bad = sum(
        n
        for (kind, status), n in stats.statuses.items()
        if not isinstance(status, int) or status >= 500 or (kind != "join" and status >= 400)
    )
    return bad + len(stats.errors)


# ---------------------------------------------------------------- CPU time per request


def cpu_seconds(pid: int) -> float | None:
    """The CPU seconds (user and system) process ``pid`` of this machine has used; None where ``/proc`` does not
    say (the process is gone, or no ``/proc``)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime
    except (OSError, IndexError, ValueError):
        return None


def cpu_snapshot(server: Server) -> dict[str, float]:
    """CPU seconds used so far by gunicorn's workers, the database's PostgreSQL backends and this process."""
    assert server.proc is not None, "the server is started"
    out = subprocess.run(["pgrep", "-P", str(server.proc.pid)], capture_output=True, text=True).stdout.split()
    try:
        with psycopg.connect(f"{server.pg}/postgres", autocommit=True) as conn:
            backends = [
                r[0]
                for r in conn.execute(
                    "SELECT pid FROM pg_stat_activity WHERE datname = %s", [server.db_name]
                ).fetchall()
            ]
    except psycopg.Error:
        backends = []
    me = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "gunicorn": sum(cpu_seconds(int(p)) or 0.0 for p in out),
        **{f"pg:{p}": cpu_seconds(p) or 0.0 for p in backends},
        "client": me.ru_utime + me.ru_stime,
    }


def cpu_per_request(before: dict, after: dict, requests: int) -> str:
    if not requests:
        return "n/a"
    pg = sum(v - before.get(k, 0.0) for k, v in after.items() if k.startswith("pg:"))
    parts = {
        "gunicorn": after["gunicorn"] - before["gunicorn"],
        "PostgreSQL": pg,
        "load generator": after["client"] - before["client"],
    }
    return ", ".join(f"{name} {1000 * v / requests:.2f} ms" for name, v in parts.items())


def merged(blocks: list[Stats]) -> Stats:
    """The blocks' requests as one phase, its duration the sum of theirs (the time between them not counted)."""
    out = Stats()
    for stats in blocks:
        for kind, values in stats.latency.items():
            out.latency[kind].extend(values)
        out.statuses.update(stats.statuses)
        out.errors.extend(stats.errors)
        out.acknowledged |= stats.acknowledged
        out.requests += stats.requests
        out.finished += stats.finished - stats.started
    return out


def rate(stats: Stats, kind: str) -> float:
    return throughput(stats, ("join", "current", "answer") if kind == "P" else ("ceiling",))


def cpu_of(blocks: list[tuple[Stats, dict, dict]]) -> str:
    """CPU per request over the blocks."""
    total: dict[str, float] = defaultdict(float)
    for _, before, after in blocks:
        for key, value in after.items():
            total[key] += value - before.get(key, 0.0)
    requests = sum(stats.requests for stats, *_ in blocks)
    return cpu_per_request(defaultdict(float), total, requests)


def measured(server: Server, coroutine) -> tuple[Stats, str]:
    before = cpu_snapshot(server)
    stats = asyncio.run(coroutine)
    return stats, cpu_per_request(before, cpu_snapshot(server), stats.requests)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=200, help="simulated workers (default 200)")
    parser.add_argument("--task", default="sst2")
    parser.add_argument("--shots", type=int, default=10)
    parser.add_argument(
        "--answers", type=int, default=30, help="items each worker answers (default 30: 10 training, 20 test)"
    )
    parser.add_argument(
        "--think", type=float, default=5.0, help="mean seconds before each answer in the realistic phase (default 5)"
    )
    parser.add_argument(
        "--ramp", type=float, default=20.0, help="seconds over which the realistic phase's workers arrive (default 20)"
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="platform-ceiling-ceiling-platform groups of saturation blocks (default 1)",
    )
    parser.add_argument("--gunicorn-workers", type=int, default=5)
    parser.add_argument("--gunicorn-threads", type=int, default=1, help="more than 1: gthread workers")
    parser.add_argument("--port", type=int, default=8642)
    parser.add_argument(
        "--hot-path",
        choices=HOT_PATHS,
        default="sql",
        help="the worker's hot path: hand-written SQL (default) or the ORM",
    )
    parser.add_argument("--db-name", default="clues_bench", help="the throwaway database (dropped and re-created)")
    parser.add_argument(
        "--cache-url", default="redis://127.0.0.1:6379/3", help="the Redis database for cache and sessions (flushed)"
    )
    args = parser.parse_args()

    server = Server(
        port=args.port,
        gunicorn_workers=args.gunicorn_workers,
        gunicorn_threads=args.gunicorn_threads,
        hot_path=args.hot_path,
        db_name=args.db_name,
        cache_url=args.cache_url,
    )
    # Room for the realistic phase's workers and every platform block's.
    join_path = server.prepare(task=args.task, shots=args.shots, workers=(1 + 2 * args.rounds) * args.workers)
    server.start()
    try:
        print(
            f"load: {args.workers} simulated workers, {args.task} {args.shots}-shot, {args.answers} answers each; "
            f"{server.describe()}; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at the start",
            flush=True,
        )
        real, real_cpu = measured(
            server,
            run_workers(
                server,
                join_path,
                workers=args.workers,
                answers=args.answers,
                think=args.think,
                prefix="aa",
                ramp=args.ramp,
            ),
        )
        blocks: list[tuple[str, Stats, dict, dict]] = []  # (kind, stats, CPU before, CPU after)
        for kind in "PCCP" * args.rounds:
            before = cpu_snapshot(server)
            if kind == "P":
                prefix = f"b{sum(k == 'P' for k, *_ in blocks):02x}"
                stats = asyncio.run(
                    run_workers(server, join_path, workers=args.workers, answers=args.answers, think=0, prefix=prefix)
                )
            else:
                requests = next((b[1].requests for b in blocks if b[0] == "P"), args.workers * args.answers * 2)
                stats = asyncio.run(run_ceiling(server, clients=args.workers, requests=requests))
            blocks.append((kind, stats, before, cpu_snapshot(server)))
        stored = server.stored_answers()
    finally:
        server.stop()

    ok_real, text_real = integrity(real, stored, "aa")
    platform_blocks = [(stats, before, after) for kind, stats, before, after in blocks if kind == "P"]
    ceiling_blocks = [(stats, before, after) for kind, stats, before, after in blocks if kind == "C"]
    sat, ceiling = merged([b[0] for b in platform_blocks]), merged([b[0] for b in ceiling_blocks])
    sat_cpu, ceiling_cpu = cpu_of(platform_blocks), cpu_of(ceiling_blocks)
    sat_integrity = [integrity(stats, stored, f"b{n:02x}") for n, (stats, *_) in enumerate(platform_blocks)]
    ok_sat = all(ok for ok, _ in sat_integrity)
    text_sat = "; ".join(text for _, text in sat_integrity)
    p99_submit = statistics.quantiles(real.latency["answer"], n=100, method="inclusive")[98]
    platform = throughput(sat, ("join", "current", "answer"))
    ratio = platform / throughput(ceiling, kinds=("ceiling",))
    errors = error_count(real) + error_count(sat) + len(ceiling.errors)
    print(
        f"\n1. realistic: {args.think:g} s mean think time, arrivals over {args.ramp:g} s; "
        f"{real.finished - real.started:.1f} s"
    )
    print(f"   requests/s      {throughput(real, ('join', 'current', 'answer')):8.1f}")
    print(f"   answer submit   {percentiles(real.latency['answer'])}")
    print(f"   current item    {percentiles(real.latency['current'])}")
    print(f"   join            {percentiles(real.latency['join'])}")
    print(f"   CPU per request {real_cpu}")
    print(f"   errors          {error_count(real)}")
    print(f"   integrity       {text_real}")
    print(
        f"\n2. saturation: no think time, all workers at once; {len(platform_blocks)} blocks of {args.workers} new "
        f"workers, {sat.finished - sat.started:.1f} s in all"
    )
    print(
        f"   requests/s      {platform:8.1f}  (join + current item + answer; "
        f"{throughput(sat):.1f} current item + answer)"
    )
    print(f"   answer submit   {percentiles(sat.latency['answer'])}")
    print(f"   current item    {percentiles(sat.latency['current'])}")
    print(f"   join            {percentiles(sat.latency['join'])}")
    print(f"   CPU per request {sat_cpu}")
    print(f"   errors          {error_count(sat)}")
    print(f"   integrity       {text_sat}")
    print(
        f"\n3. ceiling: one DRF view, one INSERT; {len(ceiling_blocks)} blocks, "
        f"{ceiling.finished - ceiling.started:.1f} s in all"
    )
    print(f"   requests/s      {throughput(ceiling, ('ceiling',)):8.1f}")
    print(f"   latency         {percentiles(ceiling.latency['ceiling'])}")
    print(f"   CPU per request {ceiling_cpu}")
    print(f"   errors          {len(ceiling.errors)}")
    print("\nblocks, in order (requests/s)")
    print("   " + "  ".join(f"{kind} {rate(stats, kind):.1f}" for kind, stats, *_ in blocks))
    print("\ntargets")
    checks = [
        (f"zero errors ({errors})", errors == 0),
        ("no lost or duplicated answers", ok_real and ok_sat),
        (f"p99 answer submit < 100 ms under realistic load ({1000 * p99_submit:.1f} ms)", p99_submit < 0.1),
        (f"throughput >= 0.8 x ceiling ({ratio:.2f})", ratio >= 0.8),
    ]
    for text, ok in checks:
        print(f"   [{'met' if ok else 'MISSED'}] {text}")
    return 0 if all(ok for _, ok in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
