import os
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest
from django.db import connection

from baselines import runners
from baselines.models import BaselineRun
from fewshot_models import icl as icl_module
from fewshot_models.backends.openai import OpenAIBackend
from tests.baselines.fake_openai import TOKEN, FakeOpenAI

REPO_ROOT = Path(__file__).resolve().parents[2]
TEST_BROKER = os.environ.get("CLUES_TEST_BROKER", "redis://127.0.0.1:6379/7")


def _redis_client():
    import redis

    client = redis.Redis.from_url(TEST_BROKER, socket_connect_timeout=2)
    try:
        client.ping()
    except redis.exceptions.ConnectionError as exc:
        pytest.skip(f"Redis is not reachable at {TEST_BROKER}: {exc}")
    return client


@pytest.fixture(scope="module")
def demo(django_db_setup, django_db_blocker, demo_path):
    """The bundled demo data, imported once for the module that asks for it (each test rolls back its own
    changes)."""
    from tasks_data.importer import import_release
    from tasks_data.management.commands.import_clues import DEMO_SOURCE
    from tests.conftest import imported_for_module

    with imported_for_module(django_db_blocker, lambda: import_release(demo_path, source=DEMO_SOURCE)) as report:
        yield report


@pytest.fixture
def celery_broker(monkeypatch):
    """Point this process's Celery app at a real Redis broker (not eager) for the test."""
    from clues_platform.celery import app

    # Celery reads the CELERY_BROKER_URL environment variable before its own configuration.
    monkeypatch.setenv("CELERY_BROKER_URL", TEST_BROKER)
    client = _redis_client()
    client.flushdb()
    saved = {k: app.conf.get(k) for k in ("broker_url", "task_always_eager")}
    app.conf.update(broker_url=TEST_BROKER, task_always_eager=False)
    _reset_connections(app)
    yield app
    app.conf.update(**saved)
    _reset_connections(app)
    client.flushdb()


def _reset_connections(app):
    """Drop pooled broker connections so the next send uses the current broker_url."""
    from kombu import pools

    pools.reset()  # closes kombu's global pools and forgets them (a closed pool cannot be reused)
    app._pool = None
    app.amqp._producer_pool = None


@pytest.fixture
def celery_worker_process(celery_broker):
    """A real `celery worker -Q gpu -c 1` on the test database; yields the Popen."""
    db = connection.settings_dict
    if db["ENGINE"] != "django.db.backends.postgresql":
        pytest.skip("the real-worker tests need PostgreSQL (the worker is another process)")
    url = f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    env = {**os.environ, "DATABASE_URL": url, "CELERY_BROKER_URL": TEST_BROKER, "PYTHONUNBUFFERED": "1"}
    log = open(REPO_ROOT / "artifacts" / "celery-worker.log", "w") if (REPO_ROOT / "artifacts").is_dir() else None
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "clues_platform",
            "worker",
            "-Q",
            "gpu",
            "-c",
            "1",
            "--pool",
            "prefork",
            "--loglevel",
            "INFO",
            "--without-heartbeat",
            "--without-gossip",
            "--without-mingle",
        ],
        cwd=REPO_ROOT,
        env=env,
        stdout=log or subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    time.sleep(0.5)
    yield proc
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
    if log:
        log.close()


@pytest.fixture
def fake(monkeypatch):
    """The fake OpenAI-compatible server (a real HTTP server on 127.0.0.1), the client pointed at nothing else and
    retrying at once, and what this process learned of servers forgotten."""
    monkeypatch.setenv("OPENAI_API_KEY", TOKEN)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setattr(OpenAIBackend, "backoff", 0.02)
    monkeypatch.setattr(icl_module, "SERVER_FITS", {})
    with FakeOpenAI() as server:
        yield server


def wait_for(predicate, timeout: float, what: str, interval: float = 0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


@pytest.fixture
def another_runner():
    """A live process that holds a run as its runner would: a sleeping child of this test, and on PostgreSQL the
    run's advisory lock held by another connection (what a runner's connection holds)."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    held = []

    def hold(run_):
        runner = {"pid": child.pid, "host": runners.this_process()["host"], "started": runners._start_ticks(child.pid)}
        BaselineRun.objects.filter(pk=run_.pk).update(status="running", runner=runner)
        if connection.vendor == "postgresql":
            db = connection.settings_dict
            other = psycopg.connect(
                host=db["HOST"] or "127.0.0.1", port=db["PORT"] or 5432, user=db["USER"], dbname=db["NAME"]
            )
            other.execute("SELECT pg_advisory_lock(%s::integer, %s::integer)", (runners._LOCK_SPACE, run_.pk))
            held.append(other)
        return runner

    def let_go():
        for other in held:
            other.close()
        child.kill()
        child.wait(timeout=10)

    try:
        yield child, hold, let_go
    finally:
        let_go()
