"""Recruitment through the join link: exposure (rule 1), capacity, refusals, returning workers, MTurk."""

import pytest
from django.test import Client

from annotation import services
from annotation.models import Enrollment, Worker
from annotation.protocol import JoinRefusal
from tests.annotation.helpers import WorkerClient, cohort, join, make_study, prolific

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clues")]


def test_join_binds_the_session_sets_the_csrf_cookie_and_redirects_to_the_worker_ui():
    sst0 = cohort(make_study(shots=[0]), "sst2", 0)
    worker = WorkerClient(sst0, "P1")
    response = worker.join_response
    assert response.status_code == 302
    assert response["Location"] == "/work/"
    assert worker.csrf, "the join response sets Django's csrftoken cookie"
    enrollment = Enrollment.objects.get(worker__external_id="P1")
    assert worker.client.session["enrollment_id"] == enrollment.pk
    assert enrollment.platform_data == {"STUDY_ID": "study-1", "SESSION_ID": "session-P1"}
    assert enrollment.state == Enrollment.State.TESTING  # 0 shots: straight to the test step


def test_one_cohort_per_task_per_worker_ever_across_studies():
    first, second = make_study(shots=[0, 10]), make_study(shots=[0])
    join(cohort(first, "sst2", 10), "P1")
    # Another cohort of the same study, and a cohort of another study, on the same task: refused.
    for other in (cohort(first, "sst2", 0), cohort(second, "sst2", 0)):
        with pytest.raises(services.JoinRefused) as refused:
            join(other, "P1")
        assert refused.value.reason == JoinRefusal.ALREADY_EXPOSED  # rule 1; the page answers 409
    page = WorkerClient(cohort(second, "sst2", 0), "P1").join_response
    assert page.status_code == 409
    assert "already taken part" in page.content.decode()
    assert Enrollment.objects.filter(worker__external_id="P1").count() == 1


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
    assert not Enrollment.objects.filter(worker__external_id="P3").exists()


@pytest.mark.parametrize("how", ["cohort", "study", "not launched"])
def test_a_closed_or_unlaunched_cohort_refuses_with_403(researcher, how):
    study = make_study(shots=[0], launch=how != "not launched")
    sst0 = cohort(study, "sst2", 0)
    if how == "cohort":
        services.close_cohort(sst0, actor="rita")
    elif how == "study":
        services.close_study(study, actor="rita")
    page = WorkerClient(sst0, "P1").join_response
    assert page.status_code == 403
    assert "closed" in page.content.decode()
    assert not Enrollment.objects.exists()


def test_unknown_link_404_and_missing_parameter_400():
    sst0 = cohort(make_study(shots=[0]), "sst2", 0)
    assert Client().get("/join/not-a-token/").status_code == 404
    page = WorkerClient(sst0, params={}).join_response
    assert page.status_code == 400
    assert "PROLIFIC_PID" in page.content.decode()


def test_a_returning_worker_is_taken_back_to_the_same_enrollment():
    sst10 = cohort(make_study(shots=[10]), "sst2", 10)
    worker = WorkerClient(sst10, "P1")
    first = worker.client.session["enrollment_id"]
    again = worker.client.get(sst10.join_path, prolific("P1"))
    assert again.status_code == 302
    assert worker.client.session["enrollment_id"] == first
    # Another browser with the same Prolific session id (the platform re-opened the link): taken back too.
    elsewhere = WorkerClient(sst10, "P1")
    assert elsewhere.join_response.status_code == 302
    assert elsewhere.client.session["enrollment_id"] == first
    # Another browser claiming the id without the platform's session: refused.
    stranger = WorkerClient(sst10, params={"PROLIFIC_PID": "P1", "SESSION_ID": "forged"})
    assert stranger.join_response.status_code == 403
    assert Enrollment.objects.count() == 1


def test_a_returning_worker_is_taken_back_even_when_the_cohort_is_full_or_closed():
    study = make_study(shots=[0], workers_per_cohort=1)
    sst0 = cohort(study, "sst2", 0)
    worker = WorkerClient(sst0, "P1")
    services.close_study(study, actor="rita")
    assert worker.client.get(sst0.join_path, prolific("P1")).status_code == 302


def test_mturk_preview_shows_the_task_and_enrolls_nobody_then_accepting_enrolls():
    sst10 = cohort(make_study(shots=[10], platform="mturk"), "sst2", 10)
    preview = Client().get(sst10.join_path, {"assignmentId": services.MTURK_PREVIEW, "hitId": "H"})
    assert preview.status_code == 200
    assert "movie review" in preview.content.decode()  # the task description
    assert not Enrollment.objects.exists() and not Worker.objects.exists()
    params = {"assignmentId": "A1", "hitId": "H", "workerId": "W1", "turkSubmitTo": "https://workersandbox.mturk.com"}
    accepted = WorkerClient(sst10, params=params)
    assert accepted.join_response.status_code == 302
    enrollment = Enrollment.objects.get()
    assert (enrollment.worker.platform, enrollment.worker.external_id) == ("mturk", "W1")
    assert enrollment.platform_data["assignmentId"] == "A1"


def test_generic_platform_reads_the_configured_parameter():
    sst0 = cohort(make_study(shots=[0], platform="generic", worker_id_param="uid"), "sst2", 0)
    assert WorkerClient(sst0, params={"worker_id": "x"}).join_response.status_code == 400
    assert WorkerClient(sst0, params={"uid": "U1"}).join_response.status_code == 302
    assert Enrollment.objects.get().worker.external_id == "U1"


def test_local_platform_needs_a_logged_in_account(plain_user):
    sst0 = cohort(make_study(shots=[0], platform="local"), "sst2", 0)
    assert Client().get(sst0.join_path).status_code == 403
    client = Client()
    client.force_login(plain_user)
    assert client.get(sst0.join_path).status_code == 302
    assert Enrollment.objects.get().worker.user == plain_user


def test_the_refusal_page_escapes_text():
    sst0 = cohort(make_study(shots=[0]), "sst2", 0)
    page = WorkerClient(sst0, params={"PROLIFIC_PID": "<b>" + "x" * 200}).join_response
    assert page.status_code == 400
    assert "<b>" not in page.content.decode()
