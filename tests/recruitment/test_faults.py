"""The crowd boundary when Prolific does not answer as expected: fail closed, unverified joins cost nothing,
the filtering comparison set, every submission approved or listed (fake Prolific, real HTTP surface)."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client

from annotation.models import AuditEvent, Enrollment, Worker
from results.agreement import learning_curves
from tests.annotation.factories import WorkerClient, cohort, pid_for
from tests.recruitment.journeys import FORGED, age, arrive, finish, finish_by_position, forged_join, published

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clues")]


@pytest.mark.parametrize("status", [400, 401, 403, 429])
def test_a_prolific_error_other_than_unreachable_refuses_the_join(fake, researcher, status):
    study = published(fake, researcher, shots=(0,), workers_per_cohort=3)
    c = cohort(study, "sst2", 0)
    sid = fake.start_submission(c.prolific.prolific_study_id, pid_for("forger"), force=True)
    fake.fail_next, fake.fail_status = 5, status  # 401: a revoked token
    page = Client().get(
        c.join_path,
        {
            "PROLIFIC_PID": pid_for("forger"),
            "STUDY_ID": c.prolific.prolific_study_id,
            "SESSION_ID": "0123456789abcdef01234567",
        },
    )
    assert page.status_code == 403
    assert "cannot check your Prolific session right now" in page.content.decode()
    assert not Worker.objects.exists() and not Enrollment.objects.exists(), "nothing stored for a refused join"
    assert AuditEvent.objects.filter(action="prolific verify refused", reason__contains=str(status)).exists()
    fake.fail_next = 0
    honest = WorkerClient(
        c, params={"PROLIFIC_PID": pid_for("forger"), "STUDY_ID": c.prolific.prolific_study_id, "SESSION_ID": sid}
    )
    assert honest.join_response.status_code == 302, "control: once Prolific answers, the real session joins"


@pytest.mark.parametrize("status", [500, 503])
def test_a_5xx_after_the_clients_retries_counts_as_unreachable(fake, researcher, status):
    study = published(fake, researcher, shots=(0,))
    c = cohort(study, "sst2", 0)
    fake.fail_next, fake.fail_status = 2, status  # PROLIFIC_RETRIES=1: both attempts fail
    worker, pid, _ = arrive(fake, c, "patient")
    assert worker.join_response.status_code == 302
    assert Enrollment.objects.get(worker__external_id=pid).verification == "unverified"


def test_unverified_joins_hold_no_place_owe_none_and_expire_after_the_grace(
    fake, researcher, settings, django_capture_on_commit_callbacks
):
    settings.PROLIFIC_UNVERIFIED_GRACE_MINUTES = 15
    study = published(fake, researcher, shots=(10,), workers_per_cohort=2, filter_floor=0.9)
    c = cohort(study, "sst2", 10)
    squatter = forged_join(fake, c, "squatter", 1)
    forged_join(fake, c, "late-squatter", 2)
    assert Enrollment.objects.filter(verification="unverified").count() == 2
    real = fake.start_submission(c.prolific.prolific_study_id, pid_for("real"))  # Prolific has free places
    page = Client().get(
        c.join_path, {"PROLIFIC_PID": pid_for("real"), "STUDY_ID": c.prolific.prolific_study_id, "SESSION_ID": real}
    )
    assert page.status_code == 302, "unverified joins wait outside the places: the genuine participant gets in"
    with django_capture_on_commit_callbacks(execute=True):
        finish_by_position(squatter, wrong_positions=set(range(100)))
    assert Enrollment.objects.get(worker__external_id=pid_for("squatter")).state == "filtered"
    assert not [call for call in fake.calls if call[0] == "PATCH"], "a filtered unverified join owes no place"
    age(pid_for("late-squatter"), 16)
    out = StringIO()
    call_command("sync_prolific", study=study.pk, stdout=out)
    states = dict(Enrollment.objects.values_list("worker__external_id", "state"))
    assert states[pid_for("late-squatter")] == "expired", "not matched by the sync within the grace"
    assert AuditEvent.objects.filter(action="expire unverified", reason__contains="15 minutes").count() == 1
    assert fake.studies[c.prolific.prolific_study_id]["total_available_places"] == 2, "no place given for either"
    second = fake.start_submission(c.prolific.prolific_study_id, pid_for("second"))
    page = Client().get(
        c.join_path,
        {"PROLIFIC_PID": pid_for("second"), "STUDY_ID": c.prolific.prolific_study_id, "SESSION_ID": second},
    )
    assert page.status_code == 302, "the second genuine participant takes the second place"


def test_a_recent_unverified_join_that_the_sync_matches_is_verified_not_expired(fake, researcher):
    study = published(fake, researcher, shots=(0,))
    c = cohort(study, "sst2", 0)
    fake.down = True
    worker, pid, sid = arrive(fake, c, "genuine-offline")
    fake.down = False
    age(pid, 60)
    call_command("sync_prolific", study=study.pk, stdout=StringIO())
    e = Enrollment.objects.get(worker__external_id=pid)
    assert (e.state, e.verification) == ("testing", "verified"), "matched by the sync: never expired"


def test_the_genuine_participant_takes_the_place_of_an_unverified_join_under_their_pid(fake, researcher):
    study = published(fake, researcher, shots=(0,), workers_per_cohort=1)
    c = cohort(study, "sst2", 0)
    squatter = forged_join(fake, c, "victim", 1)  # knows the victim's PID, forges a session
    assert squatter.join_response.status_code == 302
    victim, pid, sid = arrive(fake, c, "victim")  # the real participant, their own session on Prolific
    assert victim.join_response.status_code == 302, victim.join_response.content.decode()[:300]
    enrollments = {e.platform_session: e for e in Enrollment.objects.filter(worker__external_id=pid)}
    assert enrollments[sid].verification == "verified" and enrollments[sid].state == "testing"
    taken = enrollments[FORGED.format(1)]
    assert (taken.state, taken.verification) == ("withdrawn", "superseded")
    event = AuditEvent.objects.get(enrollment=taken, action="withdraw unverified")
    assert "confirmed" in event.reason and event.to_state == "withdrawn"
    assert squatter.current().json().get("item") is None, "the squatter's browser has no work any more"
    assert victim.current().json()["item"] is not None
    finish(victim)
    fake.submit(sid, fake.code(sid))
    out = StringIO()
    call_command("sync_prolific", study=study.pk, stdout=out)
    assert fake.submissions[sid]["status"] == "APPROVED"
    assert "approved 1" in out.getvalue() and "for the researcher 0" in out.getvalue()


def test_a_verified_enrollment_is_never_taken_over_by_another_session_of_its_pid(fake, researcher):
    study = published(fake, researcher, shots=(0,), workers_per_cohort=3)
    c = cohort(study, "sst2", 0)
    _, pid, _ = arrive(fake, c, "owner")
    other = fake.start_submission(c.prolific.prolific_study_id, pid, force=True)
    page = Client().get(
        c.join_path, {"PROLIFIC_PID": pid, "STUDY_ID": c.prolific.prolific_study_id, "SESSION_ID": other}
    )
    assert page.status_code == 403
    assert Enrollment.objects.get(worker__external_id=pid).state == "testing"


def test_the_comparison_set_is_verified_unfiltered_workers_who_finished_training(fake, researcher):
    study = published(fake, researcher, shots=(10,), workers_per_cohort=10, filter_fraction=0.5)
    c = cohort(study, "sst2", 10)
    for name in ("strong-1", "strong-2"):
        strong, _, _ = arrive(fake, c, name)
        finish_by_position(strong)
    zero, pid_zero, _ = arrive(fake, c, "zero")
    finish_by_position(zero, wrong_positions=set(range(100)))
    assert Enrollment.objects.get(worker__external_id=pid_zero).state == "filtered"
    for n in range(4):  # forged joins scoring 0 while Prolific is down
        forged = forged_join(fake, c, f"forged-{n}", n)
        finish_by_position(forged, wrong_positions=set(range(100)))
    weak, pid_weak, _ = arrive(fake, c, "weak")
    # 4 of 10 items right: S1 0.4, below half the mean (1.0) of the two strong workers; with the filtered
    # worker and the forged zeros in the mean (0.29) the weak worker would pass.
    finish_by_position(weak, wrong_positions=set(range(4, 100)))
    e = Enrollment.objects.get(worker__external_id=pid_weak)
    assert e.state == "filtered"
    reason = AuditEvent.objects.get(enrollment=e, action="filter").reason
    assert "of 2 other worker(s)" in reason and "mean 1.000" in reason


def test_an_unverified_worker_is_in_no_learning_curve_until_the_sync_verifies_them(fake, researcher):
    study = published(fake, researcher, shots=(10,), workers_per_cohort=2)
    c = cohort(study, "sst2", 10)
    fake.down = True
    worker, pid, sid = arrive(fake, c, "offline-learner")
    fake.down = False
    finish(worker)
    assert Enrollment.objects.get(worker__external_id=pid).state == "completed"
    assert pid not in {r["worker"] for r in learning_curves(study)}
    call_command("sync_prolific", study=study.pk, stdout=StringIO())
    assert pid in {r["worker"] for r in learning_curves(study)}, "control: verified, it counts"


def test_a_filtered_worker_who_sends_the_completion_code_is_listed_and_counted(fake, researcher):
    study = published(fake, researcher, shots=(10,), workers_per_cohort=2, filter_floor=0.9)
    c = cohort(study, "sst2", 10)
    weak, pid, sid = arrive(fake, c, "cheeky")
    finish_by_position(weak, wrong_positions=set(range(100)))
    assert Enrollment.objects.get(worker__external_id=pid).state == "filtered"
    fake.submit(sid, fake.code(sid))  # the study's completion code, not the screen-out code
    assert fake.submissions[sid]["status"] == "AWAITING REVIEW"
    out = StringIO()
    call_command("sync_prolific", study=study.pk, stdout=out)
    text = out.getvalue()
    assert "for the researcher 1" in text and "filtered after training, but sent the completion code" in text
    assert "filtered with the completion code 1" in text
    assert fake.submissions[sid]["status"] == "AWAITING REVIEW", "never approved, never rejected"
    client = Client()
    client.force_login(researcher)
    page = client.post(f"/dashboard/studies/{study.pk}/prolific/sync/")
    body = page.content.decode()
    assert page.status_code == 200 and "1 for you to review" in body
    assert "1 filtered worker(s) sent the completion code" in body
    listing = client.get(f"/dashboard/studies/{study.pk}/prolific/").content.decode()
    assert "1 submission(s) awaiting your review on Prolific" in listing
    assert "1 of them from filtered worker(s)" in listing
