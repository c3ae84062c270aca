"""Never a dead end, and a long test step in sittings, through the worker's pages on the generic link: a warning and an
"end now" before the part's time limit, a code and the pay for the time worked when it runs out (answers kept), and
"part k of n" with the resume code between parts. The clock is moved, never slept."""

import re
from datetime import timedelta
from decimal import Decimal

import pytest
from django.test import Client

from annotation import selectors, services
from annotation.estimates import cohort_estimate
from annotation.models import Answer, Enrollment
from annotation.pay import worked_seconds
from annotation.protocol import part_seconds, pay
from tests.annotation.factories import WorkerClient, done_code, gold_answer, screen_out_code, trim_test_set
from tests.clock import Clock
from tests.worker_pages.factories import cohort_of, make_study

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clues")]


def generic_study(**options):
    return make_study(
        shots=(0,),
        platform="generic",
        worker_id_param="worker_id",
        pay_rate=Decimal("12"),
        idle_cap_seconds=300,
        **options,
    )


def join(client: Client, cohort, worker_id: str, **extra):
    response = client.get(cohort.join_path, {"worker_id": worker_id, **extra})
    assert response.status_code == 302, response.content.decode()[:300]
    return Enrollment.objects.get(worker__external_id=worker_id)


def time_left(html: str) -> str:
    """The opening tag of the item page's clock: its warning and end-now offer, counting down from the server's
    deadline."""
    return re.search(r'<div class="banner time-left"[^>]*>', html).group(0)


def answer_items(client: Client, enrollment: Enrollment, clock: Clock, count: int, pace: float) -> None:
    """Answer ``count`` items through the page's form (htmx off: a redirect after each), ``pace`` seconds each."""
    for _ in range(count):
        state = services.current_item(enrollment_id=enrollment.pk)
        assert state.item is not None
        clock.advance(pace)
        label = gold_answer(state.item)[0]
        response = client.post("/work/answer/", {"item": state.item_handle, "label": label})
        assert response.status_code == 302, response.content.decode()[:300]


def test_a_worker_whose_time_runs_out_in_a_part_gets_a_code_and_the_pay_for_the_time_worked(clock):
    trim_test_set("sst2", 60)
    study = generic_study()
    cohort = cohort_of(study, "sst2", 0)
    limit = cohort_estimate(cohort).part(1).time_limit
    assert 30 <= limit <= 60  # 60 items x 8 s = 8 min: room for a slow worker and a break
    warn = max(5 * 60, 0.2 * limit * 60)  # the page warns once this many seconds are left
    client = Client()
    enrollment = join(client, cohort, "slow")
    client.post("/work/start/")
    answer_items(client, enrollment, clock, 10, pace=60)  # 10 minutes: the warning waits, hidden, for its time
    banner = time_left(client.get("/work/").content.decode())
    assert " hidden" in banner and f'data-seconds-left="{(limit - 10) * 60}.000"' in banner
    assert f'data-warn-seconds="{warn:.0f}"' in banner
    clock.advance((limit - 10) * 60 - 300)  # 5 minutes left: the page warns and offers to end the part
    html = client.get("/work/").content.decode()
    banner = time_left(html)
    assert " hidden" not in banner and 'data-seconds-left="300.000"' in banner and 'data-role="stop"' in html
    assert '<span class="clock" role="timer" data-role="clock">5:00</span> left' in html
    clock.advance(6 * 60)  # the time limit passes
    html = client.get("/work/").content.decode()
    code = screen_out_code(cohort)
    assert 'data-role="stopped"' in html and code in html and "paid for the time you worked" in html
    enrollment.refresh_from_db()
    assert enrollment.state == Enrollment.State.EXPIRED
    assert enrollment.stopped_at == enrollment.enrolled_at + timedelta(minutes=limit), "stopped at the limit itself"
    answers = list(Answer.objects.filter(enrollment=enrollment).values_list("answered_at", flat=True))
    assert len(answers) == 10, "every answer kept"
    row = selectors.enrollment_row(enrollment)
    # The time up to the limit is paid: ten answers a minute apart, then the 20 minutes to the limit capped at the
    # idle cap of 5 (the worker may have been reading the item the limit cut short).
    seconds = part_seconds(
        start=enrollment.enrolled_at, answered_at=answers, end=enrollment.stopped_at, idle_cap_seconds=300
    )
    assert seconds == 10 * 60 + 300 and row["active_seconds"] == seconds
    assert row["pay"] == pay(seconds=seconds, rate_per_hour=Decimal("12")) == Decimal("3.00")
    # The place is offered again.
    assert join(Client(), cohort, "next").state == Enrollment.State.TESTING


