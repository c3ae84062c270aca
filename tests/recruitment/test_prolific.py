"""The Prolific integration against a fake Prolific (a real HTTP server on 127.0.0.1), through the real HTTP surface."""

from datetime import timedelta
from decimal import Decimal
from io import StringIO
from urllib.parse import parse_qs, urlsplit

import pytest
from django.core.management import call_command
from django.test import Client

from annotation import selectors
from annotation.models import AuditEvent, Enrollment, Worker
from recruitment.bonuses import bonus_rows, pay_bonuses
from recruitment.models import BonusPayment, ProlificCredential, ProlificReview
from recruitment.places import give_back_places
from recruitment.publish import publish
from recruitment.sync import sync
from recruitment.tokens import TokenKeyMissing, store_token, token_for
from results.cells import annotator_test_s1
from tests.annotation.factories import (
    WorkerClient,
    cohort,
    done_code,
    make_study,
    pid_for,
    screen_out_code,
    trim_test_set,
    wrong_answer,
)
from tests.recruitment.fake_prolific import Refused
from tests.recruitment.journeys import SITE, approved_worker, arrive, finish, published
from tests.results.stored import check_stored

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clues")]


def test_publish_one_study_per_cohort_with_placeholders_group_exclusion_and_reward(fake, researcher):
    study = published(fake, researcher, shots=(0, 10), pay_rate=Decimal("12"), expected_minutes=25)
    assert len(fake.studies) == 2 and all(s["status"] == "ACTIVE" for s in fake.studies.values())
    assert len(fake.groups) == 1, "one participant group per task"
    (group_id,) = fake.groups
    for c in study.cohorts.all():
        body = fake.studies[c.prolific.prolific_study_id]
        url = urlsplit(body["external_study_url"])
        assert f"{url.scheme}://{url.netloc}{url.path}" == SITE + c.join_path
        assert parse_qs(url.query) == {
            "PROLIFIC_PID": ["{{%PROLIFIC_PID%}}"],
            "STUDY_ID": ["{{%STUDY_ID%}}"],
            "SESSION_ID": ["{{%SESSION_ID%}}"],
        }
        assert body["total_available_places"] == c.target
        assert body["reward"] == 500 and body["estimated_completion_time"] == 25  # 12 USD/h x 25 min, in cents
        assert body["filters"] == [{"filter_id": "participant_group_blocklist", "selected_values": [group_id]}]
        codes = {cc["code_type"]: cc for cc in body["completion_codes"]}
        assert codes["COMPLETED"]["code"] == done_code(c) and codes["FIXED_SCREENOUT"]["code"] == screen_out_code(c)
        assert codes["COMPLETED"]["code"].startswith("CDONE") and codes["FIXED_SCREENOUT"]["code"].startswith("CSOUT")
        assert {"action": "MANUALLY_REVIEW"} in codes["COMPLETED"]["actions"]
        (screen_out,) = [a for a in codes["FIXED_SCREENOUT"]["actions"] if a["action"] == "FIXED_SCREEN_OUT_PAYMENT"]
        # Prolific's minimum screen-out payment (14 US cents): a code alone earns no more; the time a worker of the
        # platform spent is paid as a bonus.
        assert screen_out["fixed_screen_out_reward"] == 14
        assert 0 < screen_out["fixed_screen_out_reward"] < body["reward"] and screen_out["slots"] == c.target + 1
        for cc in codes.values():
            assert {"action": "ADD_TO_PARTICIPANT_GROUP", "participant_group": group_id} in cc["actions"]
        assert c.launched_at is not None
    out = StringIO()
    call_command("publish_prolific", study=study.pk, site_url=SITE, stdout=out)
    assert len(fake.studies) == 2, "re-running changes nothing for cohorts already published"
    assert sorted(out.getvalue().split("\n")[:-1]) == sorted(
        f"sst2 {c.shots} {c.prolific.prolific_study_id}" for c in study.cohorts.all()
    )


