"""Production settings (DEBUG=0): secrets only from the environment, HTTPS only, hardening headers on every response.

(`check --deploy` passing is tests/tasks_data/test_project.py.) Settings are fixed when Django starts,
so each check runs a fresh interpreter with a production environment.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PROBE = """
import json, django
django.setup()
from django.conf import settings
from django.test import Client
from django.test.utils import setup_test_environment
setup_test_environment()
client = Client()
plain = client.get("/api/schema/", secure=False)
secure = client.get("/api/schema/", secure=True)
print(json.dumps({
    "plain": [plain.status_code, plain.get("Location", "")],
    "headers": {k: secure.get(k) for k in ("Strict-Transport-Security", "X-Content-Type-Options",
                                           "X-Frame-Options", "Referrer-Policy", "Cross-Origin-Opener-Policy")},
    "settings": {k: getattr(settings, k) for k in ("SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE",
                                                   "SESSION_COOKIE_HTTPONLY", "DEBUG", "JOIN_RATE_LIMIT",
                                                   "LOGIN_RATE_LIMIT", "TRUSTED_PROXY_HOPS")},
    "secret_from_env": settings.SECRET_KEY == __import__("os").environ["SECRET_KEY"],
}))
"""


def production(**extra) -> dict:
    env = {
        k: v
        for k, v in os.environ.items()
        if k
        not in (
            "DEBUG",
            "SECRET_KEY",
            "ALLOWED_HOSTS",
            "SECURE_SSL_REDIRECT",
            "SECURE_COOKIES",
            "JOIN_RATE_LIMIT",
            "LOGIN_RATE_LIMIT",
            "TRUSTED_PROXY_HOPS",
            "DJANGO_ALLOW_ASYNC_UNSAFE",
        )
    }
    env.update(
        DEBUG="0",
        SECRET_KEY=secrets.token_urlsafe(50),
        ALLOWED_HOSTS="testserver",
        DJANGO_SETTINGS_MODULE="clues_platform.settings",
        **extra,
    )
    result = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_production_serves_https_only_with_hardening_headers_and_secure_cookies():
    seen = production()
    assert seen["plain"][0] == 301 and seen["plain"][1].startswith("https://")
    assert seen["headers"] == {
        "Strict-Transport-Security": "max-age=31536000; includeSubDomains; preload",
        "X-Content-Type-Options": "nosniff",
        "X-Frame-Options": "DENY",
        "Referrer-Policy": "same-origin",
        "Cross-Origin-Opener-Policy": "same-origin",
    }
    assert seen["settings"] == {
        "SESSION_COOKIE_SECURE": True,
        "CSRF_COOKIE_SECURE": True,
        "SESSION_COOKIE_HTTPONLY": True,
        "DEBUG": False,
        "JOIN_RATE_LIMIT": "30/m",
        "LOGIN_RATE_LIMIT": "10/15m",
        "TRUSTED_PROXY_HOPS": 0,
    }
    assert seen["secret_from_env"]


def test_the_repository_holds_no_production_secret():
    """The only key in the code is the development one, refused when DEBUG=0 (test_project.py checks the refusal)."""
    settings_py = (REPO / "clues_platform" / "settings.py").read_text()
    assert settings_py.count('SECRET_KEY = "') == 1 and "dev-only-insecure-key" in settings_py
    assert "if not DEBUG:\n        raise ImproperlyConfigured" in settings_py


PROXY_PROBE = """
import json, django
django.setup()
from django.test import Client
from django.test.utils import setup_test_environment
setup_test_environment()
claimed = Client().get("/api/schema/", HTTP_X_FORWARDED_PROTO="https")
print(json.dumps([claimed.status_code, claimed.get("Location", "")]))
"""


def _proxy_probe(hops: str) -> list:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DEBUG", "SECRET_KEY", "ALLOWED_HOSTS", "SECURE_SSL_REDIRECT", "TRUSTED_PROXY_HOPS")
    }
    env.update(
        DEBUG="0",
        SECRET_KEY=secrets.token_urlsafe(50),
        ALLOWED_HOSTS="testserver",
        DJANGO_SETTINGS_MODULE="clues_platform.settings",
        TRUSTED_PROXY_HOPS=hops,
    )
    result = subprocess.run(
        [sys.executable, "-c", PROXY_PROBE], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_x_forwarded_proto_is_trusted_only_behind_a_declared_proxy():
    status, location = _proxy_probe("0")
    assert status == 301 and location.startswith("https://"), "a client's own header does not make HTTP secure"
    status, _ = _proxy_probe("1")
    assert status != 301, "control: behind a trusted proxy its header says the request came over HTTPS"


STATIC_PROBE = """
import json, django
django.setup()
from django.core.management import call_command
from django.templatetags.static import static
from django.test import Client
from django.test.utils import setup_test_environment
call_command("collectstatic", "--noinput", "-v0")
setup_test_environment()
client = Client()
url = static("css/site.css")
plain = client.get(url, secure=True)
gzip = client.get(url, secure=True, HTTP_ACCEPT_ENCODING="gzip")
print(json.dumps({
    "url": url,
    "status": plain.status_code,
    "cache": plain.get("Cache-Control"),
    "encoding": gzip.get("Content-Encoding"),
    "sizes": [int(plain.get("Content-Length", 0)), int(gzip.get("Content-Length", 0))],
}))
"""


def test_production_serves_static_files_hashed_compressed_and_cached_for_a_year(tmp_path):
    """WhiteNoise's compressed manifest storage: a file's URL carries its content's hash, so it may be cached
    for good (far-future, immutable), and it is served compressed to a browser that accepts it."""
    env = {k: v for k, v in os.environ.items() if k not in ("DEBUG", "SECRET_KEY", "ALLOWED_HOSTS")}
    env.update(
        DEBUG="0",
        SECRET_KEY=secrets.token_urlsafe(50),
        ALLOWED_HOSTS="testserver",
        DJANGO_SETTINGS_MODULE="clues_platform.settings",
        STATIC_ROOT=str(tmp_path / "static"),
    )
    result = subprocess.run(
        [sys.executable, "-c", STATIC_PROBE], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    got = json.loads(result.stdout.strip().splitlines()[-1])
    assert got["status"] == 200 and got["url"] != "/static/css/site.css"  # a hashed name
    assert "immutable" in got["cache"] and "max-age=315360000" in got["cache"]
    assert got["encoding"] in ("gzip", "br") and got["sizes"][1] < got["sizes"][0]