def test_end_now_is_taken_only_when_the_page_offers_it_near_the_parts_limit(clock):
    trim_test_set("sst2", 60)
    study = generic_study()
    client = Client()
    sst = cohort_of(study, "sst2", 0)
    enrollment = join(client, sst, "tired")
    client.post("/work/start/")
    answer_items(client, enrollment, clock, 3, pace=20)
    limit = enrollment.timer_minutes  # the worker's own, kept as they joined
    # A minute in: the page offers no "End now", and the server refuses one posted anyway (a code for nothing).
    assert " hidden" in time_left(client.get("/work/").content.decode())
    refused = client.post("/work/stop/")
    assert refused.status_code == 409 and "only in its last minutes" in refused.content.decode()
    assert screen_out_code(sst) not in refused.content.decode()
    enrollment.refresh_from_db()
    assert enrollment.state == Enrollment.State.TESTING and enrollment.stopped_at is None
    clock.advance((limit - 6) * 60)  # 5 minutes left: the page offers it, and the server takes it
    html = client.get("/work/").content.decode()
    assert " hidden" not in time_left(html) and 'data-role="stop"' in html
    assert client.post("/work/stop/").status_code == 302
    html = client.get("/work/").content.decode()
    assert screen_out_code(sst) in html and 'data-role="stopped"' in html
    assert Answer.objects.filter(enrollment=enrollment).count() == 3
    # Paid for the time worked up to the moment they ended it: three answers of 20 s, then the minutes since capped
    # at the idle cap of 5.
    row = selectors.enrollment_row(Enrollment.objects.get(pk=enrollment.pk))
    assert row["active_seconds"] == 3 * 20 + 300


def test_with_no_answer_in_the_part_ending_it_is_a_withdrawal_and_a_time_out_gives_no_code(clock):
    trim_test_set("sst2", 60)
    study = generic_study(workers_per_cohort=1)
    sst = cohort_of(study, "sst2", 0)
    idle = WorkerClient(sst, params={"worker_id": "idle"})
    limit = Enrollment.objects.get(pk=idle.enrollment_id).timer_minutes
    clock.advance((limit - 4) * 60)  # near the limit, nothing answered
    ended = idle.send("post", "/api/work/stop/")
    assert ended.status_code == 200 and ended.json()["step"] == "withdrawn" and ended.json()["completion"] is None
    # The place is given back at once: the cohort of one takes the next worker.
    late = WorkerClient(sst, params={"worker_id": "late"})
    assert late.enrollment_id is not None and late.enrollment_id != idle.enrollment_id
    clock.advance((Enrollment.objects.get(pk=late.enrollment_id).timer_minutes + 1) * 60)  # the limit passes, nothing
    # answered in the part
    state = late.current().json()
    assert state["step"] == "expired" and state["completion"] is None
    page = late.client.get("/work/").content.decode()
    assert 'data-role="stopped"' not in page and "there is no code for it" in page
    assert screen_out_code(sst) not in late.client.get("/work/").content.decode()


def test_a_long_test_step_in_sittings_on_the_generic_link(clock):
    trim_test_set("sst2", 150)
    study = generic_study(sitting_minutes=10, workers_per_cohort=1)  # 75 items of 8 s a sitting: 2 parts
    cohort = cohort_of(study, "sst2", 0)
    estimate = cohort_estimate(cohort)
    assert [(p.first, p.end) for p in estimate.parts] == [(0, 75), (75, 150)]
    assert all(p.listed_minutes <= 10 < p.time_limit for p in estimate.parts)
    first = Client()
    enrollment = join(first, cohort, "ann")
    description = first.get("/work/").content.decode()
    assert "Part 1 of 2" in description and "In 2 parts (sittings)" in description
    first.post("/work/start/")
    answer_items(first, enrollment, clock, 75, pace=8)
    html = first.get("/work/").content.decode()
    enrollment.refresh_from_db()
    assert enrollment.state == Enrollment.State.BETWEEN
    assert "Part 1 of 2 done" in html and done_code(cohort, 1) in html and "Part 2 of 2:" in html
    assert enrollment.resume_code in html and 'data-role="next-part-start"' in html
    # The cohort is full while Ann is between parts: her place waits for her.
    assert Client().get(cohort.join_path, {"worker_id": "late"}).status_code != 302

    # The next day, in another browser: the resume code continues the enrollment, and part 2 starts.
    clock.advance(24 * 3600)
    second = Client()
    back = second.post(f"{cohort.join_path}?worker_id=ann", {"resume_code": enrollment.resume_code})
    assert back.status_code == 302, back.content.decode()[:300]
    assert second.post("/work/next-part/").status_code == 302
    html = second.get("/work/").content.decode()
    assert "Part 2 of 2" in html
    answer_items(second, enrollment, clock, 75, pace=8)
    enrollment.refresh_from_db()
    assert enrollment.state == Enrollment.State.COMPLETED and enrollment.part == 2
    final = second.get("/work/").content.decode()
    assert done_code(cohort, 2) in final and done_code(cohort, 1) not in final
    assert Enrollment.objects.filter(selectors.in_results(), pk=enrollment.pk).exists()


