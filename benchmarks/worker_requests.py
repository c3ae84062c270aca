#!/usr/bin/env python
"""The worker's two requests in-process: CPU and database round trips per request, against the ceiling's view.

    CLUES_DATA=.../CLUES-JSON.zip .venv/bin/python benchmarks/worker_requests.py [--workers 40] [--answers 12]
        [--db-name clues_requests] [--cache-url redis://127.0.0.1:6379/12] [--profile 30]

It prepares a database as ``benchmarks/load.py`` does (PostgreSQL, the data, one launched SST-2 10-shot study),
then, in this one process, with the settings gunicorn runs (``DEBUG=0``, Redis cache and sessions, persistent
connections, prepared statements), calls the WSGI application itself: ``--workers`` workers join through their
links, then each reads the current item and answers it, ``--answers`` times (training step, then test step). No
HTTP server and no load generator share the CPU, so the figures are the request's own: CPU time per request
(``time.process_time``) of the platform and of the ceiling's one-INSERT view (``benchmarks.ceiling``) on the
same stack, the CPU time of the PostgreSQL backend that served them (its ``/proc`` entry: the database runs on this
machine), and for each kind of request its database round trips (libpq's protocol trace, on the warm-up's
workers: one per ReadyForQuery, BEGIN and COMMIT included) and the backend's CPU. ``--profile N``: the N
functions with the most CPU (cProfile on ``process_time``) of the platform's requests.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import secrets
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.load import Server, answer_for, cpu_seconds  # noqa: E402 - after the path


class Requests:
    """Requests through the WSGI application as gunicorn makes them (an environ, a start_response)."""

    def __init__(self, app, factory):
        self.app, self.factory = app, factory

    def call(self, method: str, path: str, cookies: dict[str, str], body=None) -> tuple[int, bytes, list]:
        extra = {"HTTP_HOST": "127.0.0.1", "SERVER_NAME": "127.0.0.1"}
        if cookies:
            extra["HTTP_COOKIE"] = "; ".join(f"{k}={v}" for k, v in cookies.items())
        if method == "GET":
            environ = self.factory.get(path, **extra).environ
        else:
            extra.update(HTTP_X_CSRFTOKEN=cookies.get("csrftoken", ""), HTTP_REFERER="http://127.0.0.1")
            environ = self.factory.post(path, data=json.dumps(body), content_type="application/json", **extra).environ
        out: dict = {}

        def start_response(status, headers, exc_info=None):
            out["status"], out["headers"] = int(status.split()[0]), headers

        content = b"".join(self.app(environ, start_response))
        return out["status"], content, out["headers"]


def cookies_of(headers: list, jar: dict[str, str]) -> None:
    for name, value in headers:
        if name.lower() == "set-cookie":
            key, _, rest = value.strip().partition("=")
            jar[key] = rest.split(";", 1)[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=40)
    parser.add_argument("--answers", type=int, default=12, help="items each worker answers (default 12)")
    parser.add_argument("--db-name", default="clues_requests", help="the throwaway database (dropped and re-created)")
    parser.add_argument("--cache-url", default="redis://127.0.0.1:6379/12", help="the Redis database (flushed)")
    parser.add_argument("--profile", type=int, default=0, help="print the N functions with the most CPU")
    args = parser.parse_args()

    server = Server(db_name=args.db_name, cache_url=args.cache_url)
    try:
        return measure(server, args)
    finally:
        server.stop()  # its temporary folder (no server was started)


def measure(server: Server, args: argparse.Namespace) -> int:
    join_path = server.prepare(task="sst2", shots=10, workers=3 * args.workers)
    server.manage("collectstatic", "--noinput", "-v0")  # the pages' manifest (STATIC_ROOT: the server's tmp)
    os.environ.update(server.env(), DJANGO_SETTINGS_MODULE="clues_platform.settings")
    from django.db import connection
    from django.test import RequestFactory
    from psycopg import pq

    from clues_platform.wsgi import application  # what gunicorn runs

    requests = Requests(application, RequestFactory())

    def round_trips(call) -> tuple[int, tuple]:
        """``call()``, and the round trips it made: libpq's protocol trace of the connection, one ReadyForQuery from
        the server ending each (BEGIN and COMMIT included)."""
        connection.ensure_connection()
        pgconn = connection.connection.pgconn
        with tempfile.TemporaryFile("w+") as trace:
            pgconn.trace(trace.fileno())
            pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS)
            try:
                result = call()
            finally:
                pgconn.untrace()  # flushes the trace
            trace.seek(0)
            return sum("\tReadyForQuery" in line for line in trace), result

    def joined(prefix: str) -> list[dict[str, str]]:
        jars = []
        for _ in range(args.workers):
            jar: dict[str, str] = {}
            pid = f"{prefix}{secrets.token_hex(11)}"
            query = f"?PROLIFIC_PID={pid}&STUDY_ID=bench&SESSION_ID=s-{pid}"
            status, _, headers = requests.call("GET", join_path + query, jar)
            assert status == 302, f"join answered {status}"
            cookies_of(headers, jar)
            jars.append(jar)
        return jars

    def journeys(jars: list[dict[str, str]], per_kind: dict[str, list[tuple]] | None = None) -> int:
        """Each worker reads and answers, item after item; with ``per_kind``, the round trips of each request and the
        database backend's CPU seconds for it (None where they cannot be read)."""
        backend = Backend(connection) if per_kind is not None else None

        def counted(kind: str, call):
            if per_kind is None or backend is None:
                return call()
            before = backend.now()
            trips, result = round_trips(call)
            after = backend.now()
            per_kind[kind].append((trips, None if before is None or after is None else after - before))
            return result

        count = 0
        for position in range(args.answers):
            for jar in jars:
                status, content, _ = counted("current item", lambda: requests.call("GET", "/api/work/current/", jar))  # noqa: B023
                assert status == 200, content[:200]
                item = json.loads(content)["item"]
                body = {"item": item["id"], "answer": answer_for(item)}
                kind = "answer, last training" if position == 9 else "answer"
                status, content, _ = counted(kind, lambda: requests.call("POST", "/api/work/answer/", jar, body))  # noqa: B023
                assert status == 201, content[:200]
                count += 2
        return count

    per_kind: dict[str, list[tuple]] = defaultdict(list)
    journeys(joined("aa"), per_kind)  # warm (connections, prepared statements, caches), counting round trips
    jars = joined("bb")  # the joins are not measured
    profiler = cProfile.Profile(time.process_time) if args.profile else None
    backend = Backend(connection)
    start = time.process_time()
    if profiler:
        profiler.enable()
    count = journeys(jars)
    if profiler:
        profiler.disable()
    database = backend.seconds()
    platform = (time.process_time() - start) / count, None if database is None else database / count

    ceiling_cpu = ceiling_per_request(requests, count, connection)
    report(args, count, platform, ceiling_cpu, per_kind)
    if profiler:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(args.profile)
        print(out.getvalue())
    return 0


