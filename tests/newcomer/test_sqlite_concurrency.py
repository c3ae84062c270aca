"""The embedded default (SQLite, `make run`'s runserver) holds a small lab study: 20 workers answering at once.

The suite runs on PostgreSQL, so this test starts its own server on a scratch SQLite file, with the settings a
newcomer gets (no DATABASE_URL to PostgreSQL, no broker, no Redis), and drives it over HTTP from 20 threads.
Before WAL + IMMEDIATE transactions + a busy timeout (clues_platform/settings.py), two simultaneous workers
were enough for "database is locked" 500s.
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import threading
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from clues_platform.errors import BUSY
from tests.newcomer.servers import PYTHON, REPO, free_port, manage, sqlite_env, stop, wait_for_http

pytestmark = pytest.mark.slow

WORKERS = 20
ANSWERS = 5  # per worker, after all have joined


@pytest.fixture(scope="module")
def prepared(tmp_path_factory) -> Path:
    """A SQLite file as `make run` leaves it: migrated, the demo data, the local researcher (made once, copied)."""
    tmp = tmp_path_factory.mktemp("sqlite-prepared")
    env = sqlite_env(tmp / "db.sqlite3")
    manage(env, "migrate", "--noinput", "-v0")
    manage(env, "import_clues", "--demo")
    manage(env, "ensure_local_researcher", "--password-file", str(tmp / "researcher-password"))  # the study's owner
    return tmp / "db.sqlite3"


@contextmanager
def lab_server(tmp, prepared: Path, workers: int, **env_extra):
    """The prepared database, one launched SST-2 zero-shot cohort, then runserver (as `make run`) on a free port."""
    db = tmp / "db.sqlite3"
    shutil.copyfile(prepared, db)  # its last connection closed: the write-ahead log is in the file
    env = sqlite_env(db, **env_extra)
    if env.get("DEBUG") == "0":  # production serves the collected, hashed static files
        env["STATIC_ROOT"] = str(tmp / "static")
        manage(env, "collectstatic", "--noinput", "-v0")
    out = manage(
        env,
        "launch_study",
        "--name",
        "lab",
        "--tasks",
        "sst2",
        "--shots",
        "0",
        "--workers",
        str(workers),
        "--no-filter-fraction",
        "--platform",
        "prolific",
    )
    join_path = next(line.split()[2] for line in out.splitlines() if line.startswith("sst2 0 "))
    port = free_port()
    log = open(tmp / "server.log", "wb")  # closed below
    proc = subprocess.Popen(
        [PYTHON, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for_http(base + "/", proc)
        yield base, join_path, db, tmp / "server.log"
    finally:
        stop(proc)
        log.close()


@pytest.fixture(scope="module")
def sqlite_server(tmp_path_factory, prepared):
    with lab_server(tmp_path_factory.mktemp("sqlite-lab"), prepared, WORKERS, DEBUG="1") as server:
        yield server


def _worker(base: str, join_path: str, pid: str, barrier: threading.Barrier, results: dict) -> None:
    statuses: list[int | str] = []
    acknowledged = []
    with httpx.Client(base_url=base, timeout=60) as client:
        try:
            r = client.get(join_path, params={"PROLIFIC_PID": pid, "STUDY_ID": "lab", "SESSION_ID": f"s-{pid}"})
            statuses.append(r.status_code)
            headers = {"X-CSRFToken": client.cookies.get("csrftoken", ""), "Referer": base}
            barrier.wait(timeout=60)  # every worker answers at the same moment
            for _ in range(ANSWERS):
                state = client.get("/api/work/current/")
                statuses.append(state.status_code)
                item = state.json()["item"]
                r = client.post(
                    "/api/work/answer/", headers=headers, json={"item": item["id"], "answer": [item["labels"][0]]}
                )
                statuses.append(r.status_code)
                if r.status_code == 201:
                    acknowledged.append(item["id"])
                else:
                    statuses.append(f"{r.status_code}: {r.text[:200]}")
        except Exception as exc:  # noqa: BLE001 (reported below, with the worker)
            statuses.append(f"{type(exc).__name__}: {exc}")
    results[pid] = (statuses, acknowledged)


def test_twenty_workers_answer_at_once_on_sqlite_without_an_error(sqlite_server):
    base, join_path, db, log = sqlite_server
    barrier = threading.Barrier(WORKERS)
    results: dict = {}
    # each worker a valid Prolific PID (24 hexadecimal characters)
    threads = [
        threading.Thread(target=_worker, args=(base, join_path, f"{i:024x}", barrier, results)) for i in range(WORKERS)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=180)

    statuses = Counter(s for statuses, _ in results.values() for s in statuses)
    unexpected = {s: n for s, n in statuses.items() if s not in (200, 201, 302)}
    assert len(results) == WORKERS
    assert not unexpected, f"errors under {WORKERS} concurrent workers: {unexpected}\n{log.read_text()[-3000:]}"
    assert statuses[302] == WORKERS  # every join redirected to /work/
    assert statuses[201] == WORKERS * ANSWERS

    # Every acknowledged answer is stored exactly once (read straight from the file).
    with sqlite3.connect(db) as conn:
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
        rows = conn.execute(
            "SELECT w.external_id, a.example_id, count(*) FROM annotation_answer a "
            "JOIN annotation_enrollment e ON e.id = a.enrollment_id "
            "JOIN annotation_worker w ON w.id = e.worker_id GROUP BY 1, 2"
        ).fetchall()
    assert mode == "wal"
    assert sum(n for *_, n in rows) == WORKERS * ANSWERS
    assert all(n == 1 for *_, n in rows)
    stored = Counter(pid for pid, _, _ in rows)
    assert stored == {pid: len(ack) for pid, (_, ack) in results.items()}


def test_a_database_locked_too_long_answers_503_saying_so_and_the_answer_goes_through_after(tmp_path, prepared):
    """Production settings (DEBUG=0, the error handlers), a 1-second lock wait and a writer that holds the lock."""
    env = {
        "DEBUG": "0",
        "SECRET_KEY": "x" * 50,
        "ALLOWED_HOSTS": "127.0.0.1",
        "SECURE_SSL_REDIRECT": "0",
        "SECURE_COOKIES": "0",
        "SQLITE_TIMEOUT": "1",
        "JOIN_RATE_LIMIT": "0",
    }
    with (
        lab_server(tmp_path, prepared, 1, **env) as (base, join_path, db, log),
        httpx.Client(base_url=base, timeout=30) as c,
    ):
        assert c.get(join_path, params={"PROLIFIC_PID": "b" * 24, "SESSION_ID": "s1"}).status_code == 302
        headers = {"X-CSRFToken": c.cookies.get("csrftoken", ""), "Referer": base}
        item = c.get("/api/work/current/").json()["item"]
        answer = {"item": item["id"], "answer": [item["labels"][0]]}

        holder = sqlite3.connect(db, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")  # another writer keeps the lock past the 1-second wait
        try:
            api = c.post("/api/work/answer/", headers=headers, json=answer)
            page = c.post("/work/answer/", headers=headers, data={"item": item["id"], "label": item["labels"][0]})
        finally:
            holder.rollback()
            holder.close()
        assert api.status_code == 503 and api.headers["Retry-After"] == "5"
        assert api.json() == {"detail": BUSY}
        assert page.status_code == 503 and BUSY in page.text and "Traceback" not in page.text

        again = c.post("/api/work/answer/", headers=headers, json=answer)
        assert again.status_code == 201, again.text
        with sqlite3.connect(db) as conn:
            assert conn.execute("SELECT count(*) FROM annotation_answer").fetchone()[0] == 1
