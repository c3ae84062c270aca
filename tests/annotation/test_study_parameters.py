"""A study's parameters are defined once (annotation.models.Study): the API, the dashboard form and
launch_study refuse the same values with a clear 400 naming the field, never a 500."""

from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.test import APIClient

from annotation import platform_settings, services
from annotation.models import Answer, Enrollment, Study
from api.serializers import StudyCreateSerializer
from dashboard.forms import StudyForm
from tests.annotation.factories import cohort, make_study

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clues")]

HUGE = 2**63


@pytest.fixture
def api(researcher):
    client = APIClient()
    client.force_authenticate(researcher)
    return client


@pytest.fixture
def dashboard(researcher):
    client = Client()
    client.force_login(researcher)
    return client


BAD = [
    ("shots", [HUGE]),
    ("shots", [5]),
    ("shots", []),
    ("chain", HUGE),
    ("chain", 0),
    ("workers_per_cohort", HUGE),
    ("workers_per_cohort", 0),
    ("pay_rate", -1),
    ("pay_rate", HUGE),
    ("pay_rate", "1e9"),
    ("idle_cap_seconds", 0),
    ("idle_cap_seconds", HUGE),
    ("time_limit_minutes", 0),
    ("time_limit_minutes", HUGE),
    ("filter_floor", 1.5),
    ("filter_fraction", -0.1),
]


@pytest.mark.parametrize("field, value", BAD, ids=[f"{f}={v}" for f, v in BAD])
def test_the_api_refuses_out_of_bounds_parameters_with_400(api, field, value):
    response = api.post("/api/studies/", {"name": "s", "tasks": ["sst2"], field: value}, format="json")
    assert response.status_code == 400, response.content
    body = response.json()
    assert field in body and field in body["detail"]
    assert not Study.objects.exists()


def _form(**changes) -> dict:
    data = {
        "name": "s",
        "tasks": ["sst2"],
        "shots": ["0"],
        "chain": "1",
        "workers_per_cohort": "3",
        "pay_rate": "12",
        "filter_fraction": "0.5",
        "platform": "prolific",
        "worker_id_param": "worker_id",
        "test_order": "file",
        "idle_cap_seconds": "300",
    }
    data.update(changes)
    return data


@pytest.mark.parametrize(
    "field, value", [(f, v) for f, v in BAD if f != "shots"], ids=[f"{f}={v}" for f, v in BAD if f != "shots"]
)
def test_the_dashboard_form_refuses_the_same_values(dashboard, field, value):
    response = dashboard.post("/dashboard/studies/new/", _form(**{field: str(value)}))
    assert response.status_code == 400
    html = response.content.decode()
    section = html[html.index(f'id="field-{field}"') :]
    assert 'class="errorlist' in section[:1500]
    assert not Study.objects.exists()


def test_form_and_serializer_take_their_fields_and_limits_from_the_model():
    form_fields, api_fields = set(StudyForm().fields), set(StudyCreateSerializer().fields)
    assert form_fields == api_fields  # the same parameters and platform settings (plus "launch") in both
    assert {"manual_review", *Study.parameters()} <= api_fields
    api = StudyCreateSerializer().fields
    assert (api["workers_per_cohort"].min_value, api["workers_per_cohort"].max_value) == (
        1,
        Study.MAX_WORKERS_PER_COHORT,
    )
    assert api["pay_rate"].min_value == 0 and api["idle_cap_seconds"].min_value == 1


def test_valid_parameters_are_stored_as_given_through_the_api(api):
    response = api.post(
        "/api/studies/",
        {
            "name": "ok",
            "tasks": ["sst2"],
            "shots": [10, 0, 10],
            "pay_rate": "0",
            "idle_cap_seconds": 1,
            "workers_per_cohort": 1000,
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    study = Study.objects.get()
    assert (study.shots, str(study.pay_rate), study.idle_cap_seconds) == ([0, 10], "0.00", 1)
    assert Study._meta.get_field("shots").get_default() == list(Study.SHOT_CONDITIONS) == [0, 10, 20, 30]


def test_an_answer_form_with_spans_nested_1000_deep_is_a_400_not_a_500(researcher):
    study = make_study(tasks=["conll03"], shots=[0], created_by=researcher, platform="generic")
    client = Client()
    assert client.get(cohort(study, "conll03", 0).join_path, {"worker_id": "deep"}).status_code == 302
    enrollment = Enrollment.objects.get(worker__external_id="deep")
    handle = services.current_item(enrollment_id=enrollment.pk).item_handle
    response = client.post("/work/answer/", {"item": handle, "spans": "[" * 1000 + "]" * 1000})
    assert response.status_code == 400
    assert "could not be read" in response.content.decode()
    assert not Answer.objects.filter(enrollment=enrollment).exists()


def test_every_parameter_of_the_model_is_settable_from_the_form_the_api_and_launch_study(dashboard):
    """A new editable field of Study shows up in all three, or this fails: the page renders an input for it,
    the API's input serializer takes it, and launch_study has an option for it."""
    import argparse

    from annotation.management.commands.launch_study import Command as LaunchStudy

    parameters = set(Study.parameters())
    model_fields = {f.name for f in Study._meta.concrete_fields if f.editable and not f.primary_key}
    assert parameters == model_fields and {"platform", "pay_currency", "expected_minutes", "worker_id_pattern"} <= (
        parameters
    )
    # A platform's own settings are no study parameter: they come with the platform (annotation.platform_settings).
    settings = set(platform_settings.all_fields())
    assert "manual_review" in settings and not settings & parameters
    assert parameters | settings <= set(StudyForm().fields)
    assert parameters | settings <= set(StudyCreateSerializer().fields)
    parser = argparse.ArgumentParser()
    LaunchStudy().add_arguments(parser)
    assert parameters | settings <= {action.dest for action in parser._actions}
    page = dashboard.get("/dashboard/studies/new/").content.decode()
    assert [name for name in sorted(parameters | settings) if f'name="{name}"' not in page] == []


def test_launch_study_sets_what_it_could_not_before(researcher):
    from io import StringIO

    from django.core.management import call_command

    call_command(
        "launch_study",
        "--name",
        "all",
        "--tasks",
        "sst2",
        "--shots",
        "0",
        "--owner",
        researcher.username,
        "--pay-currency",
        "GBP",
        "--expected-minutes",
        "45",
        "--platform",
        "generic",
        "--worker-id-pattern",
        "[a-z]+",
        "--no-filter-fraction",
        stdout=StringIO(),
    )
    study = Study.objects.get()
    assert (
        study.pay_currency,
        study.expected_minutes,
        study.worker_id_pattern,
        study.filter_fraction,
    ) == ("GBP", 45, "[a-z]+", None)
    defaults = Study(name="x", tasks=["sst2"])
    assert study.idle_cap_seconds == defaults.idle_cap_seconds and study.chain == defaults.chain


def test_launch_study_takes_a_platforms_setting_for_that_platform_only(researcher):
    from io import StringIO

    from django.core.management import CommandError, call_command

    base = ["launch_study", "--name", "s", "--tasks", "sst2", "--shots", "0", "--owner", researcher.username]
    with pytest.raises(CommandError, match="manual_review: a setting of Prolific; this study recruits on generic link"):
        call_command(*base, "--platform", "generic", "--manual-review", stdout=StringIO(), stderr=StringIO())
    assert not Study.objects.exists()
    call_command(*base, "--platform", "prolific", "--manual-review", stdout=StringIO(), stderr=StringIO())
    study = Study.objects.get()
    assert study.provider.load_settings(study) == {"manual_review": True}
