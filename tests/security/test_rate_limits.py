"""Rate limits (clues_http/ratelimit.py): the join link per client address, failed logins per address and per
username; join tokens are unguessable.

The limits are counted in the Django cache; in production that is Redis (CACHE_URL / REDIS_URL), shared
by all gunicorn processes: the last test checks the counts through a second, independent Redis client.
"""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth import authenticate
from django.core.cache import cache
from django.core.exceptions import ImproperlyConfigured
from django.test import Client, RequestFactory

from annotation.models import Cohort, Enrollment, new_join_token
from clues_http import ratelimit
from clues_http.ratelimit import Rate, parse_rate
from tests.annotation.factories import cohort, make_study, pid_for, prolific
from tests.security.redis_cache import redis_url

pytestmark = [pytest.mark.django_db]

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def fresh_counts(settings):
    """Counts in a cache of their own, empty (never clear a shared Redis the run may be configured with)."""
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "rate-limit-tests"}
    }
    cache.clear()
    yield
    cache.clear()


def test_rates_parse_and_bad_ones_are_refused():
    assert parse_rate("30/m") == Rate(30, 60)
    assert parse_rate("10/15m") == Rate(10, 900)
    assert parse_rate(" 5 / s ") == Rate(5, 1)
    assert parse_rate("100/h") == Rate(100, 3600) and parse_rate("1000/d") == Rate(1000, 86400)
    assert parse_rate("0") is None and parse_rate("") is None and parse_rate(None) is None
    for bad in ("30", "abc", "30/x", "-1/m", "0/m", "1.5/m"):
        with pytest.raises(ImproperlyConfigured):
            parse_rate(bad)
    # At start-up, a bad value stops the project with a message.
    env = {k: v for k, v in os.environ.items() if k not in ("DEBUG", "JOIN_RATE_LIMIT")}
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**env, "JOIN_RATE_LIMIT": "lots"},
        timeout=120,
    )
    assert result.returncode != 0 and "JOIN_RATE_LIMIT='lots' is not a rate" in result.stderr


def test_production_limits_are_on_by_default():
    env = {k: v for k, v in os.environ.items() if not k.endswith("RATE_LIMIT") and k != "DEBUG"}
    code = "from django.conf import settings; print(settings.JOIN_RATE_LIMIT, settings.LOGIN_RATE_LIMIT)"
    result = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {code}"],
        cwd=REPO,
        text=True,
        capture_output=True,
        timeout=120,
        env={
            **env,
            "DEBUG": "0",
            "SECRET_KEY": secrets.token_urlsafe(50),
            "ALLOWED_HOSTS": "x.org",
            "DJANGO_SETTINGS_MODULE": "clues_platform.settings",
        },
    )
    assert result.stdout.split() == ["30/m", "10/15m"], result.stderr


# ---------------------------------------------------------------- the join link


@pytest.mark.usefixtures("clues")
def test_the_join_link_is_limited_per_client_address(settings):
    settings.JOIN_RATE_LIMIT = "3/m"
    sst0 = cohort(make_study(shots=[0], workers_per_cohort=20), "sst2", 0)
    for n in range(3):
        assert Client().get(sst0.join_path, prolific(f"P{n}")).status_code == 302
    refused = Client().get(sst0.join_path, prolific("P3"))
    assert refused.status_code == 429
    assert "too many attempts" in refused.content.decode() and 1 <= int(refused["Retry-After"]) <= 60
    assert not Enrollment.objects.filter(worker__external_id=pid_for("P3")).exists()
    # Bad tokens count too (guessing links costs the same), and another address is not affected.
    assert Client().get("/join/guess/", prolific("P4")).status_code == 429
    other = Client(REMOTE_ADDR="10.0.0.2")
    assert other.get(sst0.join_path, prolific("P5")).status_code == 302
    # "0" turns the limit off.
    settings.JOIN_RATE_LIMIT = "0"
    assert Client().get(sst0.join_path, prolific("P6")).status_code == 302


@pytest.mark.usefixtures("clues")
def test_forwarded_addresses_count_only_behind_trusted_proxies(settings):
    settings.JOIN_RATE_LIMIT = "2/m"
    sst0 = cohort(make_study(shots=[0], workers_per_cohort=20), "sst2", 0)
    # No trusted proxy: X-Forwarded-For is the client's word and is ignored; spoofing it does not escape the limit.
    codes = [
        Client(HTTP_X_FORWARDED_FOR=f"203.0.113.{n}").get(sst0.join_path, prolific(f"S{n}")).status_code
        for n in range(3)
    ]
    assert codes == [302, 302, 429]
    # Behind one trusted proxy (REMOTE_ADDR is the proxy), the address it saw is the client's.
    settings.TRUSTED_PROXY_HOPS = 1
    request = RequestFactory().get("/", HTTP_X_FORWARDED_FOR="198.51.100.7, 203.0.113.9", REMOTE_ADDR="10.0.0.1")
    assert ratelimit.client_address(request) == "203.0.113.9"
    settings.TRUSTED_PROXY_HOPS = 2
    assert ratelimit.client_address(request) == "198.51.100.7"
    settings.TRUSTED_PROXY_HOPS = 3  # fewer addresses than proxies: the direct peer
    assert ratelimit.client_address(request) == "10.0.0.1"