def test_a_participant_of_one_cohort_cannot_even_take_another_cohort_of_the_task_on_prolific(fake, researcher):
    study = published(fake, researcher, shots=(0, 10), workers_per_cohort=3)
    c0, c10 = cohort(study, "sst2", 0), cohort(study, "sst2", 10)
    worker, pid, sid = arrive(fake, c0, "twice")
    finish(worker)
    fake.submit(sid, fake.code(sid))  # the completion code's action adds them to the task's group
    with pytest.raises(Refused, match="blocklisted"):
        fake.start_submission(c10.prolific.prolific_study_id, pid)


def test_publishing_refuses_a_pay_currency_that_is_not_the_accounts(fake, researcher):
    trim_test_set("sst2", 3)
    study = make_study(shots=[0], launch=False, created_by=researcher, pay_currency="GBP")
    with pytest.raises(ValueError, match="pays in GBP but the Prolific account pays in USD"):
        publish(study, site_url=SITE)
    assert fake.studies == {} and fake.groups == {}, "nothing created on Prolific"
    fake.currency = "GBP"
    publish(study, site_url=SITE)
    (body,) = fake.studies.values()
    # 12 GBP/h x the cohort's estimate: 3 items x 8 s, listed as 1 minute (rounded up), in pence.
    assert body["currency_code"] == "GBP" and body["reward"] == 20 and body["estimated_completion_time"] == 1


def test_publishing_needs_a_workspace_for_the_participant_group_and_says_so(fake, researcher, settings):
    from django.core.management.base import CommandError

    trim_test_set("sst2", 3)
    study = make_study(shots=[0], launch=False, created_by=researcher)
    settings.PROLIFIC_WORKSPACE_ID = ""
    with pytest.raises(CommandError, match="PROLIFIC_WORKSPACE_ID"):
        call_command("publish_prolific", study=study.pk, site_url=SITE, stdout=StringIO())
    assert fake.studies == {} and fake.groups == {}


def test_publish_draft_leaves_studies_unpublished_and_cohorts_not_launched(fake, researcher):
    trim_test_set("sst2", 3)
    study = make_study(shots=[0], launch=False, created_by=researcher)
    call_command("publish_prolific", study=study.pk, site_url=SITE, draft=True, stdout=StringIO())
    assert [s["status"] for s in fake.studies.values()] == ["UNPUBLISHED"]
    assert cohort(study, "sst2", 0).launched_at is None


def test_join_is_verified_and_forged_foreign_and_finished_submissions_are_refused(fake, researcher):
    study = published(fake, researcher, shots=(0,), workers_per_cohort=5)
    c = cohort(study, "sst2", 0)
    worker, pid, sid = arrive(fake, c, "honest")
    assert worker.join_response.status_code == 302
    assert Enrollment.objects.get(worker__external_id=pid).verification == "verified"
    assert AuditEvent.objects.filter(action="join", reason__contains="verified on Prolific").count() == 1

    other_study = published(fake, researcher, shots=(0,))
    foreign_sid = fake.start_submission(cohort(other_study, "sst2", 0).prolific.prolific_study_id, pid_for("foreign"))
    finished_sid = fake.start_submission(c.prolific.prolific_study_id, pid_for("finished"))
    fake.submit(finished_sid, fake.code(finished_sid))
    cases = {
        "forged": (pid_for("forger"), "0123456789abcdef01234567"),
        "someone else's submission": (pid_for("thief"), sid),
        "foreign study": (pid_for("foreign"), foreign_sid),
        "finished": (pid_for("finished"), finished_sid),
        "not an id": (pid_for("pathy"), "..%2F..%2Fstudies"),
    }
    for name, (p, s) in cases.items():
        page = Client().get(c.join_path, {"PROLIFIC_PID": p, "STUDY_ID": c.prolific.prolific_study_id, "SESSION_ID": s})
        assert page.status_code == 403, name
        assert "return your submission" in page.content.decode(), name
        assert not Worker.objects.filter(external_id=p).exists(), f"{name}: nothing stored for a refused join"


