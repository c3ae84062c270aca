"""A local trial in one step: the README's `launch_study` without a Prolific token makes a study one can join from this
machine (a generic link, said so), and `create_lab_workers` makes the accounts a lab study's workers log in with."""

import io

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import Client

from annotation import services
from annotation.models import Enrollment, Study

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clues")]


def launch(*args) -> tuple[list[str], str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("launch_study", "--name", "pilot", "--created-by", "rita", *args, stdout=out, stderr=err)
    return out.getvalue().splitlines(), err.getvalue()


def test_without_a_prolific_token_the_study_is_a_generic_link_one_can_try(researcher, settings):
    settings.PROLIFIC_API_TOKEN = ""
    lines, note = launch("--tasks", "sst2", "--shots", "0", "10")
    study = Study.objects.get()
    assert study.platform == "generic"
    assert "No Prolific token is configured (PROLIFIC_API_TOKEN)" in note and "--platform prolific" in note
    path = lines[1].split()[2]
    assert f"{path}?worker_id=me" in note
    # The README's trial: open the printed link with any worker id, and the test step (0 shots) begins.
    client = Client()
    response = client.get(path, {"worker_id": "me"})
    assert response.status_code == 302 and response["Location"] == "/work/"
    assert Enrollment.objects.get().worker.external_id == "me"
    assert client.get("/work/").status_code == 200


def test_with_a_prolific_token_or_an_explicit_platform_nothing_is_changed(researcher, settings):
    settings.PROLIFIC_API_TOKEN = "a-token"
    _, note = launch("--tasks", "sst2", "--shots", "0")
    settings.PROLIFIC_API_TOKEN = ""
    _, explicit = launch("--tasks", "sst2", "--shots", "0", "--platform", "prolific")
    assert list(Study.objects.order_by("pk").values_list("platform", flat=True)) == ["prolific", "prolific"]
    assert note == explicit == ""


def lab_workers(study: int, count: int) -> tuple[list[tuple[str, str]], str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("create_lab_workers", "--study", str(study), "--count", str(count), stdout=out, stderr=err)
    return [tuple(line.split()) for line in out.getvalue().splitlines()], err.getvalue()


def test_lab_accounts_log_in_and_join_their_study(researcher):
    lines, _ = launch("--tasks", "sst2", "--shots", "0", "--platform", "local")
    study = Study.objects.get()
    logins, note = lab_workers(study.pk, 3)
    assert [u for u, _ in logins] == [f"lab-s{study.pk}-001", f"lab-s{study.pk}-002", f"lab-s{study.pk}-003"]
    assert len({p for _, p in logins}) == 3 and all(len(p) >= 12 for _, p in logins)
    join = lines[1].split()[2]
    assert f"sst2 0 /accounts/login/?next={join}" in note

    # A second run adds accounts and leaves the first ones (and their passwords) alone.
    more, _ = lab_workers(study.pk, 2)
    assert [u for u, _ in more] == [f"lab-s{study.pk}-004", f"lab-s{study.pk}-005"]

    client = Client()
    assert client.get(join).status_code == 403  # not logged in: "log in with your lab account"
    response = client.post(f"/accounts/login/?next={join}", {"username": logins[0][0], "password": logins[0][1]})
    assert response.status_code == 302 and response["Location"] == join
    assert client.get(join).status_code == 302
    enrollment = Enrollment.objects.get()
    assert enrollment.worker.external_id == str(User.objects.get(username=logins[0][0]).pk)
    assert client.get("/dashboard/").status_code == 403  # a lab worker is not a researcher


def test_lab_accounts_only_for_a_lab_study_and_a_sane_count(researcher):
    launch("--tasks", "sst2", "--shots", "0", "--platform", "generic")
    study = Study.objects.get()
    with pytest.raises(CommandError, match="lab accounts are for a study launched with --platform local"):
        lab_workers(study.pk, 2)
    with pytest.raises(CommandError, match="--study: no study 999"):
        lab_workers(999, 2)
    launch("--tasks", "sst2", "--shots", "0", "--platform", "local")
    lab = Study.objects.latest("pk")
    for count in (0, 501):
        with pytest.raises(CommandError, match="--count: between 1 and 500"):
            lab_workers(lab.pk, count)
    assert not User.objects.filter(username__startswith="lab-").exists()


def test_lab_accounts_are_bound_to_their_study(researcher, other_researcher, plain_user):
    """Another researcher's lab worker, a researcher, or any other account of the site cannot enrol through a lab
    link: only the study's own lab accounts (the group create_lab_workers puts them in)."""
    lines, _ = launch("--tasks", "sst2", "--shots", "0", "--platform", "local")
    mine = Study.objects.get()
    theirs = services.create_study(
        name="theirs", tasks=["sst2"], shots=[0], platform="local", created_by=other_researcher, launch=True
    )
    (own_login,), _ = lab_workers(mine.pk, 1)
    (their_login,), _ = lab_workers(theirs.pk, 1)
    join = lines[1].split()[2]

    def join_as(username: str, password: str):
        client = Client()
        assert client.login(username=username, password=password)
        return client.get(join)

    for username, password in (their_login, ("rita", "pw-rita-123"), ("paula", "pw-paula-123")):
        page = join_as(username, password)
        assert page.status_code == 403, username
        assert "not one of this study&#x27;s lab accounts" in page.content.decode()
    superuser = User.objects.create_superuser("root", password="pw-root-123")
    assert join_as(superuser.username, "pw-root-123").status_code == 403
    assert not Enrollment.objects.exists(), "nobody but the study's own lab workers was enrolled"
    assert join_as(*own_login).status_code == 302
    assert Enrollment.objects.get().worker.user.username == own_login[0]
