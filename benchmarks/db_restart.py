#!/usr/bin/env python
"""Fault test: PostgreSQL stopped and started again in the middle of a load run.

    .venv/bin/python benchmarks/db_restart.py [--workers 50] [--answers 40] [--think 0.5] [--after 5] [--down 5]

It starts gunicorn with production settings (benchmarks/load.py's Server) and simulated workers
that retry while the platform is unavailable (a 502/503/504 or no connection, with backoff), as a
worker's browser or a crowd platform's client would. ``--after`` seconds into the run it stops
the cluster (``pg_ctlcluster --skip-systemctl-redirect <version> main stop``: fast shutdown, every
connection cut), waits ``--down`` seconds, and starts it again. PostgreSQL is ALWAYS started again,
whatever happens to the script.

It prints, for the whole run: the responses by status (503s while the database is down, never a
500), the connection errors, what a 503 says, the recovery time (from PostgreSQL accepting
connections again to the first answer stored), and the integrity check: every acknowledged answer
is stored, once. Exit status 1 when a 500 was served or an acknowledged answer is missing.

Stopping PostgreSQL interrupts everything else using it on this machine for those seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import httpx
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.load import Server, Stats, integrity, run_workers


def cluster() -> list[str]:
    versions = sorted(os.listdir("/etc/postgresql"))
    if not versions:
        raise SystemExit("no PostgreSQL cluster under /etc/postgresql")
    return [versions[-1], "main"]


def pg_ctl(action: str) -> None:
    subprocess.run(
        ["pg_ctlcluster", "--skip-systemctl-redirect", *cluster(), action],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )


def pg_ready(url: str) -> bool:
    try:
        with psycopg.connect(url, connect_timeout=1) as conn:
            conn.execute("SELECT 1")
        return True
    except psycopg.Error:
        return False


async def outage(server: Server, *, after: float, down: float, timeline: dict) -> None:
    await asyncio.sleep(after)
    timeline["stop"] = time.monotonic()
    await asyncio.to_thread(pg_ctl, "stop")
    timeline["stopped"] = time.monotonic()
    await asyncio.sleep(down)
    timeline["start"] = time.monotonic()
    await asyncio.to_thread(pg_ctl, "start")
    while not await asyncio.to_thread(pg_ready, f"{server.pg}/postgres"):
        await asyncio.sleep(0.05)
    timeline["ready"] = time.monotonic()


async def probe(server: Server, join_path: str, timeline: dict, seen: dict) -> None:
    """A worker's browser polling its API and its page every 100 ms: what a 503 looks like, when it ends."""
    async with httpx.AsyncClient(base_url=server.base_url, timeout=10) as client:
        await client.get(join_path, params={"PROLIFIC_PID": "f" * 24, "SESSION_ID": "probe"})
        while "ready" not in timeline or time.monotonic() < timeline["ready"] + 3:
            for path in ("/api/work/current/", "/work/"):
                try:
                    response = await client.get(path)
                except httpx.TransportError:
                    continue
                if response.status_code == 503:
                    seen.setdefault(
                        path,
                        (
                            response.headers.get("content-type"),
                            response.headers.get("retry-after"),
                            response.text[:200],
                        ),
                    )
                elif response.status_code == 200 and "ready" in timeline and path == "/api/work/current/":
                    seen.setdefault("back", time.monotonic())
            await asyncio.sleep(0.1)