def test_prolific_unreachable_admits_unverified_then_sync_verifies(fake, researcher):
    study = published(fake, researcher, shots=(0,))
    c = cohort(study, "sst2", 0)
    fake.down = True
    worker, pid, sid = arrive(fake, c, "offline")
    assert worker.join_response.status_code == 302
    enrollment = Enrollment.objects.get(worker__external_id=pid)
    assert enrollment.verification == "unverified"
    finish(worker)
    enrollment.refresh_from_db()
    assert enrollment.state == "completed"
    assert enrollment.pk not in annotator_test_s1(study), "left out of every result until verified"
    assert enrollment.pk not in {r["enrollment_id"] for r in selectors.annotator_rows(study)}
    assert enrollment not in selectors.completed_enrollments(study)
    researcher_client = Client()
    researcher_client.force_login(researcher)
    results = f"/api/studies/{study.pk}/results/"
    assert researcher_client.get(results).json()["cells"][0]["n"] == 0
    assert check_stored(study) == {c.pk}  # the results' stored scores, without them
    fake.down = False
    fake.submit(sid, fake.code(sid))
    report = sync(study)
    assert enrollment.pk in annotator_test_s1(study)
    assert check_stored(study) == set(), "the verification made the stored scores stale at once"
    assert researcher_client.get(results).json()["cells"][0]["n"] == 1
    assert check_stored(study) == {c.pk}
    assert report.verified == [pid]
    enrollment.refresh_from_db()
    assert enrollment.verification == "verified"
    assert report.approved == [pid], "verified by the sync, completed with the right code: approved"


def test_returned_and_timed_out_places_are_freed_here_and_taken_again(fake, researcher, clock):
    study = published(fake, researcher, shots=(0,), workers_per_cohort=2)
    c = cohort(study, "sst2", 0)
    _, p1, s1 = arrive(fake, c, "returner")
    _, p2, s2 = arrive(fake, c, "sleeper")
    with pytest.raises(Refused, match="no place"):
        arrive(fake, c, "late")  # Prolific itself holds the cohort's places
    forged = WorkerClient(
        c,
        params={
            "PROLIFIC_PID": pid_for("late"),
            "STUDY_ID": c.prolific.prolific_study_id,
            "SESSION_ID": fake.start_submission(c.prolific.prolific_study_id, pid_for("late"), force=True),
        },
    )
    assert forged.join_response.status_code == 409 and "full" in forged.join_response.content.decode()
    fake.set_status(s1, "RETURNED")
    fake.set_status(s2, "TIMED-OUT")
    # Prolific's clock ran out first: the sleeper's place here is theirs until the limit they were given passes.
    assert sync(study).freed == [p1]
    clock.advance(Enrollment.objects.get(worker__external_id=p2).timer_minutes * 60 + 1)
    assert sync(study).freed == [p2]
    states = dict(Enrollment.objects.values_list("worker__external_id", "state"))
    assert states[p1] == "withdrawn" and states[p2] == "expired"
    assert AuditEvent.objects.filter(enrollment__worker__external_id=p1, reason__contains="RETURNED").exists()
    assert AuditEvent.objects.filter(enrollment__worker__external_id=p2, reason__contains="no answer in it").exists()
    # Prolific gives a returned or timed-out submission's place back by itself: adding one would over-recruit.
    assert fake.studies[c.prolific.prolific_study_id]["total_available_places"] == 2
    assert not [call for call in fake.calls if call[0] == "PATCH"]
    newcomer, _, _ = arrive(fake, c, "newcomer")
    assert newcomer.join_response.status_code == 302


