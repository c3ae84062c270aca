"""A paper-sized cohort on the fake Prolific: one estimate per cohort, a long test step in parts (sittings), each part a
Prolific study open only to the previous part's finishers, and pay per part through the ledger. Workers answer at a
human pace: the clock is moved, never slept."""

from decimal import ROUND_CEILING, Decimal
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client

from annotation import services
from annotation.estimates import cohort_estimate
from annotation.models import Enrollment
from recruitment.bonuses import bonus_rows, pay_bonuses
from recruitment.models import BonusPayment, ProlificPart
from recruitment.publish import REACH_MINUTES, publish
from recruitment.sync import sync
from results.cells import annotator_test_s1, table_cells
from tasks_data.registry import CLUES_TASKS
from tests.annotation.factories import (
    WorkerClient,
    cohort,
    done_code,
    gold_answer,
    make_study,
    pid_for,
    screen_out_code,
    trim_test_set,
)
from tests.clock import Clock
from tests.recruitment.fake_prolific import Refused

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clues")]
SITE = "https://clues.example"
PACE = 66  # seconds a worker spends on an item: 10% slower than ReCoRD's figure of 60


def part_studies(cohort_) -> dict[int, str]:
    return dict(ProlificPart.objects.filter(cohort=cohort_).values_list("number", "prolific_study_id"))


def take_part(fake, cohort_, pid: str, number: int) -> tuple[WorkerClient, str]:
    """The participant takes a place in the part's Prolific study and opens its link in a fresh browser."""
    study_id = part_studies(cohort_).get(number) or cohort_.prolific.prolific_study_id  # a cohort in one part
    sid = fake.start_submission(study_id, pid)
    worker = WorkerClient(cohort_, params={"PROLIFIC_PID": pid, "STUDY_ID": study_id, "SESSION_ID": sid})
    assert worker.join_response.status_code == 302, worker.join_response.content.decode()[:500]
    return worker, sid


def answer_part(worker: WorkerClient, clock: Clock) -> dict:
    """Answer every item of the part at a human pace; returns the worker API's state at the part's end."""
    while True:
        state = worker.current().json()
        if state["item"] is None:
            return state
        clock.advance(PACE)
        handle = state["item"]["id"]
        response = worker.answer(handle, gold_answer(worker.example(handle)))
        assert response.status_code == 201, response.content


def start_next_part(worker: WorkerClient):
    return worker.client.post("/work/next-part/", HTTP_X_CSRFTOKEN=worker.csrf)


