"""Recruitment through the join link: exposure (rule 1), capacity, refusals, returning workers, MTurk."""

import re

import pytest
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.test import Client

from annotation import services
from annotation.models import Enrollment, Worker
from annotation.protocol import JoinRefusal
from crowd import mturk
from crowd.lab import group_name as lab_group
from tests.annotation.factories import WorkerClient, cohort, join, make_study, pid_for, prolific

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clues")]


def test_join_binds_the_session_sets_the_csrf_cookie_and_redirects_to_the_worker_ui():
    sst0 = cohort(make_study(shots=[0]), "sst2", 0)
    worker = WorkerClient(sst0, "P1")
    response = worker.join_response
    assert response.status_code == 302
    assert response["Location"] == "/work/"
    assert worker.csrf, "the join response sets Django's csrftoken cookie"
    enrollment = Enrollment.objects.get(worker__external_id=pid_for("P1"))
    assert worker.enrollment_id == enrollment.pk
    assert enrollment.platform_data == {"STUDY_ID": "study-1", "SESSION_ID": "session-P1"}
    assert enrollment.state == Enrollment.State.TESTING  # 0 shots: straight to the test step


def test_one_cohort_per_task_per_worker_ever_across_studies():
    first, second = make_study(shots=[0, 10]), make_study(shots=[0])
    join(cohort(first, "sst2", 10), "P1")
    # Another cohort of the same study, and a cohort of another study, on the same task: refused.
    for other in (cohort(first, "sst2", 0), cohort(second, "sst2", 0)):
        with pytest.raises(services.JoinRefused) as refused:
            join(other, "P1")
        assert refused.value.reason == JoinRefusal.NOT_ALLOWED  # rule 1, said as 'not allowed' (the page answers 403)
    page = WorkerClient(cohort(second, "sst2", 0), "P1").join_response
    assert page.status_code == 403
    assert services.NOT_ALLOWED[1:] in page.content.decode()
    assert Enrollment.objects.filter(worker__external_id=pid_for("P1")).count() == 1


def test_exposure_is_per_task_a_worker_may_join_another_task():
    study = make_study(tasks=["sst2", "mnli"], shots=[0])
    join(cohort(study, "sst2", 0), "P1")
    assert join(cohort(study, "mnli", 0), "P1").task.slug == "mnli"


def test_a_full_cohort_refuses_with_409_and_says_so():
    sst0 = cohort(make_study(shots=[0], workers_per_cohort=2), "sst2", 0)
    join(sst0, "P1")
    join(sst0, "P2")
    page = WorkerClient(sst0, "P3").join_response
    assert page.status_code == 409
    assert "full" in page.content.decode()
    assert not Enrollment.objects.filter(worker__external_id=pid_for("P3")).exists()


@pytest.mark.parametrize(
    ("how", "says"), [("cohort", "has ended"), ("study", "has ended"), ("not launched", "not open yet")]
)
def test_a_closed_or_unlaunched_cohort_refuses_with_403_saying_what_is_true(researcher, how, says):
    study = make_study(shots=[0], launch=how != "not launched")
    sst0 = cohort(study, "sst2", 0)
    if how == "cohort":
        services.close_cohort(cohort=sst0, actor="rita")
    elif how == "study":
        services.close_study(study=study, actor="rita")
    page = WorkerClient(sst0, "P1").join_response
    assert page.status_code == 403
    assert says in page.content.decode()
    assert "return your submission" in page.content.decode()
    assert not Enrollment.objects.exists()
    assert not Worker.objects.exists(), "a refused join stores nothing"


def test_unknown_link_404_and_missing_parameter_400():
    sst0 = cohort(make_study(shots=[0]), "sst2", 0)
    assert Client().get("/join/not-a-token/").status_code == 404
    page = WorkerClient(sst0, params={}).join_response
    assert page.status_code == 400
    assert "PROLIFIC_PID" in page.content.decode()


def test_a_returning_worker_is_taken_back_to_the_same_enrollment():
    sst10 = cohort(make_study(shots=[10]), "sst2", 10)
    worker = WorkerClient(sst10, "P1")
    first = worker.enrollment_id
    again = worker.client.get(sst10.join_path, prolific("P1"))
    assert again.status_code == 302
    assert worker.enrollment_id == first
    # Another browser with the same Prolific session id (the platform re-opened the link): taken back too.
    elsewhere = WorkerClient(sst10, "P1")
    assert elsewhere.join_response.status_code == 302
    assert elsewhere.enrollment_id == first
    # Another browser claiming the id without the platform's session: refused.
    stranger = WorkerClient(sst10, params={"PROLIFIC_PID": pid_for("P1"), "SESSION_ID": "forged"})
    assert stranger.join_response.status_code == 403
    assert Enrollment.objects.count() == 1


