"""Time limits that fit the slow honest worker, through the worker's pages and API on the generic link: a worker at
two and a half times the task's figure, or with a long break, is not cut off; once workers finished, the limit
follows every finisher's whole part time (breaks kept); an answer sent after the deadline is told that the time has
passed and shown the code; the results say how many workers a limit cut off. The clock is moved, never slept."""

from __future__ import annotations

import json
import re
from decimal import Decimal

import pytest
from django.test import Client

from annotation.estimates import cohort_estimate, measured_fit
from annotation.models import Enrollment, PartTiming
from tests.annotation.factories import WorkerClient, gold_answer, screen_out_code, trim_test_set
from tests.clock import Clock
from tests.worker_pages.factories import cohort_of, make_study

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clues")]


def generic_study(**options):
    return make_study(
        shots=(0,),
        platform="generic",
        worker_id_param="worker_id",
        pay_rate=Decimal("12"),
        filter_fraction=None,
        **options,
    )


def work_through(worker: WorkerClient, clock: Clock, pace: float, *, break_after: int = -1, break_seconds: float = 0):
    """Answer every item the worker is given, ``pace`` seconds each (a break after item ``break_after``); the
    worker API's last state."""
    done = 0
    while (state := worker.current().json())["item"] is not None:
        clock.advance(pace + (break_seconds if done == break_after else 0))
        response = worker.answer(state["item"]["id"], gold_answer(worker.example(state["item"]["id"])))
        if response.status_code != 201:
            return response.json()
        done += 1
    return state


def limit_on_the_page(client: Client) -> int:
    """The time limit the description page states (its own, fixed as the worker's part started)."""
    html = client.get("/work/").content.decode()
    return int(re.search(r'<span data-role="time-limit">(\d+) minutes</span>', html).group(1))


def test_a_slow_honest_worker_is_not_cut_off(clock):
    """150 SST-2 items of 8 s: 20 minutes by the task's figure. A worker at 20 s an item (two and a half times the
    figure: slow, honest, within the spread of real workers) needs 50 minutes; twice the estimate (40) cut them off."""
    trim_test_set("sst2", 150)
    study = generic_study(workers_per_cohort=3)
    c = cohort_of(study, "sst2", 0)
    worker = WorkerClient(c, params={"worker_id": "slow"})
    limit = limit_on_the_page(worker.client)
    assert limit == cohort_estimate(c).part(1).time_limit >= 60
    state = work_through(worker, clock, pace=20)
    assert state["step"] == "done", state
    assert Enrollment.objects.get(pk=worker.enrollment_id).state == Enrollment.State.COMPLETED


def test_a_worker_who_takes_a_long_break_is_not_cut_off(clock):
    """60 SST-2 items of 8 s: 8 minutes by the figure (30 minutes was the limit). A worker at 12 s an item who takes
    the break the description page tells them to take when they need it (25 minutes) needs 37 minutes."""
    trim_test_set("sst2", 60)
    study = generic_study()
    c = cohort_of(study, "sst2", 0)
    worker = WorkerClient(c, params={"worker_id": "break"})
    assert limit_on_the_page(worker.client) == cohort_estimate(c).part(1).time_limit >= 40
    state = work_through(worker, clock, pace=12, break_after=30, break_seconds=25 * 60)
    assert state["step"] == "done", state


def test_the_measured_limit_follows_every_finisher_breaks_kept(clock, researcher):
    """Three quick finishers, then three who each took a 20-minute break: the limit of the next worker follows all
    six whole part times (the breaks kept, not only the first three workers, no gap dropped), and is theirs from
    the moment they join."""
    trim_test_set("sst2", 40)  # 5.3 minutes by the figure
    study = generic_study(workers_per_cohort=10, created_by=researcher)
    c = cohort_of(study, "sst2", 0)
    first = WorkerClient(c, params={"worker_id": "early"})
    before = limit_on_the_page(first.client)
    assert before == cohort_estimate(c).part(1).time_limit < 2 * 25.3
    assert work_through(first, clock, pace=8)["step"] == "done"
    for n in range(2):
        assert work_through(WorkerClient(c, params={"worker_id": f"quick{n}"}), clock, pace=8)["step"] == "done"
    after_quick = cohort_estimate(c).part(1).time_limit
    for n in range(3):
        breaker = WorkerClient(c, params={"worker_id": f"break{n}"})
        assert work_through(breaker, clock, pace=8, break_after=20, break_seconds=20 * 60)["step"] == "done"
    timings = PartTiming.objects.filter(enrollment__cohort=c)
    assert timings.count() == 6 and not timings.filter(cut_off=True).exists()
    assert sorted(round(t.seconds) for t in timings)[-3:] == [40 * 8 + 20 * 60] * 3, "the breaks are kept"
    estimate = cohort_estimate(c)
    assert estimate.measured and estimate.seconds_per_item > 8  # the breaks count in the pace
    # Half the finishers needed 25.3 minutes, near the limit of 30: the limit now leaves such a worker room.
    assert estimate.part(1).time_limit > after_quick and estimate.part(1).time_limit >= 2 * 25.3
    newcomer = WorkerClient(c, params={"worker_id": "next"})
    assert limit_on_the_page(newcomer.client) == estimate.part(1).time_limit
    assert Enrollment.objects.get(pk=newcomer.enrollment_id).timer_minutes == estimate.part(1).time_limit
    state = work_through(newcomer, clock, pace=8, break_after=20, break_seconds=40 * 60)
    assert state["step"] == "done", "the next worker, who takes a longer break still, finishes"


