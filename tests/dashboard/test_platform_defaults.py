"""A new study's platform is one that can recruit: Prolific once a Prolific token is configured (the
environment's, or one the researcher stored), the generic link before; the dashboard form, the API and
launch_study agree, and the dashboard never says the join links take workers for a platform whose links
do not yet."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from rest_framework.test import APIClient

from annotation.models import Study
from recruitment.models import ProlificCredential

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clues")]


@pytest.fixture
def dashboard(researcher):
    client = Client()
    client.force_login(researcher)
    return client


def checked_platform(html: str) -> str:
    return re.search(r'<input type="radio" name="platform" value="(\w+)"[^>]*checked', html).group(1)


def _form(**changes) -> dict:
    data = {
        "name": "s",
        "tasks": ["sst2"],
        "shots": ["0"],
        "chain": "1",
        "workers_per_cohort": "3",
        "pay_rate": "12",
        "filter_fraction": "0.5",
        "worker_id_param": "worker_id",
        "test_order": "file",
        "idle_cap_seconds": "300",
        "expected_minutes": "30",
        "launch": "on",
    }
    data.update(changes)
    return data


def test_without_a_token_a_new_study_recruits_through_the_generic_link(dashboard, researcher, settings):
    settings.PROLIFIC_API_TOKEN = ""
    assert checked_platform(dashboard.get("/dashboard/studies/new/").content.decode()) == "generic"
    api = APIClient()
    api.force_authenticate(researcher)
    created = api.post("/api/studies/", {"name": "api", "tasks": ["sst2"], "shots": [0]}, format="json")
    assert created.status_code == 201 and created.json()["platform"] == "generic"
    # Chosen anyway, Prolific says what its links need before they take anyone.
    page = dashboard.post("/dashboard/studies/new/", _form(platform="prolific"), follow=True).content.decode()
    assert "take workers now" not in page
    assert "run as plain links" in page and "not checked with Prolific" in page and "no Prolific token" in page
    page = dashboard.post("/dashboard/studies/new/", _form(name="g", platform="generic"), follow=True)
    assert "the join links take workers now." in page.content.decode()


def test_with_a_token_prolific_is_the_default_and_publishing_is_the_next_step(dashboard, researcher, settings):
    settings.PROLIFIC_API_TOKEN = "token-from-the-environment"
    assert checked_platform(dashboard.get("/dashboard/studies/new/").content.decode()) == "prolific"
    page = dashboard.post("/dashboard/studies/new/", _form(platform="prolific"), follow=True).content.decode()
    assert "take workers now" not in page and "publish it on Prolific" in page
    assert Study.objects.get().platform == "prolific"


def test_a_token_the_researcher_stored_counts_for_that_researcher_only(
    dashboard, researcher, other_researcher, settings
):
    settings.PROLIFIC_API_TOKEN = ""
    ProlificCredential.objects.create(owner=researcher, token_encrypted="sealed")
    assert checked_platform(dashboard.get("/dashboard/studies/new/").content.decode()) == "prolific"
    other = Client()
    other.force_login(other_researcher)
    assert checked_platform(other.get("/dashboard/studies/new/").content.decode()) == "generic"