async def run(server: Server, join_path: str, args, stats: Stats, timeline: dict, seen: dict) -> None:
    async with asyncio.TaskGroup() as group:
        group.create_task(
            run_workers(
                server,
                join_path,
                workers=args.workers,
                answers=args.answers,
                think=args.think,
                prefix="fa",
                retry_unavailable=True,
                stats=stats,
                ramp=1.0,
            )
        )
        group.create_task(outage(server, after=args.after, down=args.down, timeline=timeline))
        group.create_task(probe(server, join_path, timeline, seen))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=50)
    parser.add_argument("--answers", type=int, default=40)
    parser.add_argument("--think", type=float, default=0.5, help="mean seconds before each answer (default 0.5)")
    parser.add_argument("--after", type=float, default=5.0, help="seconds of load before the stop (default 5)")
    parser.add_argument("--down", type=float, default=5.0, help="seconds PostgreSQL stays down (default 5)")
    parser.add_argument("--port", type=int, default=8643)
    args = parser.parse_args()

    # A SIGTERM (or Ctrl-C) still runs the finally block below, which starts PostgreSQL again.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    server = Server(db_name="clues_bench_fault", port=args.port)
    server.log_file = server.tmp / "server.log"
    join_path = server.prepare(task="sst2", shots=10, workers=args.workers + 10)
    stats = Stats()
    timeline: dict[str, float] = {}  # stop, stopped, start, ready: monotonic seconds
    seen: dict = {}  # path -> its first 503 (content type, Retry-After, text); "back" -> when it answered again
    server.start()
    try:
        print(
            f"db restart: {args.workers} workers, {args.answers} answers each, {args.think:g} s think time; "
            f"PostgreSQL stopped after {args.after:g} s for {args.down:g} s; {server.describe()}",
            flush=True,
        )
        asyncio.run(run(server, join_path, args, stats, timeline, seen))
    finally:
        if not pg_ready(f"{server.pg}/postgres"):
            try:
                pg_ctl("start")
            except subprocess.CalledProcessError as exc:
                print(f"!! could not start PostgreSQL again: {exc.stderr}", file=sys.stderr)
        stored = server.stored_answers() if pg_ready(f"{server.pg}/postgres") else Counter()
        log = server.log_file.read_text(errors="replace").splitlines() if server.log_file.exists() else []
        server.stop()

    statuses: Counter = Counter()
    for (_, status), n in stats.statuses.items():
        statuses[status] += n
    by_status = ", ".join(f"{k}: {v}" for k, v in sorted(statuses.items(), key=lambda kv: str(kv[0])))
    served_500 = sum(n for status, n in statuses.items() if isinstance(status, int) and status >= 500 and status != 503)
    unavailable = statuses.get(503, 0)
    connection_errors = sum(n for status, n in statuses.items() if not isinstance(status, int))
    ok, text = integrity(stats, stored, "fa")
    ready = timeline.get("ready")
    first_ok = next(
        (t for t, kind, status in stats.events if ready and t >= ready and kind == "answer" and status == 201), None
    )
    last_503 = max((t for t, _, status in stats.events if status == 503), default=None)
    print(
        f"\nPostgreSQL down for {timeline['ready'] - timeline['stop']:.1f} s (stopping took "
        f"{timeline['stopped'] - timeline['stop']:.1f} s, starting {timeline['ready'] - timeline['start']:.1f} s)"
    )
    print(f"responses        {by_status}")
    print(f"503 (unavailable, retried)   {unavailable}")
    print(f"500 (server error)           {served_500}")
    print(f"connection errors            {connection_errors}")
    if first_ok is not None:
        print(f"recovery         first answer stored {1000 * (first_ok - ready):.0f} ms after PostgreSQL was back")
    if "back" in seen:
        print(f"                 the polling browser's first 200 {1000 * (seen['back'] - ready):.0f} ms after")
    if last_503 is not None and ready:
        print(f"                 last 503 {1000 * (last_503 - ready):+.0f} ms from PostgreSQL being back")
    for path in ("/api/work/current/", "/work/"):
        if path in seen:
            content_type, retry_after, body = seen[path]
            print(f"a 503 of {path:19s} {content_type}, Retry-After {retry_after}: {body!r}")
    outage_lines = [line for line in log if "database unavailable" in line]
    print(
        f"server log       {len(log)} lines, {len(outage_lines)} of them one-line 503 records, "
        f"{sum('Traceback' in line for line in log)} tracebacks; e.g. {outage_lines[0] if outage_lines else '-'}"
    )
    print(f"errors           {len(stats.errors)} {stats.errors[:3]}")
    print(f"integrity        {text}")
    checks = [
        ("no 500", served_500 == 0),
        ("503s while down", unavailable > 0 and len(seen) >= 2),
        ("every acknowledged answer stored once", ok),
        ("recovered", first_ok is not None),
        ("every worker finished", not stats.errors),
    ]
    print("checks           " + ", ".join(f"[{'met' if good else 'MISSED'}] {name}" for name, good in checks))
    return 0 if all(good for _, good in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
