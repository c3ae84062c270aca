"""Through real gunicorn, started with the README's own command: a client's ``X-Forwarded-Proto: https`` (or
``X-Forwarded-Ssl: on``, ``X-Forwarded-Protocol: ssl``) never makes a plain-HTTP request secure unless the
deployment declares a proxy (``TRUSTED_PROXY_HOPS``), and then only the header Django reads (gunicorn.conf.py).

gunicorn believes those headers from 127.0.0.1 by default (``forwarded_allow_ips``), whatever Django's settings
say; the repository's gunicorn.conf.py ties that trust to ``TRUSTED_PROXY_HOPS``.
"""

from __future__ import annotations

import os
import re
import secrets
import shlex
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.newcomer.servers import free_port, stop, wait_for_http

REPO = Path(__file__).resolve().parents[2]
PAGE = "/api/schema/"  # touches no database and needs no collected static files


def readme_gunicorn() -> list[str]:
    """The README's production command, as a newcomer types it (its trailing comment dropped)."""
    readme = (REPO / "README.md").read_text()
    (line,) = [ln for ln in readme.splitlines() if ln.startswith(".venv/bin/gunicorn ")]
    return shlex.split(re.sub(r"\s+#\s.*$", "", line))


@pytest.fixture
def gunicorn(tmp_path):
    """Start the README's gunicorn command (DEBUG=0) on 127.0.0.1 at a free port; yields a starter."""
    started = []

    def start(hops: str) -> str:
        port = free_port()
        command = readme_gunicorn()
        command[0] = str(Path(sys.executable).with_name("gunicorn"))
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("DEBUG", "SECRET_KEY", "ALLOWED_HOSTS", "TRUSTED_PROXY_HOPS", "FORWARDED_ALLOW_IPS")
            and not k.startswith("GUNICORN")
        }
        env.update(
            DEBUG="0",
            SECRET_KEY=secrets.token_urlsafe(50),
            ALLOWED_HOSTS="127.0.0.1",
            DATABASE_URL=f"sqlite:///{tmp_path / 'unused.sqlite3'}",
            TRUSTED_PROXY_HOPS=hops,
        )
        proc = subprocess.Popen(
            [*command, "--bind", f"127.0.0.1:{port}", "--workers", "1"],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        started.append(proc)
        url = f"http://127.0.0.1:{port}"
        wait_for_http(url + PAGE, proc, seconds=60)
        return url

    yield start
    for proc in started:
        stop(proc)


CLAIMS = [
    {"X-Forwarded-Proto": "https"},
    {"X-Forwarded-Ssl": "on"},
    {"X-Forwarded-Protocol": "ssl"},
]


def test_the_readme_command_uses_the_repositorys_gunicorn_conf():
    command = readme_gunicorn()
    assert command[command.index("-c") + 1] == "gunicorn.conf.py" and (REPO / "gunicorn.conf.py").exists()


def test_a_local_clients_forwarded_headers_never_make_plain_http_secure(gunicorn):
    url = gunicorn("0")
    for claim in CLAIMS:
        response = httpx.get(url + PAGE, headers=claim, follow_redirects=False)
        assert response.status_code == 301, (claim, response.status_code)
        assert response.headers["location"].startswith("https://"), claim
        assert "strict-transport-security" not in response.headers, claim


def test_behind_a_declared_proxy_its_x_forwarded_proto_alone_is_trusted(gunicorn):
    url = gunicorn("1")
    secure = httpx.get(url + PAGE, headers={"X-Forwarded-Proto": "https"}, follow_redirects=False)
    assert secure.status_code != 301, "control: the proxy says the client came over HTTPS"
    assert secure.headers["strict-transport-security"].startswith("max-age=")
    for claim in CLAIMS[1:]:  # headers Django does not read: a client could have passed them through the proxy
        response = httpx.get(url + PAGE, headers=claim, follow_redirects=False)
        assert response.status_code == 301, (claim, response.status_code)
    plain = httpx.get(url + PAGE, follow_redirects=False)
    assert plain.status_code == 301 and plain.headers["location"].startswith("https://")
