"""The way back for a worker who lost their browser (fake Prolific, real HTTP surface): a Prolific participant whose
session Prolific confirms as theirs and active is rebound; a finished one gets the completion code again; generic-link
workers come back with the resume code from the description page; everyone else is told what to do."""

import pytest
from django.test import Client

from annotation.models import AuditEvent, Enrollment
from tests.annotation.factories import WorkerClient, cohort, done_code, gold_answer, make_study, pid_for, trim_test_set
from tests.recruitment.journeys import arrive, finish, published

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clues")]


def answer_one(worker):

    state = worker.current().json()
    example = worker.example(state["item"]["id"])
    assert worker.answer(worker.handle(example), gold_answer(example)).status_code in (200, 201)
    return worker.current().json()


def back(c, pid, sid):
    return WorkerClient(c, params={"PROLIFIC_PID": pid, "STUDY_ID": c.prolific.prolific_study_id, "SESSION_ID": sid})


def test_a_prolific_participant_who_lost_their_browser_continues_where_they_stopped(fake, researcher):
    study = published(fake, researcher, shots=(10,), workers_per_cohort=2)
    c = cohort(study, "sst2", 10)
    worker, pid, sid = arrive(fake, c, "lost-cookie")
    answer_one(worker)
    before = answer_one(worker)
    new_browser = back(c, pid, sid)
    assert new_browser.join_response.status_code == 302
    now = new_browser.current().json()
    assert now["progress"] == before["progress"] and now["item"] == before["item"], "where they stopped"
    assert Enrollment.objects.filter(worker__external_id=pid).count() == 1
    assert AuditEvent.objects.filter(action="rebind", reason__contains="confirmed by Prolific").count() == 1
    assert [call for call in fake.calls if call[1].endswith(f"/submissions/{sid}/")][-1][0] == "GET", (
        "the return was checked with Prolific"
    )


def test_a_finished_participant_gets_their_completion_code_again(fake, researcher):
    study = published(fake, researcher, shots=(0,))
    c = cohort(study, "sst2", 0)
    worker, pid, sid = arrive(fake, c, "finished-lost")
    finish(worker)
    new_browser = back(c, pid, sid)
    assert new_browser.join_response.status_code == 302
    page = new_browser.client.get("/work/").content.decode()
    assert done_code(c) in page


@pytest.mark.parametrize(
    "case", ["returned on Prolific", "Prolific unreachable", "another session", "Prolific refuses"]
)
def test_a_known_pid_and_session_are_not_enough_without_prolifics_confirmation(fake, researcher, case):
    study = published(fake, researcher, shots=(0,), workers_per_cohort=3)
    c = cohort(study, "sst2", 0)
    worker, pid, sid = arrive(fake, c, "owner")
    session = sid
    if case == "returned on Prolific":
        fake.set_status(sid, "RETURNED")
    elif case == "Prolific unreachable":
        fake.down = True
    elif case == "another session":
        session = fake.start_submission(c.prolific.prolific_study_id, pid_for("someone"), force=True)
    else:
        fake.fail_next, fake.fail_status = 3, 401
    intruder = back(c, pid, session)
    assert intruder.join_response.status_code == 403, case
    assert intruder.current().json().get("item") is None, f"{case}: not bound to the enrollment"
    text = intruder.join_response.content.decode()
    if case == "Prolific unreachable":
        assert "in a few minutes" in text
    assert not AuditEvent.objects.filter(action="rebind").exists()


def test_the_refusal_page_tells_a_prolific_participant_how_to_come_back(fake, researcher):
    study = published(fake, researcher, shots=(0,), workers_per_cohort=3)
    c = cohort(study, "sst2", 0)
    worker, pid, sid = arrive(fake, c, "twice")
    other = published(fake, researcher, shots=(0,), workers_per_cohort=3)  # same task, another study
    o = cohort(other, "sst2", 0)
    page = Client().get(
        o.join_path,
        {
            "PROLIFIC_PID": pid,
            "STUDY_ID": o.prolific.prolific_study_id,
            "SESSION_ID": fake.start_submission(o.prolific.prolific_study_id, pid),
        },
    )
    text = page.content.decode()
    assert page.status_code == 403
    assert (
        "open it again from the study&#x27;s page on Prolific" in text or "open it again from the study's page" in text
    )
    assert "Do not return your submission in that case" in text


def test_a_generic_link_worker_comes_back_with_the_resume_code(researcher):
    trim_test_set("sst2", 3)
    c = cohort(make_study(shots=[0], platform="generic", created_by=researcher), "sst2", 0)
    first = WorkerClient(c, params={"worker_id": "w-resume-1"})
    assert first.join_response.status_code == 302
    description = first.client.get("/work/").content.decode()
    code = Enrollment.objects.get().resume_code
    assert len(code) == 10 and code in description and "resume code" in description
    answer_one(first)
    progress = first.current().json()["progress"]

    lost = Client(enforce_csrf_checks=True)
    page = lost.get(c.join_path, {"worker_id": "w-resume-1"})
    text = page.content.decode()
    assert page.status_code == 403 and "Resume code" in text and 'name="resume_code"' in text
    # The code is posted (CSRF-protected) to the same link: never in a URL, so never in history or access logs.
    form = text[text.index('<form method="post" class="resume-form">') :]
    assert "csrfmiddlewaretoken" in form[: form.index("</form>")]
    in_url = Client().get(c.join_path, {"worker_id": "w-resume-1", "resume_code": code})
    assert in_url.status_code == 403, "a code in the URL is ignored"
    link = f"{c.join_path}?worker_id=w-resume-1"
    token = lost.cookies["csrftoken"].value
    wrong = lost.post(link, {"resume_code": "ABCDEFGHJK", "csrfmiddlewaretoken": token})
    assert wrong.status_code == 403
    other_id = Client().get(c.join_path, {"worker_id": "w-resume-2", "resume_code": code})
    assert other_id.status_code == 302 and Enrollment.objects.count() == 2, "a code is only its own worker's"
    again = lost.post(link, {"resume_code": code.lower(), "csrfmiddlewaretoken": token})
    assert again.status_code == 302 and again["Location"] == "/work/"
    back = WorkerClient()
    back.client = lost
    assert back.current().json()["progress"] == progress
    assert AuditEvent.objects.filter(action="rebind", reason__contains="resume code").count() == 1
