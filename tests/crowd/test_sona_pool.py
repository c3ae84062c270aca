"""A SONA-style pool added as docs/crowd_providers.md says (``tests/crowd/sona.py``: one provider class,
registered here), without a line of ``annotation/``: its settings on the study form, the API and
launch_study for that platform only; a worker from the join link through training and the test step to a
credit granted by its ``on_finish`` hook; a screened-out worker through ``on_filter``; an expired one
through ``on_expire``."""

from __future__ import annotations

import argparse
from datetime import timedelta
from decimal import Decimal

import pytest
from django.test import Client
from django.utils import timezone

import crowd
from annotation import services
from annotation.models import Enrollment, Study
from recruitment.models import ProlificStudy
from tests.annotation.factories import WorkerClient, cohort, gold_answer, trim_test_set, wrong_answer
from tests.crowd.sona import FakeSona, SonaPool

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clues")]


@pytest.fixture
def sona():
    server = FakeSona().start()
    provider = crowd.register(SonaPool(server.url))
    yield provider, server
    crowd.unregister(provider.slug)
    server.stop()


@pytest.fixture
def dashboard(researcher):
    client = Client()
    client.force_login(researcher)
    return client


def _form(**changes) -> dict:
    data = {
        "name": "pool study",
        "tasks": ["sst2"],
        "shots": ["10"],
        "chain": "1",
        "workers_per_cohort": "3",
        "pay_rate": "0",
        "filter_floor": "0.5",
        "filter_fraction": "",
        "platform": "sona",
        "worker_id_param": "worker_id",
        "test_order": "file",
        "idle_cap_seconds": "300",
        "expected_minutes": "30",
        "experiment_id": "4711",
        "credit_token": "tok42",
        "credits": "1.5",
        "credit_screened_out": "on",
        "manual_review": "on",  # another platform's setting, sent by its hidden fields: neither checked nor kept
        "launch": "on",
    }
    data.update(changes)
    return data


def walk(worker: WorkerClient, choose) -> str:
    """Answer every item through the worker API with ``choose``; the step the worker ends in."""
    while True:
        state = worker.current().json()
        if state["item"] is None:
            return state["step"]
        handle = state["item"]["id"]
        assert worker.answer(handle, choose(worker.example(handle))).status_code == 201


def test_a_pool_with_its_own_settings_grants_credit_on_finishing_and_screens_out_through_its_hooks(
    sona, dashboard, django_capture_on_commit_callbacks
):
    provider, server = sona
    trim_test_set("sst2", 3)
    page = dashboard.get("/dashboard/studies/new/").content.decode()
    # Its settings on the form, in their own group, shown with the pool only (dashboard.js).
    group = page[page.index('data-platform-settings="sona"') :]
    group = group[: group.index("</fieldset>", group.index("credit_screened_out"))]
    assert all(f'name="{name}"' in group for name in ("experiment_id", "credit_token", "credits"))
    assert 'name="manual_review"' not in group and 'data-platform-settings="prolific"' in page

    created = dashboard.post("/dashboard/studies/new/", _form(), follow=True)
    assert created.redirect_chain, created.content.decode()[:2000]
    assert "launched its cohorts: the join links take workers now." in created.content.decode()
    study = Study.objects.get()
    assert study.platform == "sona"
    settings = provider.load_settings(study)
    assert settings == {
        "experiment_id": 4711,
        "credit_token": "tok42",
        "credits": Decimal("1.50"),
        "credit_screened_out": True,
    }
    assert not ProlificStudy.objects.exists()  # the Prolific setting sent along was not kept
    link = cohort(study, "sst2", 10)

    with django_capture_on_commit_callbacks(execute=True):
        good = WorkerClient(link, params={"survey_code": "1001"})
        assert good.join_response.status_code == 302
        assert walk(good, gold_answer) == "done"
    assert server.grants == [("4711", "tok42", "1001")]  # once, after the commit
    assert study.completion_code in good.client.get("/work/").content.decode()

    with django_capture_on_commit_callbacks(execute=True):
        weak = WorkerClient(link, params={"survey_code": "1002"})
        assert walk(weak, wrong_answer) == "filtered"
    assert provider.screened_out == ["1002"]
    assert server.grants[-1] == ("4711", "tok42", "1002")
    states = dict(Enrollment.objects.values_list("worker__external_id", "state"))
    assert states == {"1001": "completed", "1002": "filtered"}

    # Its time ran out: told through on_expire, and no credit.
    late = WorkerClient(link, params={"survey_code": "1003"})
    assert late.join_response.status_code == 302
    limit = Enrollment.objects.get(worker__external_id="1003").timer_minutes  # the part's limit as they joined
    services.expire_stale(now=timezone.now() + timedelta(minutes=limit + 1))
    assert provider.expired == ["1003"] and len(server.grants) == 2
    # Refused as its own: a survey code is digits.
    assert Client().get(link.join_path, {"survey_code": "x1"}).status_code == 400


def test_its_settings_are_checked_for_its_studies_only_in_the_api_and_launch_study(sona, researcher):
    from rest_framework.test import APIClient

    from annotation.management.commands.launch_study import Command as LaunchStudy

    api = APIClient()
    api.force_authenticate(researcher)
    base = {"name": "s", "tasks": ["sst2"], "shots": [0]}
    missing = api.post("/api/studies/", {**base, "platform": "sona"}, format="json")
    assert missing.status_code == 400 and "experiment_id" in missing.json()["detail"]
    assert "SONA pool needs this setting" in missing.json()["detail"]
    bad = api.post(
        "/api/studies/",
        {**base, "platform": "sona", "experiment_id": 7, "credit_token": "no way!", "credits": "99"},
        format="json",
    )
    assert bad.status_code == 400
    assert "credit_token" in bad.json()["detail"] and "credits" in bad.json()["detail"]
    foreign = api.post("/api/studies/", {**base, "platform": "generic", "credits": "2"}, format="json")
    assert foreign.status_code == 400
    assert "credits: a setting of SONA pool; this study recruits on generic link" in foreign.json()["detail"]
    assert not Study.objects.exists()
    ok = api.post(
        "/api/studies/", {**base, "platform": "sona", "experiment_id": 7, "credit_token": "abc"}, format="json"
    )
    assert ok.status_code == 201, ok.json()
    assert ok.json()["platform_settings"] == {
        "experiment_id": 7,
        "credit_token": "abc",
        "credits": "1.00",
        "credit_screened_out": True,
    }

    parser = argparse.ArgumentParser()
    LaunchStudy().add_arguments(parser)
    helps = {action.dest: action.help for action in parser._actions}
    assert helps["experiment_id"].startswith("SONA pool only:") and helps["manual_review"].startswith("Prolific only:")