class Backend:
    """The CPU time the PostgreSQL backend of ``connection`` spent since this was made (``/proc/<pid>/stat``: the
    database runs on this machine); None where it cannot be read or the connection was replaced meanwhile."""

    def __init__(self, connection):
        self.connection = connection
        self.pid = self._pid()
        self.start = cpu_seconds(self.pid)

    def now(self) -> float | None:
        """The backend's CPU seconds so far (clock ticks: meaningful summed over many requests)."""
        return cpu_seconds(self.pid)

    def _pid(self) -> int:
        with self.connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            return cursor.fetchone()[0]

    def seconds(self) -> float | None:
        end = self.now()
        if self.start is None or end is None or self._pid() != self.pid:
            return None
        return end - self.start


def ceiling_per_request(requests: Requests, count: int, connection) -> tuple[float, float | None]:
    """CPU seconds per request of the ceiling's one-INSERT view, over ``count`` requests (after 50 to warm it): this
    process's and the database backend's."""

    def ceiling(n: int) -> None:
        for i in range(n):
            status, _, _ = requests.call("POST", "/bench/ceiling/", {}, {"value": i})
            assert status == 201

    ceiling(50)
    backend = Backend(connection)
    start = time.process_time()
    ceiling(count)
    database = backend.seconds()
    return (time.process_time() - start) / count, None if database is None else database / count


def report(args: argparse.Namespace, count: int, platform: tuple, ceiling: tuple, per_kind: dict) -> None:
    print(
        f"{args.workers} workers x {args.answers} items in-process, {count} platform requests, load average "
        f"{os.getloadavg()[0]:.2f}"
    )
    rows = [("CPU per request", platform[0], ceiling[0]), ("PostgreSQL's CPU", platform[1], ceiling[1])]
    if platform[1] is not None and ceiling[1] is not None:
        rows.append(("both", platform[0] + platform[1], ceiling[0] + ceiling[1]))
    for label, mine, theirs in rows:
        if mine is None or theirs is None:
            print(f"{label}: n/a (the database backend's CPU time cannot be read on this machine)")
        else:
            print(f"{label}: platform {1000 * mine:.2f} ms, ceiling {1000 * theirs:.2f} ms (ratio {theirs / mine:.2f})")
    print("database round trips per request (how many requests); PostgreSQL's CPU per request:")
    for kind, records in per_kind.items():
        trips = Counter(t for t, _ in records)
        seconds = [s for _, s in records if s is not None]
        database = f"{1000 * sum(seconds) / len(seconds):.2f} ms" if seconds else "n/a"
        print(f"   {kind:22s} " + ", ".join(f"{t} ({n})" for t, n in sorted(trips.items())) + f"; {database}")


if __name__ == "__main__":
    sys.exit(main())