def test_a_returning_worker_is_taken_back_even_when_the_cohort_is_full_or_closed():
    study = make_study(shots=[0], workers_per_cohort=1)
    sst0 = cohort(study, "sst2", 0)
    worker = WorkerClient(sst0, "P1")
    services.close_study(study=study, actor="rita")
    assert worker.client.get(sst0.join_path, prolific("P1")).status_code == 302


def test_mturk_preview_shows_the_task_and_enrolls_nobody_then_accepting_enrolls():
    sst10 = cohort(make_study(shots=[10], platform="mturk"), "sst2", 10)
    preview = Client().get(sst10.join_path, {"assignmentId": mturk.PREVIEW, "hitId": "H"})
    assert preview.status_code == 200
    assert "movie review" in preview.content.decode()  # the task description
    assert not Enrollment.objects.exists() and not Worker.objects.exists()
    params = {"assignmentId": "A1", "hitId": "H", "workerId": "W1", "turkSubmitTo": "https://workersandbox.mturk.com"}
    accepted = WorkerClient(sst10, params=params)
    assert accepted.join_response.status_code == 302
    enrollment = Enrollment.objects.get()
    assert (enrollment.worker.platform, enrollment.worker.external_id) == ("mturk", "W1")  # upper-case alphanumeric
    assert enrollment.platform_data["assignmentId"] == "A1"


def test_generic_platform_reads_the_configured_parameter():
    sst0 = cohort(make_study(shots=[0], platform="generic", worker_id_param="uid"), "sst2", 0)
    assert WorkerClient(sst0, params={"worker_id": "x"}).join_response.status_code == 400
    assert WorkerClient(sst0, params={"uid": "U1"}).join_response.status_code == 302
    assert Enrollment.objects.get().worker.external_id == "U1"


def test_local_platform_needs_a_logged_in_account_of_the_study(plain_user):
    study = make_study(shots=[0], platform="local")
    sst0 = cohort(study, "sst2", 0)
    assert Client().get(sst0.join_path).status_code == 403
    client = Client()
    client.force_login(plain_user)
    refused = client.get(sst0.join_path)
    assert refused.status_code == 403 and "not one of this study&#x27;s lab accounts" in refused.content.decode()
    assert not Enrollment.objects.exists()
    plain_user.groups.add(Group.objects.create(name=lab_group(study.pk)))
    assert client.get(sst0.join_path).status_code == 302
    assert Enrollment.objects.get().worker.user == plain_user


def test_the_refusal_page_escapes_text():
    sst0 = cohort(make_study(shots=[0]), "sst2", 0)
    page = WorkerClient(sst0, params={"PROLIFIC_PID": "<b>" + "x" * 200}).join_response
    assert page.status_code == 400
    assert "<b>" not in page.content.decode()


# ---------------------------------------------------------------- identity, MTurk target, codes

PID = "5f0c1a2b3c4d5e6f7a8b9c0d"


@pytest.mark.parametrize(
    "bad",
    [
        "P1",
        "5f0c1a2b3c4d5e6f7a8b9c0",
        "5f0c1a2b3c4d5e6f7a8b9c0dd",
        "5f0c1a2b3c4d5e6f7a8b9c0g",
        "5f0c1a2b-c4d5e6f7a8b9c0d",
    ],
)
def test_a_malformed_prolific_pid_is_refused_and_nothing_is_stored(bad):
    sst0 = cohort(make_study(shots=[0]), "sst2", 0)
    page = WorkerClient(sst0, params={"PROLIFIC_PID": bad, "SESSION_ID": "s"}).join_response
    assert page.status_code == 400
    assert "24 hexadecimal" in page.content.decode()
    assert not Worker.objects.exists(), "no Worker row for a refused join"


def test_a_prolific_pid_is_normalised_case_and_whitespace():
    sst0 = cohort(make_study(shots=[0]), "sst2", 0)
    page = WorkerClient(sst0, params={"PROLIFIC_PID": f"  {PID.upper()} ", "SESSION_ID": "s1"}).join_response
    assert page.status_code == 302
    assert Worker.objects.get().external_id == PID


