"""A model served over the OpenAI-compatible API, run as a worker, beside the human cohort: its row, the
human-minus-model gap and the agreement with the human majority on the results page, every table export and
the API. The human side is three real annotators; the model side a real run against the HTTP fake."""

from __future__ import annotations

import io
import json

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import call_command
from django.test import Client

from baselines.models import BaselineRun
from fewshot_models.backends.openai import OpenAIBackend
from results.cells import model_rows
from tasks_data.models import Example
from tests.annotation.factories import cohort, complete, make_study, trim_test_set
from tests.baselines.fake_openai import TOKEN, FakeOpenAI

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def study(django_db_setup, django_db_blocker, demo_path):
    """SST-2 on the demo data, 5 test items, 10 shots: A answers all right, B misses item 4, C misses 3 and 4."""
    from tasks_data.importer import import_release
    from tests.conftest import imported_for_module

    with imported_for_module(django_db_blocker, lambda: import_release(demo_path)):
        with django_db_blocker.unblock():
            owner = User.objects.create_user("rows-owner")
            owner.groups.add(Group.objects.get_or_create(name="researchers")[0])
            trim_test_set("sst2", 5)
            study = make_study(tasks=["sst2"], shots=[10], created_by=owner, filter_floor=None, filter_fraction=None)
            c = cohort(study, "sst2", 10)
            complete(c, "A")
            complete(c, "B", wrong_test={4})
            complete(c, "C", wrong_test={3, 4})
        yield study


@pytest.fixture
def worker_run(study, monkeypatch):
    """The model answers "positive" to everything, as a worker over the fake server."""
    monkeypatch.setenv("OPENAI_API_KEY", TOKEN)
    monkeypatch.setattr(OpenAIBackend, "backoff", 0.02)
    with FakeOpenAI() as fake:
        call_command(
            "run_baselines",
            "--tasks",
            "sst2",
            "--methods",
            "worker",
            "--models",
            "tiny-model",
            "--api-base",
            fake.base_url,
            "--shots",
            "10",
            "--splits",
            "1",
            stdout=io.StringIO(),
            stderr=io.StringIO(),
        )
        yield BaselineRun.objects.get(method="worker"), fake


def test_model_row_gap_and_agreement(study, worker_run):
    run, fake = worker_run
    tests = list(Example.objects.filter(task__slug="sst2", role="test").order_by("position"))
    gold = [e.gold for e in tests]
    # the human majority: the gold on items 0-2 and 3 (A, B right); item 4: B and C wrong, A right -> wrong
    model_right = [g == ["positive"] for g in gold]
    (row,) = [r for r in model_rows(study) if r["method"] == "worker"]
    assert row["label"] == f"tiny-model (as a worker, 127.0.0.1:{fake.base_url.split(':')[2].split('/')[0]})"
    assert row["mean"] == pytest.approx(100 * sum(model_right) / 5) and row["n"] == 1
    human_items = [1, 1, 1, 2 / 3, 1 / 3]
    assert row["diff"] == pytest.approx(100 * (sum(human_items) - sum(model_right)) / 5)
    assert row["ci_low"] <= row["diff"] <= row["ci_high"] and row["items"] == 5
    majority = [g if i < 4 else None for i, g in enumerate(gold)]
    same = [(m == ["positive"]) if m is not None else (["positive"] != gold[4]) for m in majority]
    assert row["agreement"] == pytest.approx(100 * sum(same) / 5)


def test_results_page_exports_and_api_show_the_row(study, worker_run):
    run, _ = worker_run
    client = Client()
    client.force_login(study.created_by)
    page = client.get(f"/dashboard/studies/{study.pk}/results/").content.decode()
    label = model_rows(study)[0]["label"]
    assert label in page and f"Human − {label}" in page and f"{label} = Majority vote (% items)" in page
    for fmt in ("csv", "md", "tex", "json"):
        text = client.get(f"/dashboard/studies/{study.pk}/results/download.{fmt}?models=1").content.decode()
        assert "tiny-model (as a worker" in text, fmt
        assert "Majority vote (% items)" in text.replace("\\%", "%") or '"agreement"' in text, fmt
    payload = client.get(f"/api/studies/{study.pk}/results/").json()
    (row,) = payload["model_rows"]
    assert row["server"] == run.server and row["agreement"] is not None and row["diff"] is not None
    # another researcher sees the runs (deployment-wide) but not this study's results
    other = User.objects.create_user("rows-other")
    other.groups.add(Group.objects.get(name="researchers"))
    client.force_login(other)
    assert client.get(f"/api/studies/{study.pk}/results/").status_code == 404
    runs = client.get("/api/baselines/runs/").json()["runs"]
    assert [r["id"] for r in runs] == [run.pk]
    assert not set(json.dumps(runs)) & set() and "rows-owner" not in json.dumps(runs)
