"""One run, one runner: the process that runs a run holds it until it ends, and a second one (another
``run_baselines``, a Celery message delivered twice) leaves it alone, saying who holds it.

On PostgreSQL the hold is a session advisory lock on the run, taken before the run is claimed: the server lets
it go when the holder's connection closes, so a runner that was killed (SIGKILL, a lost machine) frees its runs
at once, wherever it ran. SQLite has no such lock (and one file means one machine): there a run marked running
is held while the process it names is alive on this host (its pid, and the pid's start time, so that a pid
handed out again is not mistaken for the runner).
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Iterator

from django.db import connection

_LOCK_SPACE = 0x434C5545  # "CLUE": the first key of the runs' advisory locks (the run's id is the second)


def _start_ticks(pid: int) -> int | None:
    """When the process started (clock ticks since boot, Linux), or None where that cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return int(f.read().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def this_process() -> dict:
    """What a run records of its runner."""
    return {"pid": os.getpid(), "host": socket.gethostname(), "started": _start_ticks(os.getpid())}


def describe(runner: dict | None) -> str:
    if not runner:
        return "another process"
    return f"process {runner.get('pid')} on {runner.get('host') or 'an unknown host'}"


def held_by_another(runner: dict | None) -> bool:
    """Whether another process still runs the run that names ``runner``, as the claim asks it under the run's row
    lock. On PostgreSQL the hold, taken before the claim, has answered already: a run this process holds is no
    other's. On SQLite: whether the runner is alive."""
    return connection.vendor != "postgresql" and is_alive(runner)


def is_alive(runner: dict | None) -> bool:
    """Whether the process a run names as its runner still runs (SQLite's test; see the module's docstring).
    A runner on another host cannot be seen from here: it counts as alive."""
    if not runner or not isinstance(runner.get("pid"), int):
        return False
    if runner.get("host") != socket.gethostname():
        return True
    pid = runner["pid"]
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, under another user
        pass
    started = runner.get("started")
    return started is None or _start_ticks(pid) in (None, started)


@contextlib.contextmanager
def hold(run_id: int) -> Iterator[bool]:
    """Hold the run for this process while the block runs: yields False when another process holds it (the
    run is then left alone). On SQLite this yields True: the claim checks the runner the run names."""
    if connection.vendor != "postgresql":
        yield True
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s::integer, %s::integer)", [_LOCK_SPACE, run_id])
        (held,) = cursor.fetchone()
    try:
        yield bool(held)
    finally:
        if held and connection.connection is not None:  # a closed connection has let it go already
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s::integer, %s::integer)", [_LOCK_SPACE, run_id])
