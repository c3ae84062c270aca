"""The database health check (a SELECT 1 round trip) runs on a connection that was idle, not before every request."""

from __future__ import annotations

import weakref

import pytest
from django.db import connections
from django.http import HttpResponse
from django.test import RequestFactory

from clues_platform import middleware

pytestmark = pytest.mark.django_db


def wrapper():
    """The default connection's wrapper itself, as the middleware finds it now (monkeypatch cannot restore
    attributes through the ``connection`` proxy; an earlier test may have replaced the wrapper)."""
    return connections["default"]


@pytest.fixture
def checks(db, monkeypatch) -> list[int]:
    """The health checks run, counted; the connection's checks on (as CONN_HEALTH_CHECKS=1 sets them)."""
    run: list[int] = []
    connection = wrapper()
    monkeypatch.setattr(middleware, "_LAST_USED", weakref.WeakKeyDictionary())
    monkeypatch.setattr(connection, "health_check_enabled", True)
    # An earlier test's database error leaves the flag up; Django lowers it as a request starts (not run here).
    monkeypatch.setattr(connection, "errors_occurred", False)
    monkeypatch.setattr(connection, "is_usable", lambda: run.append(1) or True)
    return run


def request(clock: float, monkeypatch) -> None:
    """One request at ``clock`` seconds, which runs a query; the check reset first, as Django does at its start."""
    monkeypatch.setattr(middleware.time, "monotonic", lambda: clock)
    connection = wrapper()
    connection.health_check_done = False

    def view(request):
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return HttpResponse()

    middleware.RecentConnectionMiddleware(view)(RequestFactory().get("/"))


def test_a_connection_used_a_moment_ago_is_not_checked_again(settings, checks, monkeypatch):
    settings.CONN_HEALTH_CHECK_IDLE = 5
    request(100.0, monkeypatch)
    assert len(checks) == 1  # never used by a request before: checked
    request(101.0, monkeypatch)
    request(105.9, monkeypatch)
    assert len(checks) == 1
    request(111.0, monkeypatch)  # idle 5.1 s: checked
    assert len(checks) == 2


def test_a_zero_idle_time_checks_before_every_request(settings, checks, monkeypatch):
    settings.CONN_HEALTH_CHECK_IDLE = 0
    for clock in (1.0, 1.0, 1.5):
        request(clock, monkeypatch)
    assert len(checks) == 3


def test_a_connection_with_errors_is_checked_at_the_next_request(settings, checks, monkeypatch):
    settings.CONN_HEALTH_CHECK_IDLE = 5
    request(1.0, monkeypatch)
    monkeypatch.setattr(wrapper(), "errors_occurred", True)
    request(2.0, monkeypatch)  # used a moment ago, so not checked; but it failed
    monkeypatch.setattr(wrapper(), "errors_occurred", False)
    assert len(checks) == 1
    request(3.0, monkeypatch)
    assert len(checks) == 2