def test_the_worker_api_ends_a_part_and_starts_the_next(clock):
    trim_test_set("sst2", 150)
    study = generic_study(sitting_minutes=10, workers_per_cohort=2)
    cohort = cohort_of(study, "sst2", 0)
    worker = WorkerClient(cohort, params={"worker_id": "api"})
    assert worker.send("post", "/api/work/next-part/").status_code == 409, "no part to start yet"
    for _ in range(75):
        state = worker.current().json()
        clock.advance(8)
        assert worker.answer(state["item"]["id"], gold_answer(worker.example(state["item"]["id"]))).status_code == 201
    state = worker.current().json()
    assert state["step"] == "between" and state["completion"]["code"] == done_code(cohort, 1)
    clock.advance(600)  # a wait between parts
    started = worker.send("post", "/api/work/next-part/").json()
    assert started["step"] == "test" and started["progress"]["done"] == 75
    assert worker.send("post", "/api/work/stop/").status_code == 409, "too early in part 2 to end it with a code"
    for _ in range(3):
        clock.advance(8)
        handle = worker.current().json()["item"]["id"]
        assert worker.answer(handle, gold_answer(worker.example(handle))).status_code == 201
    limit = Enrollment.objects.get(pk=worker.enrollment_id).timer_minutes
    clock.advance((limit - 4) * 60)  # near part 2's limit
    stopped = worker.send("post", "/api/work/stop/").json()
    assert stopped["step"] == "expired" and stopped["completion"]["code"] == screen_out_code(cohort, 2)
    assert screen_out_code(cohort, 2) not in (screen_out_code(cohort, 1), done_code(cohort, 2))
    # Part 2 is paid from its start: three answers of 8 s, then the minutes to the end capped at 5; the wait is no
    # work.
    enrollment = Enrollment.objects.get(pk=worker.enrollment_id)
    assert worked_seconds(enrollment) == {1: 75 * 8, 2: 3 * 8 + 300}


def test_the_estimate_becomes_the_measured_median_once_three_workers_finished(clock, researcher):
    trim_test_set("sst2", 10)
    study = generic_study(workers_per_cohort=5, created_by=researcher)
    cohort = cohort_of(study, "sst2", 0)
    assert cohort_estimate(cohort).seconds_per_item == 8 and not cohort_estimate(cohort).measured
    for n, pace in enumerate((19, 20, 21)):
        client = Client()
        enrollment = join(client, cohort, f"w{n}")
        client.post("/work/start/")
        answer_items(client, enrollment, clock, 10, pace=pace)
        assert cohort_estimate(cohort).measured == (n == 2)
    estimate = cohort_estimate(cohort)
    # The typical pace of the part totals (19, 20 and 21 s an item): their geometric mean.
    assert estimate.seconds_per_item == pytest.approx(20, abs=0.05)
    assert estimate.minutes == pytest.approx(10 * 20 / 60, rel=0.01)
    html = Client().get(cohort.join_path, {"worker_id": "new"}, follow=True).content.decode()
    assert "(about 20 seconds an item)" in html and "Time: about 4 min in all" in html  # 3.3 min, listed as 4
    researcher_client = Client()
    researcher_client.force_login(researcher)
    page = researcher_client.get(f"/dashboard/studies/{study.pk}/").content.decode()
    assert "20.0 s (measured)" in page and 'data-minutes="4"' in page


def test_a_worker_between_parts_in_a_new_browser_is_welcomed_back_and_asked_for_the_resume_code(clock):
    trim_test_set("sst2", 150)
    study = generic_study(sitting_minutes=10, workers_per_cohort=1)
    cohort = cohort_of(study, "sst2", 0)
    first = Client()
    enrollment = join(first, cohort, "ann")
    first.post("/work/start/")
    answer_items(first, enrollment, clock, 75, pace=8)
    enrollment.refresh_from_db()
    assert enrollment.state == Enrollment.State.BETWEEN

    other = Client()  # a new browser, the same link
    response = other.get(cohort.join_path, {"worker_id": "ann"})
    page = response.content.decode()
    assert response.status_code == 200
    assert "Welcome back" in page and "You hold a place in this study" in page and "part 2 is waiting" in page
    assert 'name="resume_code"' in page and "cannot join" not in page and "nothing about you was kept" not in page
    wrong = other.post(f"{cohort.join_path}?worker_id=ann", {"resume_code": "WRONGCODE2"})
    assert wrong.status_code == 200 and "That resume code does not match" in wrong.content.decode()
    right = other.post(f"{cohort.join_path}?worker_id=ann", {"resume_code": enrollment.resume_code})
    assert right.status_code == 302
    assert "Part 1 of 2 done" in other.get("/work/").content.decode()
    # Someone who never took part still reads the one answer for every refusal.
    assert "cannot join" in Client().get(cohort.join_path, {"worker_id": "bob"}).content.decode()
