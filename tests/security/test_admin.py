"""The Django admin is for operators (superusers) only, and lists no secret (clues_platform/admin.py).

Researchers were once staff with every model permission, and the admin knew nothing of who
owned a study: a second researcher read another's completion code, join tokens and workers'
SESSION_IDs there, and changed a shared gold answer. Every registered model's changelist, change,
add, delete and history views are tried as that second researcher, even given staff and every
permission, through the test client.
"""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.contrib.auth.models import Group, Permission, User
from django.test import Client
from django.urls import reverse
from rest_framework.authtoken.models import Token

from annotation import services
from annotation.models import Answer, AuditEvent, Enrollment
from baselines.models import BaselineRun
from tasks_data.models import Example, Task
from tests.annotation.factories import cohort, make_study, pid_for

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clues")]

COMPLETION, SCREENOUT, SESSION = "C0MPLETECANARY", "SCREEN0UTCANARY", "session-canary-4f1d9b"


@pytest.fixture
def owned(researcher):
    """Rita's study with one enrollment and an answer, an audit event, an API token and a baseline run."""
    study = make_study(shots=[0], created_by=researcher, completion_code=COMPLETION, screenout_code=SCREENOUT)
    sst0 = cohort(study, "sst2", 0)
    services.join(
        token=sst0.join_token, params={"PROLIFIC_PID": pid_for("P-ADMIN-1"), "STUDY_ID": "s", "SESSION_ID": SESSION}
    )
    enrollment = Enrollment.objects.get(worker__external_id=pid_for("P-ADMIN-1"))
    assert enrollment.platform_session == SESSION
    example = Example.objects.filter(task=sst0.task).first()
    Answer.objects.create(enrollment=enrollment, step="test", position=0, example=example, texts=["x"], s1=0.0)
    AuditEvent.objects.create(study=study, actor="rita", action="test")
    BaselineRun.objects.create(task=Task.objects.get(slug="sst2"), method="ft", shots=0, split=1, seed=1)
    token = Token.objects.create(user=researcher)
    return {"study": study, "join_token": sst0.join_token, "api_token": token.key}


def admin_urls():
    """For every registered model: its changelist, add, and the change, delete and history views of one object."""
    urls = [reverse("admin:index")]
    for model in admin.site._registry:
        prefix = f"admin:{model._meta.app_label}_{model._meta.model_name}"
        urls += [reverse(f"{prefix}_changelist"), reverse(f"{prefix}_add")]
        obj = model._default_manager.order_by("pk").last()
        assert obj is not None, f"no {model.__name__} to try the change view with"
        urls += [reverse(f"{prefix}_{view}", args=[obj.pk]) for view in ("change", "delete", "history")]
    return urls


def test_every_registered_model_is_covered(owned):
    names = {m._meta.label for m in admin.site._registry}
    assert {
        "annotation.Study",
        "annotation.Enrollment",
        "tasks_data.Example",
        "auth.User",
        "baselines.BaselineRun",
    } <= names
    assert "authtoken.TokenProxy" not in names  # a token's key is its name on every admin page
    assert len(admin_urls()) == 1 + 5 * len(names)


def test_a_second_researcher_gets_nothing_from_the_admin_even_as_staff_with_every_permission(owned, other_researcher):
    study = owned["study"]
    name_before = study.name
    gold_before = {e.pk: e.gold for e in Example.objects.all()[:50]}
    # The worst case: a researcher account made staff and given every permission by hand.
    other_researcher.is_staff = True
    other_researcher.save()
    other_researcher.user_permissions.add(*Permission.objects.all())
    other_researcher.groups.add(Group.objects.get(name="researchers"))
    client = Client()
    client.force_login(other_researcher)
    for url in admin_urls():
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/admin/login/"), url
        assert COMPLETION not in response.content.decode() and SESSION not in response.content.decode()
    # Writes are refused the same way: renaming the study, changing a gold answer.
    response = client.post(reverse("admin:annotation_study_change", args=[study.pk]), {"name": "renamed"})
    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")
    example = Example.objects.order_by("pk").first()
    response = client.post(reverse("admin:tasks_data_example_change", args=[example.pk]), {"gold": "[]"})
    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")
    study.refresh_from_db()
    assert study.name == name_before
    assert {e.pk: e.gold for e in Example.objects.filter(pk__in=gold_before)} == gold_before
    # Logging in through the admin's form does not open it either.
    login = Client().post(reverse("admin:login"), {"username": "oscar", "password": "pw-oscar-123"})
    assert login.status_code == 200 and "_auth_user_id" not in login.client.session
    # The dashboard and the API still work for the researcher, who is not staff.
    rita = Client()
    rita.force_login(owned["study"].created_by)
    assert not owned["study"].created_by.is_staff
    assert rita.get(reverse("dashboard")).status_code == 200
    assert rita.get(reverse("dashboard-study", args=[study.pk])).status_code == 200
    assert rita.get(reverse("protocol:study-detail", args=[study.pk])).status_code == 200


@pytest.mark.parametrize("who", ["researcher", "plain", "anonymous"])
def test_only_superusers_open_the_admin(owned, who, researcher, plain_user):
    client = Client()
    if who != "anonymous":
        client.force_login(researcher if who == "researcher" else plain_user)
    response = client.get(reverse("admin:index"))
    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")


def test_the_dashboard_links_the_admin_for_operators_only(researcher, superuser):
    admin_link = f'href="{reverse("admin:index")}"'
    for user, shown in ((researcher, False), (superuser, True)):
        client = Client()
        client.force_login(user)
        body = client.get(reverse("dashboard")).content.decode()
        assert (admin_link in body) is shown, user


def test_the_admin_works_for_a_superuser_and_lists_no_secret(owned, superuser):
    client = Client()
    client.force_login(superuser)
    secrets_ = {
        "completion code": COMPLETION,
        "screen-out code": SCREENOUT,
        "platform session": SESSION,
        "join token": owned["join_token"],
        "API token": owned["api_token"],
    }
    for url in admin_urls():
        response = client.get(url)
        assert response.status_code in (200, 403), url  # 403: a view-only model's add or delete view
        if "/add/" not in url and "/delete/" not in url:
            assert response.status_code == 200, url
        body = response.content.decode()
        for what, value in secrets_.items():
            if what in ("completion code", "screen-out code") and url == reverse(
                "admin:annotation_study_change", args=[owned["study"].pk]
            ):
                continue  # an operator may read a study's codes on its own page, never in a list
            assert value not in body, f"{what} shown at {url}"
    # The superuser can still edit what the admin allows (a study's name).
    study = owned["study"]
    response = client.get(reverse("admin:annotation_study_change", args=[study.pk]))
    assert COMPLETION in response.content.decode()  # the control: the canary is findable where it is shown


def test_an_operator_logs_in_through_the_admin_form(superuser):
    client = Client()
    response = client.post(reverse("admin:login"), {"username": "root", "password": "pw-root-123", "next": "/admin/"})
    assert response.status_code == 302
    assert client.get("/admin/").status_code == 200


def test_a_superuser_without_the_staff_flag_is_still_an_operator(db):
    root = User.objects.create_user("op", password="pw-op-12345", is_superuser=True, is_staff=False)
    client = Client()
    client.force_login(root)
    assert client.get("/admin/").status_code == 200
