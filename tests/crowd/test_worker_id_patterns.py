"""A researcher's worker-id pattern runs in linear time (RE2), with the pattern's and the id's length bounded:
the classic catastrophic patterns are accepted through the API and answer a hostile id at once on the join link."""

import time

import pytest
from django.test import Client

from annotation.models import Cohort, Study, Worker

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clues")]

# Exponential backtracking in a backtracking engine (Python's re): nested or overlapping repetition.
CATASTROPHIC = [r"(a+)+$", r"(a|aa)+$", r"(a|a?)+$", r"(\w+\s?)+$", r"(.*a){12}", r"^(([a-z])+.)+[A-Z]([a-z])+$"]


def _study(client, pattern: str):
    return client.post(
        "/api/studies/",
        {"name": "ids", "tasks": ["sst2"], "shots": [0], "platform": "generic", "worker_id_pattern": pattern},
        content_type="application/json",
    )


@pytest.fixture
def api(researcher):
    client = Client()
    client.force_login(researcher)
    return client


@pytest.mark.parametrize("pattern", CATASTROPHIC)
def test_a_catastrophic_pattern_checks_a_hostile_id_in_linear_time(api, pattern):
    response = _study(api, pattern)
    assert response.status_code == 201, response.content
    study = Study.objects.get(pk=response.json()["id"])
    assert api.post(f"/api/studies/{study.pk}/launch/", {}, content_type="application/json").status_code == 200
    link = Cohort.objects.get(study=study).join_path
    for length in (26, 99):  # 26 characters took seconds with Python's re; 99 would never end
        hostile = "a" * length + "!"
        started = time.perf_counter()
        page = Client().get(link, {"worker_id": hostile})
        elapsed = time.perf_counter() - started
        assert elapsed < 0.5, f"{pattern} took {elapsed:.2f}s on {length + 1} characters"
        assert page.status_code == 400 and "does not have the form" in page.content.decode()
    assert not Worker.objects.exists()
    if pattern == r"(a+)+$":
        assert Client().get(link, {"worker_id": "aaaa"}).status_code == 302, "control: a matching id joins"


@pytest.mark.parametrize(
    "pattern, problem",
    [
        (r"(a)\1", "invalid escape"),
        (r"(?=a)\w+", "invalid perl operator"),
        ("a{1001}", "repetition"),
        ("([", "missing"),
        ("a" * 201, "200"),
    ],
)
def test_a_pattern_the_linear_engine_cannot_run_is_refused_with_the_reason(api, pattern, problem):
    response = _study(api, pattern)
    assert response.status_code == 400
    assert problem in str(response.json()["worker_id_pattern"])
    assert not Study.objects.exists()


def test_an_id_longer_than_the_bound_is_refused_before_any_pattern_runs(api):
    study = Study.objects.get(pk=_study(api, r"[a-z0-9]+").json()["id"])
    api.post(f"/api/studies/{study.pk}/launch/", {}, content_type="application/json")
    link = Cohort.objects.get(study=study).join_path
    page = Client().get(link, {"worker_id": "a" * 101})
    assert page.status_code == 400 and "too long" in page.content.decode()
    assert Client().get(link, {"worker_id": "a" * 100}).status_code == 302
