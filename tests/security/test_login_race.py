"""The login limit holds under simultaneous guesses (clues_http/ratelimit.py).

Counting failures after the password check let 30 simultaneous wrong passwords for one user get
15 checks against a limit of 10: each request passed the gate before any had been counted. The
limiter now reserves each check with an atomic increment before the password is looked at. Here
30 browsers post a wrong password for one researcher at once against a live, threaded server; a
password-checking backend counts the checks actually made.
"""

from __future__ import annotations

import re
import secrets
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import httpx
import pytest
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import User
from django.core.cache import cache
from django.core.handlers.wsgi import WSGIHandler
from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler

from clues_http import ratelimit
from tests.security.redis_cache import redis_url

LIMIT = 5
GUESSES = 30


class CountingBackend(ModelBackend):
    """ModelBackend that counts its password checks, each made slow (a real hash takes a while)."""

    checks = 0
    lock = threading.Lock()

    def authenticate(self, request, username=None, password=None, **kwargs):
        with self.lock:
            type(self).checks += 1
        time.sleep(0.3)  # every guess in flight at once, as with a slow hash under load
        return super().authenticate(request, username=username, password=password, **kwargs)


def _caches(kind: str) -> dict:
    if kind == "redis":
        url = redis_url()
        if url is None:
            pytest.skip("no Redis at CACHE_URL / REDIS_URL / 127.0.0.1:6379")
        return {
            "default": {
                "BACKEND": "django.core.cache.backends.redis.RedisCache",
                "LOCATION": url,
                "KEY_PREFIX": f"test-race-{secrets.token_hex(4)}",
            }
        }
    return {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "login-race"}}


@pytest.fixture
def counting(settings, request, monkeypatch):
    # The limits count in fixed windows of the wall clock: a test that crossed a window's end started counting
    # afresh (it failed so once). The rate limiter's clock stands still here.
    now = time.time()
    monkeypatch.setattr(ratelimit, "time", SimpleNamespace(time=lambda: now))
    settings.CACHES = _caches(request.param)
    if request.param == "locmem":
        cache.clear()  # never clear a shared Redis: the Redis case counts under a key prefix of its own
    settings.LOGIN_RATE_LIMIT = f"{LIMIT}/15m"
    settings.AUTHENTICATION_BACKENDS = [
        "clues_http.ratelimit.LoginRateLimitBackend",
        "tests.security.test_login_race.CountingBackend",
    ]
    CountingBackend.checks = 0
    yield
    if request.param == "locmem":
        cache.clear()


class WideServer(ThreadedWSGIServer):
    request_queue_size = 64  # Django's test server listens with a backlog of 10: 30 connects at once overflow it


@pytest.fixture
def server(transactional_db, settings):
    """A threaded HTTP server on 127.0.0.1 (live_server's, with room for every simultaneous connection)."""
    settings.ALLOWED_HOSTS = ["127.0.0.1"]
    httpd = WideServer(("127.0.0.1", 0), WSGIRequestHandler)
    httpd.set_app(WSGIHandler())
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_port}"
    httpd.shutdown()
    httpd.server_close()
    thread.join(10)


def _login_form(base: str) -> tuple[dict, str]:
    page = httpx.get(f"{base}/accounts/login/", timeout=30)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    return dict(page.cookies), token


@pytest.mark.parametrize("counting", ["locmem", "redis"], indirect=True)
def test_simultaneous_wrong_passwords_get_no_more_checks_than_the_limit(counting, server):
    User.objects.create_user("rita", password="pw-rita-123")
    cookies, token = _login_form(server)
    start = threading.Barrier(GUESSES)

    def guess(n: int) -> int:
        with httpx.Client(cookies=cookies, timeout=120) as client:
            start.wait()
            return client.post(
                f"{server}/accounts/login/",
                data={"csrfmiddlewaretoken": token, "username": "rita", "password": f"guess-{n}"},
                headers={"Referer": f"{server}/accounts/login/"},
            ).status_code

    with ThreadPoolExecutor(GUESSES) as pool:
        codes = list(pool.map(guess, range(GUESSES)))
    assert set(codes) <= {200, 429}, codes  # the form with its error, or too many
    # At most the limit (fewer is possible: the username's and the address's counts are two increments, and a
    # guess can get a place under one limit and not under the other).
    checks = CountingBackend.checks
    assert 1 <= checks <= LIMIT, f"{checks} password checks for a limit of {LIMIT}"
    assert codes.count(200) == checks  # every other guess: 429 with its message
    # The limit holds afterwards, even for the right password; nothing more was checked.
    with httpx.Client(cookies=cookies, timeout=60) as client:
        right = client.post(
            f"{server}/accounts/login/",
            data={"csrfmiddlewaretoken": token, "username": "rita", "password": "pw-rita-123"},
        )
    assert right.status_code == 429 and CountingBackend.checks == checks


@pytest.mark.parametrize("counting", ["locmem"], indirect=True)
def test_successful_logins_give_their_reservation_back(counting, client, db):
    User.objects.create_user("rita", password="pw-rita-123")
    for _ in range(LIMIT * 2):  # more right logins than the limit: none counts
        assert client.post("/accounts/login/", {"username": "rita", "password": "pw-rita-123"}).status_code == 302
        client.logout()
    for _ in range(LIMIT):
        assert client.post("/accounts/login/", {"username": "rita", "password": "wrong"}).status_code == 200
    assert client.post("/accounts/login/", {"username": "rita", "password": "pw-rita-123"}).status_code == 429
    assert CountingBackend.checks == 3 * LIMIT