def test_a_filtered_worker_gives_the_place_back_to_prolific_at_once_and_only_once(
    fake, researcher, django_capture_on_commit_callbacks
):
    study = published(fake, researcher, shots=(10,), workers_per_cohort=1, filter_floor=0.9)
    c = cohort(study, "sst2", 10)
    weak, p_weak, s_weak = arrive(fake, c, "weak")
    with pytest.raises(Refused, match="no place"):
        arrive(fake, c, "waiting")
    with django_capture_on_commit_callbacks(execute=True):  # the commits of the worker's requests
        state = finish(weak, wrong_answer)
    assert Enrollment.objects.get(worker__external_id=p_weak).state == "filtered"
    assert state["completion"]["code"] == screen_out_code(c), "the filtered worker is given the screen-out code"
    # No sync ran: the give-back task was queued when the filtering committed (eager here).
    assert fake.studies[c.prolific.prolific_study_id]["total_available_places"] == 2
    patches = [call for call in fake.calls if call[0] == "PATCH"]
    assert patches == [("PATCH", f"/api/v1/studies/{c.prolific.prolific_study_id}/", {"total_available_places": 2})]
    # Screened out on Prolific: paid the fixed reward, the place stays taken.
    fake.submit(s_weak, fake.code(s_weak, "FIXED_SCREENOUT"))
    assert fake.submissions[s_weak]["status"] == "SCREENED OUT"
    for _ in range(2):
        sync(study)
        give_back_places(c.pk)
    assert fake.studies[c.prolific.prolific_study_id]["total_available_places"] == 2, "never given back twice"
    assert len([call for call in fake.calls if call[0] == "PATCH"]) == 1
    newcomer, p_new, _ = arrive(fake, c, "newcomer")  # the place given back is taken on Prolific and here
    assert newcomer.join_response.status_code == 302
    assert AuditEvent.objects.filter(action="prolific places", reason__contains="1 given back").count() == 1


def test_a_failed_give_back_is_made_by_the_sync(fake, researcher, django_capture_on_commit_callbacks):
    study = published(fake, researcher, shots=(10,), workers_per_cohort=1, filter_floor=0.9)
    c = cohort(study, "sst2", 10)
    weak, p_weak, _ = arrive(fake, c, "weak")
    fake.fail_next = 10  # Prolific answers 503 while the worker is filtered: the request still succeeds
    with django_capture_on_commit_callbacks(execute=True):
        finish(weak, wrong_answer)
    assert Enrollment.objects.get(worker__external_id=p_weak).state == "filtered"
    assert fake.studies[c.prolific.prolific_study_id]["total_available_places"] == 1
    fake.fail_next = 0
    sync(study)
    assert fake.studies[c.prolific.prolific_study_id]["total_available_places"] == 2


def test_only_earned_codes_are_approved_the_rest_asked_to_return_and_nothing_is_rejected(fake, researcher):
    study = published(fake, researcher, shots=(0,), workers_per_cohort=5)
    c = cohort(study, "sst2", 0)
    good, p_good, s_good = arrive(fake, c, "good")
    finish(good)
    fake.submit(s_good, fake.code(s_good))
    wrong, p_wrong, s_wrong = arrive(fake, c, "wrongcode")
    finish(wrong)
    fake.submit(s_wrong, "CWRONG1")
    _, p_idle, s_idle = arrive(fake, c, "unfinished")
    fake.submit(s_idle, fake.code(s_idle))  # claims completion on Prolific without doing the work
    stranger = fake.start_submission(c.prolific.prolific_study_id, pid_for("stranger"))
    fake.submit(stranger, fake.code(stranger))
    out = StringIO()
    call_command("sync_prolific", study=study.pk, stdout=out)
    assert fake.submissions[s_good]["status"] == "APPROVED"
    for sid in (s_wrong, s_idle, stranger):
        assert fake.submissions[sid]["status"] == "AWAITING REVIEW", "never approved, never rejected"
        assert fake.submissions[sid]["return_requested"], "asked to return it: Prolific's way that costs them nothing"
        assert "not earned on the study's site" in fake.submissions[sid]["return_reasons"][0]
    assert not [call for call in fake.calls if call[2] and call[2].get("action") == "REJECT"]
    text = out.getvalue()
    assert "approved 1" in text and "for the researcher 3" in text and "asked to return 3" in text
    assert "another code" in text and "was not finished" in text and "no enrollment" in text
    # Listed at every sync while they wait, asked only once.
    again = StringIO()
    call_command("sync_prolific", study=study.pk, stdout=again)
    assert "for the researcher 3" in again.getvalue() and "asked to return 0" in again.getvalue()
    asked = [call for call in fake.calls if call[0] == "POST" and call[1].endswith("/request-return/")]
    assert len(asked) == 3
    fake.participant_returns(stranger)  # the stranger returns it: nothing is paid, the place is Prolific's again
    fake.participant_returns(s_idle)  # so does the worker who claimed a part not done: their place here is freed
    sync(study)
    assert fake.paid_total(pid_for("stranger")) == fake.screen_out_paid(pid_for("stranger")) == 0
    assert ProlificReview.objects.get(submission_id=s_idle).status == "RETURNED"
    assert Enrollment.objects.get(worker__external_id=p_idle).state == "withdrawn"


