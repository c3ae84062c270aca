"""manage.py launch_study, and the admin (read-only answers and audit log)."""

import io

import pytest
from django.contrib import admin
from django.contrib.auth.models import Group, User
from django.core.management import CommandError, call_command
from django.test import Client

from annotation.models import Answer, AuditEvent, Cohort, Enrollment, Study, Worker
from tests.annotation.factories import WorkerClient, cohort, complete, make_study, trim_test_set

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clues")]


def launch(*args) -> list[str]:
    out = io.StringIO()
    call_command("launch_study", *args, stdout=out)
    return out.getvalue().splitlines()


def test_launch_study_creates_launches_and_prints_the_join_paths(researcher):
    lines = launch(
        "--name",
        "pilot",
        "--tasks",
        "conll03",
        "sst2",
        "--shots",
        "0",
        "10",
        "--workers",
        "2",
        "--rate",
        "15.5",
        "--platform",
        "generic",
        "--created-by",
        "rita",
    )
    study = Study.objects.get()
    assert lines[0] == f"study {study.pk}"
    expected = [
        f"{c.task.slug} {c.shots} {c.join_path}"
        for c in sorted(
            study.cohorts.select_related("task"), key=lambda c: (["conll03", "sst2"].index(c.task.slug), c.shots)
        )
    ]
    assert lines[1:] == expected and len(expected) == 4
    assert lines[1].split()[:2] == ["conll03", "0"] and lines[1].split()[2].startswith("/join/")
    assert (study.workers_per_cohort, str(study.pay_rate), study.platform, study.created_by) == (
        2,
        "15.50",
        "generic",
        researcher,
    )
    assert all(c.launched_at for c in study.cohorts.all())
    path = lines[-1].split()[2]
    assert Client().get(path, {"worker_id": "w1"}).status_code == 302


@pytest.mark.parametrize(
    "args, message",
    [
        (["--tasks", "nope"], "tasks: unknown task: nope; known tasks: sst2, mnli, conll03, wikiann, squad2, record"),
        (["--tasks", "squadv2"], r"tasks: unknown task: squadv2 \(did you mean squad2\?\); known tasks: sst2, mnli"),
        (["--tasks", "sst2", "--shots", "5"], "shots: shots must be among"),
        (["--tasks", "sst2", "--workers", "0"], "workers_per_cohort"),
        (["--tasks", "sst2", "--chain", "9"], "chain"),
        (["--tasks", "sst2", "--created-by", "nobody"], "--owner: no user 'nobody'"),
        (["--tasks", "sst2", "--rate", "-1"], "pay_rate"),
        (["--tasks", "sst2", "--idle-cap", "0"], "idle_cap_seconds"),
        (["--tasks", "sst2", "--shots", str(2**63)], "shots: shots must be among"),
        (["--tasks", "sst2", "--platform", "myspace"], "invalid choice"),
        (["--tasks", "sst2", "--rate", "cheap"], "--rate"),
    ],
)
def test_launch_study_bad_arguments_name_the_problem(args, message, local_researcher):
    with pytest.raises(CommandError, match=message):
        launch("--name", "x", *args)
    assert not Study.objects.exists()


@pytest.fixture
def local_researcher(db):
    user = User.objects.create_user("researcher")
    user.groups.add(Group.objects.get_or_create(name="researchers")[0])
    return user


def test_launch_study_as_documented_belongs_to_the_local_researcher(local_researcher, other_researcher):
    """README: `launch_study --name pilot --tasks ...` after `make run`: the local researcher's dashboard shows it."""
    launch("--name", "pilot", "--tasks", "sst2", "--shots", "0")
    study = Study.objects.get()
    assert study.created_by == local_researcher
    client = Client()
    client.force_login(local_researcher)
    assert "pilot" in client.get("/dashboard/").content.decode()
    client.force_login(other_researcher)
    assert client.get(f"/dashboard/studies/{study.pk}/").status_code == 404


def test_launch_study_owner_flag_and_clear_errors(researcher, plain_user):
    with pytest.raises(CommandError, match="ensure_local_researcher"):
        launch("--name", "x", "--tasks", "sst2")  # no local researcher, no --owner
    with pytest.raises(CommandError, match="not a researcher"):
        launch("--name", "x", "--tasks", "sst2", "--owner", plain_user.username)
    launch("--name", "mine", "--tasks", "sst2", "--shots", "0", "--owner", "rita", "--idle-cap-seconds", "60")
    study = Study.objects.get()
    assert (study.created_by, study.idle_cap_seconds) == (researcher, 60)


@pytest.mark.parametrize("model", [Study, Cohort, Worker, Enrollment, Answer, AuditEvent])
def test_every_protocol_model_is_in_the_admin(model):
    assert admin.site.is_registered(model)


def test_answers_and_the_audit_log_are_read_only_in_the_admin(superuser):
    trim_test_set("sst2", 2)
    complete(cohort(make_study(shots=[0]), "sst2", 0), "P1")
    answer, event = Answer.objects.first(), AuditEvent.objects.first()
    client = Client()
    client.force_login(superuser)
    for model, obj in ((Answer, answer), (AuditEvent, event)):
        name = model._meta.model_name
        assert client.get(f"/admin/annotation/{name}/").status_code == 200
        assert client.get(f"/admin/annotation/{name}/{obj.pk}/change/").status_code == 200  # view only
        assert client.get(f"/admin/annotation/{name}/add/").status_code == 403
        assert client.post(f"/admin/annotation/{name}/{obj.pk}/change/", {}).status_code == 403
        assert client.post(f"/admin/annotation/{name}/{obj.pk}/delete/", {"post": "yes"}).status_code == 403
        model_admin = admin.site._registry[model]
        request = client.get("/").wsgi_request
        request.user = superuser
        assert not model_admin.has_add_permission(request)
        assert not model_admin.has_change_permission(request, obj)
        assert not model_admin.has_delete_permission(request, obj)
    assert Answer.objects.filter(pk=answer.pk).exists() and AuditEvent.objects.filter(pk=event.pk).exists()


def test_the_study_admin_shows_every_parameter_of_a_study(superuser):
    """Every editable Study field is on the admin's study page, and only the name can be changed there (a field
    left off the read-only list would be an input, changed past the services' checks)."""
    study = make_study(shots=[0])
    client = Client()
    client.force_login(superuser)
    page = client.get(f"/admin/annotation/study/{study.pk}/change/").content.decode()
    editable = [f.name for f in Study._meta.concrete_fields if f.editable and not f.primary_key]
    assert len(editable) >= 18 and {"pay_currency", "worker_id_pattern", "expected_minutes"} <= set(editable)
    missing = [name for name in editable if f"field-{name}" not in page]
    assert missing == []
    assert 'name="name"' in page
    inputs = [name for name in editable if name != "name" and f'name="{name}"' in page]
    assert inputs == []


def test_the_study_admin_lists_studies_with_their_cohorts(superuser):
    study = make_study(shots=[0, 10])
    WorkerClient(cohort(study, "sst2", 0), "P1")
    client = Client()
    client.force_login(superuser)
    assert client.get("/admin/annotation/study/").status_code == 200
    page = client.get(f"/admin/annotation/study/{study.pk}/change/")
    assert page.status_code == 200 and "sst2" in page.content.decode()
    assert cohort(study, "sst2", 10).join_token not in page.content.decode()  # the dashboard has join links
    assert client.get("/admin/annotation/enrollment/").status_code == 200
