"""Nothing a worker or a researcher is shown is kept by a browser or proxy cache.

clues_platform.middleware.NoStoreMiddleware: ``Cache-Control: no-store`` on every page and API
response; static files keep their own caching. And the public development SECRET_KEY stops a
production start (DEBUG=0), naming the variable.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client

from clues_platform.settings import DEVELOPMENT_SECRET_KEY
from tests.annotation.factories import WorkerClient, cohort, make_study

REPO = Path(__file__).resolve().parents[2]


def no_store(response) -> bool:
    return "no-store" in response.get("Cache-Control", "")


@pytest.mark.django_db
@pytest.mark.usefixtures("clues")
def test_worker_pages_and_api_answers_are_never_stored(researcher):
    study = make_study(shots=[0], created_by=researcher)
    worker = WorkerClient(cohort(study, "sst2", 0), "P-CACHE-1")
    assert worker.join_response.status_code == 302 and no_store(worker.join_response)
    for path in ("/work/", "/api/work/current/"):
        response = worker.client.get(path)
        assert response.status_code == 200 and no_store(response), (path, response.get("Cache-Control"))
    started = worker.send("post", "/work/start/", {})
    assert no_store(started), started.status_code
    current = worker.current().json()
    item = current.get("item", {}).get("id") if isinstance(current.get("item"), dict) else None
    answered = worker.answer(item or 0, [])
    assert answered.status_code in (200, 201, 400, 409) and no_store(answered)
    # Refusals too: someone without an enrollment.
    assert no_store(Client().get("/api/work/current/"))
    # The researcher's side.
    rita = Client()
    rita.force_login(researcher)
    for path in ("/dashboard/", f"/dashboard/studies/{study.pk}/", f"/api/studies/{study.pk}/"):
        response = rita.get(path)
        assert response.status_code == 200 and no_store(response), path


def test_static_files_keep_their_own_caching(client):
    response = client.get("/static/css/site.css")
    assert response.status_code == 200 and not no_store(response)


def _start(secret_key: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("DEBUG", "SECRET_KEY", "ALLOWED_HOSTS")}
    env.update(DEBUG="0", SECRET_KEY=secret_key, ALLOWED_HOSTS="example.org")
    return subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("key", [DEVELOPMENT_SECRET_KEY, "django-insecure-" + "x" * 50])
def test_production_refuses_the_development_secret_key(key):
    result = _start(key)
    assert result.returncode != 0
    assert "SECRET_KEY is the public development key" in result.stderr, result.stderr[-2000:]
    assert key not in result.stderr  # the message names the variable, not the value


def test_production_starts_with_a_secret_key_of_its_own():
    result = _start("a-real-secret-" + "k" * 50)
    assert result.returncode == 0, result.stderr[-2000:]
