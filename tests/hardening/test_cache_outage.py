"""A Redis (cache) outage: workers keep their sessions and their answers are taken (SECURITY.md)."""

import pytest
from django.core.cache import caches
from django.test import Client, override_settings

from tests.annotation.factories import pid_for
from tests.worker_pages.factories import cohort_of, make_study

DEAD_REDIS = {
    "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://127.0.0.1:1/0"}
}  # nothing listens on port 1

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
