"""Nothing sensitive reaches the logs: no gold answer, session id, CSRF token, join token, worker id, API token or
password, with every logger at DEBUG level, through a worker journey and the refusals and errors around it.

The output checked is that of the console handler settings.LOGGING configures (with its redacting
filter), which is where the platform's logs go. Request logs of gunicorn itself are off by default
(see SECURITY.md for turning them on without query strings).
"""

from __future__ import annotations

import io
import logging

import pytest
from django.conf import settings
from django.db import IntegrityError, OperationalError
from django.db.backends.base.base import BaseDatabaseWrapper
from django.test import Client
from rest_framework.authtoken.models import Token

from annotation.session import BINDING_COOKIE
from clues_platform.log_filters import RedactFilter, redact
from tests.annotation.factories import WorkerClient, cohort, gold_answer, make_study
from tests.security.tricky import EMOJI, TAG

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("tricky")]

PID, SESSION = "5ec2e7000000000000000017", "SESSIONSECRET0042"


@pytest.fixture
def log_output():
    """Everything the configured console handler writes, with every logger at DEBUG."""
    handler = next(h for h in logging.getLogger().handlers if any(isinstance(f, RedactFilter) for f in h.filters))
    buffer = io.StringIO()
    old_stream = handler.setStream(buffer)
    levels = {name: logging.getLogger(name).level for name in ("", "django", "django.request", "django.security")}
    for name in levels:
        logging.getLogger(name).setLevel(logging.DEBUG)
    yield buffer
    handler.setStream(old_stream)
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)


def test_the_logging_configuration_routes_everything_through_the_redacting_filter():
    assert settings.LOGGING["handlers"]["console"]["filters"] == ["outage", "redact"]
    assert settings.LOGGING["loggers"]["django"]["handlers"] == []  # no unfiltered handler of Django's
    assert settings.LOGGING["loggers"]["django.db.backends"]["level"] == "INFO"  # no SQL (and its parameters)
    assert (
        redact("Bad Request: /join/AbC-123_x/?PROLIFIC_PID=abc&SESSION_ID=def")
        == "Bad Request: /join/[redacted]/?PROLIFIC_PID=[redacted]&SESSION_ID=[redacted]"
    )
    assert redact('{"password": "hunter2", "token": "abc"}') == '{"password": "[redacted]", "token": "[redacted]"}'
    assert (
        redact("DETAIL:  Key (platform, external_id)=(prolific, W1) already exists.")
        == "DETAIL:  Key (platform, external_id)=([redacted]) already exists."
    )


def test_a_worker_journey_and_its_failures_log_nothing_sensitive(log_output, researcher, superuser, monkeypatch):
    study = make_study(tasks=["conll03"], shots=[10], created_by=researcher, filter_fraction=None)
    target = cohort(study, "conll03", 10)
    secrets = {
        "join token": target.join_token,
        "worker id": PID,
        "platform session": SESSION,
        "context or gold text": TAG,
        "emoji of the texts": EMOJI,
        "research password": "pw-rita-123",
        "wrong password": "guessed-Pa55word",
    }
    # The journey: join, answer every training item (gold in the feedback) and a few test items.
    worker = WorkerClient(target, params={"PROLIFIC_PID": PID, "SESSION_ID": SESSION, "STUDY_ID": "STUDYSECRET9"})
    secrets["study id"] = "STUDYSECRET9"
    worker.client.raise_request_exception = False
    secrets["session id"] = worker.client.cookies[settings.SESSION_COOKIE_NAME].value
    secrets["binding"] = worker.client.cookies[BINDING_COOKIE].value
    secrets["csrf token"] = worker.csrf

    for n in range(33):
        state = worker.current().json()
        handle = state["item"]["id"]
        example = worker.example(handle)
        if n == 0:  # refusals first: each is logged by Django as a 4xx with the path
            worker.answer(handle, [{"start": 0, "end": 10_000}])  # 400
            worker.send("post", "/api/work/answer/", {"item": handle, "answer": []}, csrf=False)  # 403 CSRF
        assert worker.answer(handle, gold_answer(example)).status_code == 201
        for gold in example.gold:
            secrets[f"gold of item {example.pk}"] = gold
    # The join link replayed, refused, with a bad token; a missing parameter.
    Client().get(target.join_path, {"PROLIFIC_PID": PID, "SESSION_ID": "forged"})  # 403
    Client().get(target.join_path, {"SESSION_ID": SESSION})  # 400
    Client().get(f"/join/{target.join_token}x/", {"PROLIFIC_PID": PID})  # 404
    # Logins: failed and successful, researcher and admin; the API with a token.
    Client().post("/accounts/login/", {"username": "rita", "password": "guessed-Pa55word"})
    Client().post("/admin/login/", {"username": "root", "password": "guessed-Pa55word"})
    Client().post("/accounts/login/", {"username": "rita", "password": "pw-rita-123"})
    token = Token.objects.create(user=researcher).key
    secrets["api token"] = token
    Client().get(f"/api/studies/{study.pk}/", HTTP_AUTHORIZATION=f"Token {token}")
    Client().get(f"/api/studies/{study.pk}/", HTTP_AUTHORIZATION=f"Token {token}x")  # 401
    # Errors with tracebacks: a database outage (503) and a bug (500) in the middle of a worker request.
    monkeypatch.setattr(
        BaseDatabaseWrapper, "_cursor", lambda *a, **k: (_ for _ in ()).throw(OperationalError("connection refused"))
    )
    assert worker.current().status_code == 503
    monkeypatch.undo()

    def bug(*args, **kwargs):  # a database error quoting the row, as PostgreSQL's do
        raise IntegrityError(
            'duplicate key value violates unique constraint "worker_unique_identity"\n'
            f"DETAIL:  Key (platform, external_id)=(prolific, {PID}) already exists."
        )

    monkeypatch.setattr("annotation.services.current_item", bug)
    assert worker.current().status_code == 500
    monkeypatch.undo()

    output = log_output.getvalue()
    assert "Bad Request" in output and "Forbidden" in output and "Traceback" in output, output[:3000]
    # The outage is one line, without a traceback (the 500 keeps its traceback).
    assert "Service Unavailable: /api/work/current/ (database unavailable: connection refused)\n" in output
    assert output.count("Traceback") == 1
    leaked = {name: value for name, value in secrets.items() if value and value in output}
    assert not leaked, f"in the logs: {sorted(leaked)}\n{output[:5000]}"