def test_manual_review_approves_nothing(fake, researcher):
    study = published(fake, researcher, shots=(0,), manual_review=True)
    c = cohort(study, "sst2", 0)
    worker, _, sid = arrive(fake, c, "done")
    finish(worker)
    fake.submit(sid, fake.code(sid))
    report = sync(study)
    assert report.approved == [] and fake.submissions[sid]["status"] == "AWAITING REVIEW"


def test_bonuses_top_up_to_the_rate_and_reruns_never_pay_twice(fake, researcher):
    study = published(fake, researcher, shots=(0,), pay_rate=Decimal("12"), expected_minutes=10, idle_cap_seconds=7200)
    pid = approved_worker(fake, study, "slow")
    sync(study)
    out = StringIO()
    call_command("pay_bonuses", study=study.pk, stdout=out)
    ledger = BonusPayment.objects.get(enrollment__worker__external_id=pid)
    assert ledger.state == "paid"
    # About an hour at 12/h = 12.00, minus the base reward of 2.00.
    assert Decimal("9.90") <= ledger.amount <= Decimal("10.10")
    assert fake.paid_total(pid) == float(ledger.amount)
    for _ in range(2):
        call_command("pay_bonuses", study=study.pk, stdout=StringIO())
    assert fake.paid_total(pid) == float(ledger.amount), "reruns pay nothing more"
    row = next(r for r in bonus_rows(study) if r["worker"] == pid)
    assert row["bonus_state"] == "paid" and 11.5 < row["hourly"] < 12.5


def test_a_crash_during_the_pay_call_never_pays_twice(fake, researcher):
    study = published(fake, researcher, shots=(0,), pay_rate=Decimal("12"), expected_minutes=10, idle_cap_seconds=7200)
    pid = approved_worker(fake, study, "crash")
    sync(study)
    fake.crash_on_pay = True  # Prolific pays, then the answer is lost
    report = pay_bonuses(study)
    assert report.uncertain == [pid]
    ledger = BonusPayment.objects.get(enrollment__worker__external_id=pid)
    assert ledger.state == "unknown"
    paid_once = fake.paid_total(pid)
    assert paid_once > 0
    fake.crash_on_pay = False
    for _ in range(2):
        pay_bonuses(study)
    assert fake.paid_total(pid) == paid_once, "a row whose pay outcome is unknown is never paid again"
    assert len([c for c in fake.calls if c[1].endswith("/pay/")]) == 1


def test_a_crash_between_ledger_write_and_pay_call_does_not_pay_twice(fake, researcher):
    study = published(fake, researcher, shots=(0,), pay_rate=Decimal("12"), expected_minutes=10, idle_cap_seconds=7200)
    pid = approved_worker(fake, study, "between")
    sync(study)
    fake.down = True  # the set-up call fails: the ledger row stays planned, nothing paid
    report = pay_bonuses(study)
    assert report.failed == [pid] and BonusPayment.objects.get().state == "planned"
    fake.down = False
    pay_bonuses(study)
    pay_bonuses(study)
    assert BonusPayment.objects.get().state == "paid"
    assert fake.paid_total(pid) == float(BonusPayment.objects.get().amount)