def test_an_answer_after_the_deadline_is_told_the_time_has_passed_and_shown_the_code(clock):
    trim_test_set("sst2", 60)
    study = generic_study()
    c = cohort_of(study, "sst2", 0)
    client = Client()
    assert client.get(c.join_path, {"worker_id": "late"}).status_code == 302
    client.post("/work/start/")
    html = client.get("/work/").content.decode()
    seconds = float(re.search(r'data-seconds-left="([\d.]+)"', html).group(1))
    limit = cohort_estimate(c).part(1).time_limit
    assert seconds == limit * 60, "the countdown starts from the server's deadline"
    # One item answered (a time-out with nothing answered in the part earns no code), then the next left open.
    handle = re.search(r'name="item" value="([^"]+)"', html).group(1)
    assert client.post("/work/answer/", {"item": handle, "label": "positive"}).status_code == 302
    html = client.get("/work/").content.decode()
    handle = re.search(r'name="item" value="([^"]+)"', html).group(1)
    clock.advance(seconds + 1)  # the page stayed open past the deadline, then the worker answered
    response = client.post("/work/answer/", {"item": handle, "label": "positive"})
    page = response.content.decode()
    assert response.status_code == 409
    assert "the time for this part had passed" in page and "already been answered" not in page
    assert 'data-role="stopped"' in page and screen_out_code(c) in page  # the code, on the same page
    assert "The time allowed for this study has passed" in page
    assert Enrollment.objects.get(worker__external_id="late").state == Enrollment.State.EXPIRED

    # The worker API says the same, with the code.
    worker = WorkerClient(c, params={"worker_id": "late-api"})
    state = worker.current().json()
    assert worker.answer(state["item"]["id"], gold_answer(worker.example(state["item"]["id"]))).status_code == 201
    state = worker.current().json()
    clock.advance(limit * 60 + 1)
    response = worker.answer(state["item"]["id"], gold_answer(worker.example(state["item"]["id"])))
    body = response.json()
    assert response.status_code == 409 and "the time for this part has passed" in body["detail"]
    assert body["step"] == "expired" and body["completion"]["code"] == screen_out_code(c)


def test_the_results_say_how_many_workers_a_limit_cut_off(clock, researcher):
    trim_test_set("sst2", 10)
    study = generic_study(workers_per_cohort=3, created_by=researcher)
    c = cohort_of(study, "sst2", 0)
    assert work_through(WorkerClient(c, params={"worker_id": "done"}), clock, pace=8)["step"] == "done"
    stuck = WorkerClient(c, params={"worker_id": "stuck"})
    first = stuck.current().json()["item"]["id"]
    assert stuck.answer(first, gold_answer(stuck.example(first))).status_code == 201  # work in the part, then stuck
    clock.advance(cohort_estimate(c).part(1).time_limit * 60 + 5)
    assert stuck.current().json()["step"] == "expired"
    assert PartTiming.objects.get(enrollment_id=stuck.enrollment_id).cut_off
    client = Client()
    client.force_login(researcher)
    page = client.get(f"/dashboard/studies/{study.pk}/results/").content.decode()
    assert "Workers cut off by a part&#x27;s time limit" in page and "SST-2 0-shot: 1." in page
    assert "1 cut off by time" in page  # under the cell
    table = json.loads(client.get(f"/api/studies/{study.pk}/export/table/", {"fmt": "json"}).content)
    assert table["cut_off_by_time"] == [{"task": "sst2", "shots": 0, "workers": 1}]
    assert table["cells"][0]["n"] == 1, "the worker cut off is not in the cell"
    csv = client.get(f"/api/studies/{study.pk}/export/table/", {"fmt": "csv"}).content.decode().splitlines()
    header, human = csv[0].split(","), next(line for line in csv if line.startswith("Human,0,")).split(",")
    assert human[header.index("SST-2 cut off by time")] == "1"
    markdown = client.get(f"/api/studies/{study.pk}/export/table/", {"fmt": "md"}).content.decode()
    assert "SST-2 0-shot: 1." in markdown


