"""Fixtures of the Prolific tests: a fake Prolific server on 127.0.0.1 (the data and users: tests/conftest.py)."""

import pytest

from tests.recruitment.fake_prolific import TOKEN, WORKSPACE, FakeProlific


@pytest.fixture
def fake(settings):
    """A fake Prolific, the settings pointing at it, and Celery eager (no broker), as in a lab setup."""
    from clues_platform.celery import app

    server = FakeProlific().start()
    settings.PROLIFIC_API_URL = server.url
    settings.PROLIFIC_API_TOKEN = TOKEN
    settings.PROLIFIC_WORKSPACE_ID = WORKSPACE
    settings.PROLIFIC_RETRIES = 1
    settings.PROLIFIC_BACKOFF = 0
    settings.PROLIFIC_TIMEOUT = 2
    eager = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield server
    app.conf.task_always_eager = eager
    server.stop()