def test_a_token_is_stored_only_encrypted_and_only_with_a_key(researcher, settings):

    settings.PROLIFIC_TOKEN_KEY = ""
    with pytest.raises(TokenKeyMissing, match="PROLIFIC_TOKEN_KEY"):
        store_token(researcher, "secret-token-123")
    assert not ProlificCredential.objects.exists()
    settings.PROLIFIC_TOKEN_KEY = "a key from the environment"
    store_token(researcher, "secret-token-123")
    stored = ProlificCredential.objects.get(owner=researcher).token_encrypted
    assert "secret-token-123" not in stored
    study = make_study(shots=[0], created_by=researcher)
    assert token_for(study) == "secret-token-123"


def test_an_expired_worker_adds_a_place_only_once_prolific_keeps_theirs_taken(
    fake, researcher, django_capture_on_commit_callbacks
):
    study = published(fake, researcher, shots=(0,), workers_per_cohort=1, time_limit_minutes=5)
    c = cohort(study, "sst2", 0)
    _, pid, sid = arrive(fake, c, "slow")
    Enrollment.objects.update(enrolled_at=Enrollment.objects.get().enrolled_at - timedelta(minutes=6))
    with django_capture_on_commit_callbacks(execute=True):
        call_command("expire_enrollments", stdout=StringIO())
    assert Enrollment.objects.get().state == "expired"
    # Still ACTIVE on Prolific: Prolific times it out (or the worker returns it) and frees the place itself.
    assert fake.studies[c.prolific.prolific_study_id]["total_available_places"] == 1
    fake.submit(sid, fake.code(sid))  # ...but the worker submits anyway: that submission keeps its Prolific place
    report = sync(study)
    assert fake.studies[c.prolific.prolific_study_id]["total_available_places"] == 2
    assert report.attention and "expired" in report.attention[0][2], "left to the researcher, never rejected"
    sync(study)
    assert len([call for call in fake.calls if call[0] == "PATCH"]) == 1


def test_a_closed_cohort_gives_no_place_back(fake, researcher):
    from django.utils import timezone

    from annotation.models import Cohort

    study = published(fake, researcher, shots=(0,), workers_per_cohort=1)
    c = cohort(study, "sst2", 0)
    arrive(fake, c, "late-filtered")
    Enrollment.objects.update(state="filtered")
    Cohort.objects.filter(pk=c.pk).update(closed_at=timezone.now())
    assert give_back_places(c.pk) is None
    assert not [call for call in fake.calls if call[0] == "PATCH"]
    Cohort.objects.filter(pk=c.pk).update(closed_at=None)
    assert give_back_places(c.pk) == 2, "control: open, the place goes back"


def test_prolific_s_time_out_never_ends_a_part_before_the_limit_the_worker_was_given(fake, researcher, clock):
    """Prolific's clock starts before the join and may run out before the limit this site gave the worker (and
    told them). Until that limit, a timed-out worker keeps working and finishes with the completion code; past it, the
    part ends as this site's own limit ends it: the screen-out code, and pay for the time worked."""
    study = published(fake, researcher, shots=(0,), workers_per_cohort=2)
    c = cohort(study, "sst2", 0)
    slow, p_slow, s_slow = arrive(fake, c, "slow")
    stuck, p_stuck, s_stuck = arrive(fake, c, "stuck")
    limit = Enrollment.objects.get(worker__external_id=p_slow).timer_minutes
    for worker in (slow, stuck):
        handle = worker.current().json()["item"]["id"]
        assert worker.answer(handle, wrong_answer(worker.example(handle))).status_code == 201
    clock.advance((limit - 5) * 60)
    fake.set_status(s_slow, "TIMED-OUT")
    report = sync(study)
    assert report.freed == [] and Enrollment.objects.get(worker__external_id=p_slow).state == "testing"
    assert finish(slow)["completion"]["code"] == done_code(c)
    clock.advance(5 * 60 + 1)  # past the stuck worker's limit too; Prolific timed them out
    fake.set_status(s_stuck, "TIMED-OUT")
    assert sync(study).freed == [p_stuck]
    ended = Enrollment.objects.get(worker__external_id=p_stuck)
    assert ended.state == "expired" and ended.stopped_at is not None
    assert stuck.current().json()["completion"]["code"] == screen_out_code(c)
