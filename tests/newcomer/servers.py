"""A real server on a scratch SQLite file, as a newcomer runs it (`make run`: runserver, no broker, no Redis)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]
PYTHON = sys.executable


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sqlite_env(db_file: Path, **extra: str) -> dict:
    """The environment of a laptop: SQLite (a scratch file), Celery eager, per-process cache, DEBUG on."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE")
    }
    env["DATABASE_URL"] = f"sqlite:///{db_file}"  # the same settings branch as the unset default, on a temp file
    env.update(extra)
    return env


def manage(env: dict, *args: str, timeout: float = 120) -> str:
    result = subprocess.run(
        [PYTHON, "manage.py", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout
    )
    if result.returncode:
        raise AssertionError(f"manage.py {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
    return result.stdout


def wait_for_http(url: str, proc: subprocess.Popen, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the server exited with {proc.returncode} before answering {url}")
        try:
            httpx.get(url, timeout=2)
            return
        except httpx.HTTPError:
            time.sleep(0.2)
    raise AssertionError(f"{url} did not answer within {seconds} s")


def stop(proc: subprocess.Popen) -> None:
    """Stop a server started with start_new_session=True (its whole process group)."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