def test_an_mturk_worker_id_is_upper_case_alphanumeric():
    sst0 = cohort(make_study(shots=[0], platform="mturk"), "sst2", 0)
    ok = WorkerClient(sst0, params={"assignmentId": "A1", "workerId": "a1b2c3"}).join_response
    assert ok.status_code == 302 and Worker.objects.get().external_id == "A1B2C3"
    bad = WorkerClient(sst0, params={"assignmentId": "A2", "workerId": "A1-B2"}).join_response
    assert bad.status_code == 400 and Worker.objects.count() == 1


def test_the_generic_worker_id_pattern_is_configurable_per_study():
    sst0 = cohort(make_study(shots=[0], platform="generic", worker_id_pattern=r"[a-z]{3}\d{3}"), "sst2", 0)
    assert WorkerClient(sst0, params={"worker_id": "abc12"}).join_response.status_code == 400
    assert WorkerClient(sst0, params={"worker_id": "abc123"}).join_response.status_code == 302
    with pytest.raises(ValidationError, match="regular expression"):
        make_study(shots=[0], platform="generic", worker_id_pattern="([")


@pytest.mark.parametrize(
    "target",
    [
        "javascript:alert(document.cookie)",
        "https://evil.example",
        "https://www.mturk.com.evil.example",
        "https://user@www.mturk.com",
        "http://www.mturk.com",
        "https://www.mturk.com/elsewhere",
        "//evil.example",
    ],
)
def test_mturk_turk_submit_to_outside_mturk_is_refused_at_join(target):
    sst0 = cohort(make_study(shots=[0], platform="mturk"), "sst2", 0)
    page = WorkerClient(sst0, params={"assignmentId": "A1", "workerId": "W1", "turkSubmitTo": target}).join_response
    assert page.status_code == 400
    assert "turkSubmitTo" in page.content.decode()
    assert not Worker.objects.exists()


@pytest.mark.parametrize("host", ["https://www.mturk.com", "https://workersandbox.mturk.com/"])
def test_mturk_own_hosts_are_accepted_and_become_the_completion_target(host):
    sst0 = cohort(make_study(shots=[0], platform="mturk"), "sst2", 0)
    WorkerClient(sst0, params={"assignmentId": "A1", "workerId": "W1", "turkSubmitTo": host})
    enrollment = Enrollment.objects.get()
    enrollment.state = Enrollment.State.COMPLETED
    assert services.completion(enrollment=enrollment).post_url == host.rstrip("/") + "/mturk/externalSubmit"


@pytest.mark.parametrize("code", ["C 1", "C&x=1", "ab/c", "é1", "C1\n"])
def test_completion_and_screen_out_codes_are_letters_and_digits(code):
    with pytest.raises(ValidationError, match="letters and digits"):
        make_study(shots=[0], completion_code=code)
    with pytest.raises(ValidationError, match="letters and digits"):
        make_study(shots=[0], screenout_code=code)


def test_a_code_stored_with_other_characters_is_given_with_letters_and_digits_only():
    from annotation.models import Study

    study = make_study(shots=[0])
    Study.objects.filter(pk=study.pk).update(completion_code="C&cc=EVIL")  # stored before the validation
    enrollment = join(cohort(study, "sst2", 0), "P1")
    enrollment.state = Enrollment.State.COMPLETED
    done = services.completion(enrollment=enrollment)
    assert done.code.startswith("CccEVIL") and done.code.isalnum(), "a code holds letters and digits only"
    assert done.redirect_url.endswith(f"?cc={done.code}")


def test_the_join_page_does_not_tell_whether_a_pid_took_part_before():
    study = make_study(shots=[0, 10])
    took_part = join(cohort(study, "sst2", 10), "P1")
    assert took_part.state
    sst0 = cohort(study, "sst2", 0)
    # A PID that took part in another cohort of the task, vs a never-seen PID from a browser bound to another id.
    first = WorkerClient(sst0, "P1").join_response
    bound = WorkerClient(cohort(study, "sst2", 10), "P2")
    second = bound.client.get(sst0.join_path, prolific("P3"))
    assert first.status_code == second.status_code == 403

    def shown(page):  # the page without its per-response CSRF token
        return re.sub(r'"X-CSRFToken": "[^"]*"', "", page.content.decode())

    assert shown(first) == shown(second)