def test_a_record_10_shot_cohort_in_sittings_on_prolific(fake, researcher, clock):
    study = make_study(
        tasks=("record",),
        shots=[10],
        launch=False,
        created_by=researcher,
        completion_code="CDONE",
        screenout_code="CSOUT",
        workers_per_cohort=2,
        pay_rate=Decimal("12"),
    )
    assert study.sitting_minutes == 60 and study.expected_minutes is None
    publish(study, site_url=SITE)
    record = cohort(study, "record", 10)
    estimate = cohort_estimate(record)
    parts = len(estimate.parts)
    assert parts == 4 and estimate.training_items == 10 and estimate.test_items == 200  # 210 items x 60 s

    # Every Prolific study of the cohort: at most the sitting cap, within 25% of the platform's own estimate for its
    # items (the task's time per item), its reward the rate x its estimate; later parts open to the previous part's
    # finishers only.
    studies = part_studies(record)
    assert sorted(studies) == list(range(1, parts + 1)) and len(fake.studies) == parts
    groups = dict(ProlificPart.objects.filter(cohort=record).values_list("number", "finishers_group"))
    for number, study_id in studies.items():
        body = fake.studies[study_id]
        part = estimate.part(number)
        platform_minutes = part.items * CLUES_TASKS["record"].seconds_per_item / 60
        assert body["estimated_completion_time"] <= study.sitting_minutes
        assert abs(body["estimated_completion_time"] - platform_minutes) <= 0.25 * platform_minutes
        rate_times_estimate = Decimal(12) * body["estimated_completion_time"] / 60 * 100
        assert body["reward"] == int(rate_times_estimate.to_integral_value(rounding=ROUND_CEILING))
        assert body["estimated_completion_time"] <= body["maximum_allowed_time"] == part.time_limit + REACH_MINUTES
        if number > 1:
            assert body["filters"] == [
                {"filter_id": "participant_group_allowlist", "selected_values": [groups[number - 1]]}
            ]
        codes = {c["code_type"]: c["code"] for c in body["completion_codes"]}
        assert codes["COMPLETED"] == done_code(record, number)
        assert codes["FIXED_SCREENOUT"] == screen_out_code(record, number)

    ada, bob = pid_for("ada"), pid_for("bob")
    # Part 1 for both, each in one sitting.
    a1, a_sid1 = take_part(fake, record, ada, 1)
    html = a1.client.get("/work/").content.decode()
    assert "Part 1 of 4" in html and "In 4 parts (sittings)" in html
    with pytest.raises(Refused, match="no allowlisted group"):
        fake.start_submission(studies[2], ada)  # not before finishing part 1
    for pid in (ada, bob):
        worker, sid = (a1, a_sid1) if pid == ada else take_part(fake, record, pid, 1)
        state = answer_part(worker, clock)
        assert state["step"] == "between" and state["completion"]["code"] == done_code(record, 1)
        page = worker.client.get("/work/").content.decode()
        assert "Part 1 of 4 done" in page and "Part 2 of 4:" in page and "open it from there" in page
        assert start_next_part(worker).status_code == 409, "part 2 starts from its own Prolific study"
        fake.submit(sid, state["completion"]["code"])
        # In a new browser, the part-1 link (its submission is now awaiting review): welcomed back, pointed to part 2.
        again = WorkerClient(record, params={"PROLIFIC_PID": pid, "STUDY_ID": studies[1], "SESSION_ID": sid})
        page = again.join_response.content.decode()
        assert again.join_response.status_code == 200, page[:300]
        assert "Welcome back" in page and "part 2 is waiting for you" in page and "open the next part" in page
        assert "cannot join" not in page and 'name="resume_code"' not in page

    # Ada comes back for each later part in a new session (a day later, another browser), from its Prolific study.
    for number in range(2, parts + 1):
        clock.advance(24 * 3600)
        worker, sid = take_part(fake, record, ada, number)
        assert "Start part" in worker.client.get("/work/").content.decode()
        assert start_next_part(worker).status_code == 302
        assert f"Part {number} of 4" in worker.client.get("/work/").content.decode()
        state = answer_part(worker, clock)
        code = done_code(record, number)
        assert state["completion"]["code"] == code
        assert state["step"] == ("done" if number == parts else "between")
        fake.submit(sid, code)
    with pytest.raises(Refused, match="no allowlisted group"):
        fake.start_submission(studies[2], pid_for("carl"))  # a newcomer never skips part 1

    # Bob never comes back: after the return window his place is offered again (a newcomer starts at part 1).
    clock.advance(8 * 24 * 3600)
    assert services.expire_stale() == 1
    bob_enrollment = Enrollment.objects.get(worker__external_id=bob)
    assert bob_enrollment.state == Enrollment.State.EXPIRED and bob_enrollment.part == 1
    report = sync(study)
    assert sorted(report.approved) == sorted([ada] * parts + [bob])
    assert fake.studies[studies[1]]["total_available_places"] == 3  # the target of 2, plus Bob's place
    carl, _ = take_part(fake, record, pid_for("carl"), 1)
    assert carl.enrollment_id is not None

    # Table 5 counts Ada (every part done), never Bob.
    ada_enrollment = Enrollment.objects.get(worker__external_id=ada)
    assert set(annotator_test_s1(study)) == {ada_enrollment.pk}
    (cell,) = table_cells(study)
    assert cell["n"] == 1 and cell["expected_minutes"] == cohort_estimate(record).listed_minutes

    # Pay per part through the ledger: each approved part topped up to the rate over its active time, once.
    out = StringIO()
    call_command("pay_bonuses", study=study.pk, stdout=out)
    ledger = dict(
        ((pid, part), amount)
        for pid, part, amount in BonusPayment.objects.values_list("enrollment__worker__external_id", "part", "amount")
    )
    assert set(ledger) == {*((ada, n) for n in range(1, parts + 1)), (bob, 1)}
    assert f"paid {bob} {ledger[bob, 1]:.2f} (part 1 of 4)" in out.getvalue()
    assert f"paid {ada} {ledger[ada, 4]:.2f} (part 4 of 4)" in out.getvalue()
    assert fake.paid_total(bob) == float(ledger[bob, 1]) > 0
    again = pay_bonuses(study)
    assert again.paid == [] and fake.paid_total(bob) == float(ledger[bob, 1]), "never paid twice"
    rows = bonus_rows(study)
    assert [r["part"] for r in rows if r["worker"] == bob] == ["1 of 4"]
    page = Client()
    page.force_login(researcher)
    html = page.get(f"/dashboard/studies/{study.pk}/prolific/").content.decode()
    assert "1 of 4" in html and "4 of 4" in html
    cohort_page = page.get(f"/dashboard/cohorts/{record.pk}/").content.decode()
    assert bob in cohort_page and "expired" in cohort_page


def test_a_prolific_worker_whose_time_runs_out_is_screened_out_and_paid_for_the_time_worked(fake, researcher, clock):
    trim_test_set("sst2", 40)
    study = make_study(
        shots=[10], launch=False, created_by=researcher, completion_code="CDONE", screenout_code="CSOUT", pay_rate=12
    )
    publish(study, site_url=SITE)
    sst = cohort(study, "sst2", 10)
    limit = cohort_estimate(sst).part(1).time_limit
    assert 30 <= limit <= 60  # 50 items x 8 s = 7 min: room for a slow worker and a break
    pid = pid_for("slow")
    worker, sid = take_part(fake, sst, pid, 1)
    for _ in range(20):  # a minute an item: slower than the estimate
        state = worker.current().json()
        clock.advance(60)
        handle = state["item"]["id"]
        assert worker.answer(handle, gold_answer(worker.example(handle))).status_code == 201
    clock.advance((limit - 20) * 60 + 60)  # the part's time limit passes
    state = worker.current().json()
    assert state["step"] == "expired" and state["completion"]["code"] == screen_out_code(sst)
    assert f"cc={screen_out_code(sst)}" in state["completion"]["redirect_url"]
    fake.submit(sid, fake.code(sid, "FIXED_SCREENOUT"))  # Prolific pays its fixed screen-out reward
    assert fake.submissions[sid]["status"] == "SCREENED OUT"
    sync(study)
    enrollment = Enrollment.objects.get(worker__external_id=pid)
    assert enrollment.answers.count() == 20, "every answer kept"
    report = pay_bonuses(study)
    (row,) = BonusPayment.objects.filter(enrollment=enrollment)
    # 20 minutes of answers and the time up to the limit (10 minutes, capped at the idle cap of 5) at 12/h, less the
    # screen-out reward Prolific paid by itself (its minimum, 14 cents).
    assert fake.screen_out_paid(pid) == 0.14
    assert row.part == 1 and row.active_seconds == 25 * 60 and row.amount == Decimal("5.00") - Decimal("0.14")
    assert report.paid == [(pid, row.amount)] and fake.paid_total(pid) == float(row.amount)
    assert pay_bonuses(study).paid == [] and fake.paid_total(pid) == float(row.amount), "never paid twice"