def test_a_worker_who_ends_a_part_near_its_limit_counts_in_the_measured_limits(clock):
    """End now is offered only in a part's last minutes, so those who take it are the slow. Their part counts in the
    measured limits as at least as long as they worked (as a part the limit cut off), where dropping it would lean
    the limits to the workers who finished in time and shorten them for the slow."""
    trim_test_set("sst2", 10)
    study = generic_study(workers_per_cohort=5)
    c = cohort_of(study, "sst2", 0)
    for name in ("a", "b", "c"):
        assert work_through(WorkerClient(c, params={"worker_id": name}), clock, pace=8)["step"] == "done"
    finishers = measured_fit(c)
    assert finishers is not None and finishers.workers == 3
    slow = WorkerClient(c, params={"worker_id": "slow"})
    first = slow.current().json()["item"]["id"]
    clock.advance(60)
    assert slow.answer(first, gold_answer(slow.example(first))).status_code == 201
    limit = Enrollment.objects.get(pk=slow.enrollment_id).timer_minutes
    clock.advance((limit - 1 - 3) * 60)  # three minutes before the limit: End now is offered
    ended_at = clock.now
    ended = slow.send("post", "/api/work/stop/").json()
    assert ended["step"] == "expired" and ended["completion"]["code"] == screen_out_code(c)
    timing = PartTiming.objects.get(enrollment_id=slow.enrollment_id)
    assert timing.cut_off and timing.ended_at == ended_at and timing.items == 10
    assert timing.seconds == (limit - 3) * 60
    with_slow = measured_fit(c)
    assert with_slow.workers == 4 and with_slow.log_mean > finishers.log_mean
    assert cohort_estimate(c).part(1).time_limit >= limit


def test_a_reinstated_worker_gets_back_the_time_they_spent_filtered(clock, researcher):
    """Filtered by the researcher ten minutes into training, reinstated three hours later (past the part's limit): the
    worker is not expired at once, and has what their part had left when they were filtered."""
    trim_test_set("sst2", 10)
    study = make_study(
        shots=(10,),
        platform="generic",
        worker_id_param="worker_id",
        filter_fraction=None,
        created_by=researcher,
    )
    c = cohort_of(study, "sst2", 10)
    worker = WorkerClient(c, params={"worker_id": "appeal"})
    limit = Enrollment.objects.get(pk=worker.enrollment_id).timer_minutes
    clock.advance(10 * 60)
    handle = worker.current().json()["item"]["id"]
    assert worker.answer(handle, gold_answer(worker.example(handle))).status_code == 201
    researcher_api = Client()
    researcher_api.force_login(researcher)
    url = f"/api/enrollments/{worker.enrollment_id}/"
    filtered = researcher_api.post(url + "filter/", {"reason": "by mistake"}, content_type="application/json")
    assert filtered.status_code == 200
    clock.advance(180 * 60)
    response = researcher_api.post(url + "reinstate/", {"reason": "my mistake"}, content_type="application/json")
    assert response.status_code == 200 and response.json()["state"] == "training"
    state = worker.current().json()
    assert state["step"] == "training" and state["item"] is not None, "not expired on coming back"
    assert Enrollment.objects.get(pk=worker.enrollment_id).timer_minutes == limit, "the limit they were told"
    clock.advance((limit - 10 - 1) * 60)  # a minute before the limit, less the ten minutes worked
    handle = state["item"]["id"]
    assert worker.answer(handle, gold_answer(worker.example(handle))).status_code == 201
    clock.advance(2 * 60)
    assert worker.current().json()["step"] == "expired", "the same limit, the filtered time given back"
    # Their part took them the limit, not the three hours they spent filtered besides.
    assert PartTiming.objects.get(enrollment_id=worker.enrollment_id).seconds == limit * 60
