"""A Redis (cache) outage: workers keep their sessions and their answers are taken (SECURITY.md)."""

import secrets

import pytest
from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache as DjangoRedisCache
from django.test import Client, override_settings

from clues_platform.cache import RedisCache
from tests.annotation.factories import pid_for
from tests.security.redis_cache import redis_url
from tests.worker_pages.factories import cohort_of, make_study

DEAD_REDIS = {
    "default": {"BACKEND": "clues_platform.cache.RedisCache", "LOCATION": "redis://127.0.0.1:1/0"}
}  # production's backend (settings.CACHES); nothing listens on port 1

pytestmark = pytest.mark.django_db


@override_settings(CACHES=DEAD_REDIS, SESSION_ENGINE="clues_platform.sessions")
def test_a_worker_journey_goes_on_while_the_cache_is_unreachable(demo_data, caplog):
    with pytest.raises(Exception):  # noqa: B017 - the control: the cache really is unreachable
        caches["default"].get("anything")
    study = make_study(tasks=("sst2",), shots=(10,))
    cohort = cohort_of(study, "sst2", 10)
    client = Client(enforce_csrf_checks=True)
    joined = client.get(f"/join/{cohort.join_token}/?PROLIFIC_PID={pid_for('P-OUT')}&STUDY_ID=S&SESSION_ID=X")
    assert joined.status_code == 302
    headers = {"HTTP_X_CSRFTOKEN": client.cookies["csrftoken"].value}
    for done in range(3):
        state = client.get("/api/work/current/").json()
        assert state["progress"]["done"] == done
        item = state["item"]
        answered = client.post(
            "/api/work/answer/",
            {"item": item["id"], "answer": [item["labels"][0]]},
            content_type="application/json",
            **headers,
        )
        assert answered.status_code == 201, answered.content
    assert "session cache unavailable" in caplog.text


def test_the_stock_cached_sessions_would_fail_there(db):
    """Why the engine exists: Django's own cached_db engine raises when the cache is down."""
    from django.contrib.sessions.backends.cached_db import SessionStore
    from redis.exceptions import ConnectionError as RedisConnectionError

    with override_settings(CACHES=DEAD_REDIS):
        store = SessionStore()
        store["x"] = 1
        with pytest.raises(RedisConnectionError):
            store.save()  # a new session key is checked against the cache, unguarded


def test_the_cache_keeps_its_redis_client_where_django_builds_one_per_call():
    """A request's session read does not pay for building a Redis client (clues_platform/cache.py)."""
    kept = RedisCache("redis://127.0.0.1:1/0", {})._cache
    assert kept.get_client("a") is kept.get_client("b") is kept.get_client("c", write=True)  # one server: one client
    django = DjangoRedisCache("redis://127.0.0.1:1/0", {})._cache
    assert django.get_client("a") is not django.get_client("a")  # the control: Django's builds a new one
    assert kept.get_client().connection_pool is kept._get_connection_pool(False)


def test_the_kept_client_works_through_the_cache():
    url = redis_url()
    if url is None:
        pytest.skip("no Redis at CACHE_URL / REDIS_URL / 127.0.0.1:6379")
    cache = RedisCache(url, {"KEY_PREFIX": f"test-{secrets.token_hex(4)}"})
    cache.set("kept", {"enrollment_id": 7}, timeout=10)
    assert cache.get("kept") == {"enrollment_id": 7} and cache.get("kept") == {"enrollment_id": 7}
    cache.delete("kept")
    assert cache.get("kept") is None
