"""`manage.py ensure_database` (the first step of `make run`): the README's PostgreSQL block creates its database, and
what it cannot do ends in one line saying what to run, never a traceback. On the suite's PostgreSQL server."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from urllib.parse import urlsplit

import psycopg
import pytest

from tests.newcomer.servers import REPO

SUITE_URL = os.environ.get("DATABASE_URL", "")
pytestmark = pytest.mark.skipif(
    not SUITE_URL.startswith(("postgres://", "postgresql://")),
    reason="needs the suite's PostgreSQL server (DATABASE_URL)",
)


def admin_conninfo() -> str:
    return urlsplit(SUITE_URL)._replace(scheme="postgresql", path="/postgres").geturl()


def url_for(name: str, *, user: str | None = None, port: int | None = None) -> str:
    parts = urlsplit(SUITE_URL)
    netloc = f"{user or parts.username}@{parts.hostname}:{port or parts.port or 5432}"
    return parts._replace(netloc=netloc, path=f"/{name}").geturl()


def ensure(url: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    env["DATABASE_URL"] = url
    return subprocess.run(
        [sys.executable, "manage.py", "ensure_database"], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )


def exists(name: str) -> bool:
    with psycopg.connect(admin_conninfo(), autocommit=True) as conn:
        return conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is not None


@pytest.fixture
def scratch_name():
    name = f"clues_ensure_{uuid.uuid4().hex[:10]}"
    yield name
    with psycopg.connect(admin_conninfo(), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_a_missing_database_is_created_once(scratch_name):
    assert not exists(scratch_name)
    first = ensure(url_for(scratch_name))
    assert first.returncode == 0, first.stderr
    assert f"Created the PostgreSQL database {scratch_name!r}" in first.stdout
    assert exists(scratch_name)
    again = ensure(url_for(scratch_name))
    assert again.returncode == 0 and again.stdout == "", again.stderr  # there already: nothing said, nothing done


def test_a_role_that_cannot_create_gets_the_createdb_command(scratch_name):
    role = f"clues_nocreate_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_conninfo(), autocommit=True) as conn:
        conn.execute(f'CREATE ROLE "{role}" LOGIN NOCREATEDB')
    try:
        result = ensure(url_for(scratch_name, user=role))
    finally:
        with psycopg.connect(admin_conninfo(), autocommit=True) as conn:
            conn.execute(f'DROP ROLE "{role}"')
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert f"The database {scratch_name!r} does not exist" in result.stderr
    assert f"createdb -h {urlsplit(SUITE_URL).hostname}" in result.stderr
    assert f"-O {role} {scratch_name}" in result.stderr
    assert not exists(scratch_name)


def test_a_server_that_does_not_answer_says_so(scratch_name):
    with __import__("socket").socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = ensure(url_for(scratch_name, port=port))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert f"PostgreSQL at {urlsplit(SUITE_URL).hostname}:{port} does not accept the connection" in result.stderr
    assert "service postgresql start" in result.stderr
