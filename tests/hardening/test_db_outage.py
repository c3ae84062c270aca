"""While the database is unreachable, clients get a short 503 (JSON for the API, HTML for pages), never a 500 page.

The outage is simulated in-process: every new cursor raises the OperationalError psycopg raises when
PostgreSQL refuses connections (what happens while it restarts). benchmarks/db_restart.py does it
for real, on gunicorn, with PostgreSQL stopped and started in the middle of a load run.
"""

from __future__ import annotations

import pytest
from django.db import OperationalError
from django.db.backends.base.base import BaseDatabaseWrapper
from django.test import Client
from rest_framework.authtoken.models import Token

from clues_platform.errors import UNAVAILABLE
from tests.annotation.factories import WorkerClient, cohort, make_study, prolific

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clues")]

REFUSED = (
    'connection failed: connection to server at "127.0.0.1", port 5432 failed: Connection refused\n'
    "\tIs the server running on that host and accepting TCP/IP connections?"
)


@pytest.fixture
def outage(monkeypatch):
    """Call ``outage.start()`` to make every database access fail as during a PostgreSQL restart."""

    class Outage:
        def start(self):
            def refused(self, *args, **kwargs):
                raise OperationalError(REFUSED)

            monkeypatch.setattr(BaseDatabaseWrapper, "_cursor", refused)

        def stop(self):
            monkeypatch.undo()

    return Outage()


def assert_unavailable(response, *, json: bool):
    assert response.status_code == 503, (response.status_code, response.content[:300])
    assert response["Retry-After"] == "5"
    if json:
        assert response["Content-Type"] == "application/json"
        assert response.json() == {"detail": UNAVAILABLE}
    else:
        assert response["Content-Type"].startswith("text/html")
        body = response.content.decode()
        assert UNAVAILABLE in body and "Traceback" not in body and "Server Error (500)" not in body


def test_api_and_pages_answer_503_with_a_message_while_the_database_is_down(outage, researcher, settings):
    assert settings.DEBUG is False
    study = make_study(shots=[0], created_by=researcher)
    sst0 = cohort(study, "sst2", 0)
    worker = WorkerClient(sst0, "P1")
    item = worker.current().json()["item"]["id"]
    researcher_client = Client(raise_request_exception=False)
    researcher_client.force_login(researcher)
    token = Token.objects.create(user=researcher).key
    worker.client.raise_request_exception = False
    stranger = Client(raise_request_exception=False)

    outage.start()
    # The worker API (session in the database: the session read itself fails), JSON.
    assert_unavailable(worker.current(), json=True)
    assert_unavailable(worker.answer(item, ["positive"]), json=True)
    # The researcher API, by session and by token, JSON.
    assert_unavailable(researcher_client.get(f"/api/studies/{study.pk}/results/"), json=True)
    assert_unavailable(stranger.get("/api/studies/", HTTP_AUTHORIZATION=f"Token {token}"), json=True)
    # Pages: the join link, the worker page, the dashboard, HTML.
    assert_unavailable(stranger.get(sst0.join_path, prolific("P2")), json=False)
    assert_unavailable(worker.client.get("/work/"), json=False)
    assert_unavailable(researcher_client.get("/dashboard/"), json=False)
    # A page asked for as JSON gets JSON.
    assert_unavailable(stranger.get(sst0.join_path, prolific("P3"), HTTP_ACCEPT="application/json"), json=True)

    outage.stop()
    # Back: the same clients go on; the answer refused during the outage was not stored.
    assert worker.current().json()["progress"]["done"] == 0
    assert worker.answer(item, ["positive"]).status_code == 201


def test_other_server_errors_stay_500_without_details(researcher, monkeypatch):
    """Only a lost database is a 503; a bug is a 500 with no traceback (JSON for the API)."""
    client = Client(raise_request_exception=False)
    client.force_login(researcher)

    def broken(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr("annotation.selectors.studies_visible_to", broken)
    response = client.get("/api/studies/")
    assert response.status_code == 500 and response.json() == {"detail": "Internal server error."}