def test_join_tokens_are_unguessable():
    tokens = {new_join_token() for _ in range(2000)}
    assert len(tokens) == 2000
    assert all(len(t) == 32 and re.fullmatch(r"[A-Za-z0-9_-]+", t) for t in tokens)  # 24 random bytes, 192 bits
    field = Cohort._meta.get_field("join_token")
    assert field.default is new_join_token and field.unique and not field.editable


# ---------------------------------------------------------------- logins


@pytest.fixture
def login_limit(settings):
    settings.LOGIN_RATE_LIMIT = "3/15m"


def post_login(path, username, password, address="127.0.0.1"):
    return Client(REMOTE_ADDR=address).post(path, {"username": username, "password": password})


@pytest.mark.usefixtures("login_limit")
@pytest.mark.parametrize("path", ["/accounts/login/", "/admin/login/"])
def test_failed_logins_are_limited_per_address(path, superuser):
    for n in range(3):
        assert post_login(path, f"someone{n}", "wrong").status_code == 200  # the form, with its error
    blocked = post_login(path, "root", "pw-root-123")  # even the right password, from this address
    assert blocked.status_code == 429 and "Too many failed logins" in blocked.content.decode()
    assert 1 <= int(blocked["Retry-After"]) <= 900
    assert post_login(path, "root", "pw-root-123", address="10.9.9.9").status_code == 302  # another address


@pytest.mark.usefixtures("login_limit")
def test_failed_logins_are_limited_per_username_from_any_address(researcher):
    for n in range(3):
        post_login("/accounts/login/", "Rita", "guess", address=f"10.0.0.{n}")  # the name, in any case
    assert post_login("/accounts/login/", "rita", "pw-rita-123", address="10.0.1.1").status_code == 429
    assert post_login("/admin/login/", "rita", "pw-rita-123", address="10.0.1.2").status_code == 429
    # Any other way of checking a password is refused too while the limit holds (the authentication backend).
    request = RequestFactory().post("/api/anything/", REMOTE_ADDR="10.0.1.3")
    assert authenticate(request, username="rita", password="pw-rita-123") is None
    # Other users are not affected; a successful login does not count.
    assert post_login("/accounts/login/", "root-less", "x", address="10.0.2.1").status_code == 200


@pytest.mark.usefixtures("login_limit")
def test_logins_below_the_limit_work_and_zero_turns_it_off(researcher, settings):
    assert post_login("/accounts/login/", "rita", "nope").status_code == 200
    assert post_login("/accounts/login/", "rita", "pw-rita-123").status_code == 302
    settings.LOGIN_RATE_LIMIT = "0"
    for _ in range(5):
        post_login("/accounts/login/", "rita", "nope")
    assert post_login("/accounts/login/", "rita", "pw-rita-123").status_code == 302


# ---------------------------------------------------------------- shared across processes


@pytest.mark.usefixtures("clues")
def test_counts_live_in_the_shared_cache(settings):
    url = redis_url()
    if url is None:
        pytest.skip("no Redis at CACHE_URL / REDIS_URL / 127.0.0.1:6379")
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": url,
            "KEY_PREFIX": f"test-{secrets.token_hex(4)}",
        }
    }
    settings.JOIN_RATE_LIMIT = "2/m"
    sst0 = cohort(make_study(shots=[0], workers_per_cohort=20), "sst2", 0)
    assert Client(REMOTE_ADDR="192.0.2.1").get(sst0.join_path, prolific("R1")).status_code == 302
    # What another gunicorn process sees: its own connection to the same Redis.
    from django.core.cache.backends.redis import RedisCache

    prefix = settings.CACHES["default"]["KEY_PREFIX"]
    other_process = RedisCache(url, {"KEY_PREFIX": prefix})
    stored = other_process._cache.get_client().keys(f"{prefix}:*ratelimit:join*")
    assert len(stored) == 1
    key = stored[0].decode().split(":", 2)[2]  # without the prefix and version Django adds
    assert other_process.get(key) == 1
    other_process.incr(key)  # that process counts a request of the same address
    assert Client(REMOTE_ADDR="192.0.2.1").get(sst0.join_path, prolific("R2")).status_code == 429
    other_process.delete(key)


@pytest.mark.usefixtures("clues")
def test_a_cache_failure_lets_requests_through_rather_than_failing_them(settings, monkeypatch, caplog):
    """A rate limiter must not take the site down: if the cache cannot count, the request goes on (logged)."""
    settings.JOIN_RATE_LIMIT = "1/m"
    sst0 = cohort(make_study(shots=[0], workers_per_cohort=20), "sst2", 0)

    def unreachable(*args, **kwargs):
        raise ConnectionError("Redis is down")

    from django.core.cache.backends.locmem import LocMemCache

    for method in ("add", "incr", "get"):
        monkeypatch.setattr(LocMemCache, method, unreachable)
    assert [Client().get(sst0.join_path, prolific(f"F{n}")).status_code for n in range(3)] == [302, 302, 302]
    assert "rate limit join not counted: the cache failed (ConnectionError)" in caplog.text
