"""Never a dead end, in Chromium on a phone and a laptop: near a part's time limit the item page warns, counts down
from the server's deadline and offers to end the part now, on screen without scrolling; ending it gives a code and
keeps every answer; when the countdown reaches zero the page says the time has passed and shows the code. Time is
moved by setting the part's start back (the server's clock is not patched); only the last seconds are waited."""

from __future__ import annotations

import re
import time
from datetime import timedelta

import pytest

from annotation import services
from annotation.estimates import cohort_estimate
from annotation.models import Answer, Enrollment
from tests.annotation.factories import gold_answer, pid_for
from tests.browser import walk
from tests.browser.conftest import SCREENSHOTS
from tests.browser.journeys import LAPTOP, PHONE, wait_view
from tests.worker_pages.factories import cohort_of, make_study

expect = pytest.importorskip("playwright.sync_api").expect
pytestmark = pytest.mark.django_db(transaction=True)

PROLIFIC = "?PROLIFIC_PID={pid}&STUDY_ID=STUDY1&SESSION_ID=SESS-{pid}"


def _started(pages, size: str, name: str):
    """A worker of a new SST-2 0-shot study at the first item, in a browser of ``size``: (study, cohort, page,
    enrollment)."""
    study = make_study(tasks=("sst2",), shots=(0,))
    cohort = cohort_of(study, "sst2", 0)
    touch = {"has_touch": True, "is_mobile": True} if size == "phone" else {}
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page = pages.new(viewport=PHONE if size == "phone" else LAPTOP, **touch)
    pid = pid_for(f"{name}-{size}")
    page.goto(f"/join/{cohort.join_token}/" + PROLIFIC.format(pid=pid))
    wait_view(page, "description")
    page.get_by_role("button", name="Start").click()
    wait_view(page, "item")
    return study, cohort, page, Enrollment.objects.get(worker__external_id=pid)


@pytest.mark.parametrize("size", ["laptop", "phone"])
def test_near_the_limit_end_now_is_in_reach_and_gives_a_code_with_the_answers_kept(pages, demo_data, size):
    study, cohort, page, enrollment = _started(pages, size, "LIMIT")
    for _ in range(2):
        state = services.current_item(enrollment_id=enrollment.pk)
        services.submit_answer(enrollment_id=enrollment.pk, item=state.item_handle, answer=gold_answer(state.item))
    expect(page.locator('[data-role="time-left"]')).to_be_hidden()  # far from the limit: no warning yet

    # Four minutes before the part's limit (the worker's own, kept as they joined).
    limit = Enrollment.objects.get(pk=enrollment.pk).timer_minutes
    assert limit == cohort_estimate(cohort).part(1).time_limit
    Enrollment.objects.filter(pk=enrollment.pk).update(
        enrolled_at=enrollment.enrolled_at - timedelta(minutes=limit - 4)
    )
    page.reload()
    wait_view(page, "item")
    banner = page.locator('[data-role="time-left"]')
    expect(banner).to_contain_text("left")
    expect(page.locator('[data-role="clock"]')).to_have_text(re.compile(r"^[34]:[0-5]\d$"))
    stop = page.locator('[data-role="stop"]')
    box = stop.bounding_box()
    height = page.viewport_size["height"]
    assert box is not None and 0 <= box["y"] and box["y"] + box["height"] <= height, "End now needs no scrolling"
    page.screenshot(path=str(SCREENSHOTS / f"27-time-left-{size}.png"))
    stop.click()
    stopped = page.locator('[data-role="stopped"]')
    expect(stopped).to_be_visible()
    expect(page.locator("#stage")).to_contain_text(study.screenout_code)
    expect(page.locator("#stage")).not_to_contain_text("mistake")  # the worker chose to end: nothing to dispute
    page.screenshot(path=str(SCREENSHOTS / f"28-ended-with-a-code-{size}.png"))
    enrollment.refresh_from_db()
    assert enrollment.stopped_at is not None
    assert Answer.objects.filter(enrollment=enrollment).count() == 2, "every answer kept"


@pytest.mark.parametrize("size", ["laptop", "phone"])
def test_the_countdown_reaches_zero_and_the_page_says_the_time_has_passed_with_the_code(pages, demo_data, size):
    study, cohort, page, enrollment = _started(pages, size, "ZERO")
    state = services.current_item(enrollment_id=enrollment.pk)
    services.submit_answer(enrollment_id=enrollment.pk, item=state.item_handle, answer=gold_answer(state.item))

    # Eight seconds before the part's limit: the server's deadline, counted down by the page.
    Enrollment.objects.filter(pk=enrollment.pk).update(
        enrolled_at=enrollment.enrolled_at - timedelta(minutes=enrollment.timer_minutes) + timedelta(seconds=8)
    )
    page.reload()
    wait_view(page, "item")
    clock = page.locator('[data-role="clock"]')
    expect(page.locator('[data-role="time-left"]')).to_be_visible()
    first = clock.inner_text()
    assert re.fullmatch(r"0:0[5-8]", first), first
    time.sleep(2)
    later = clock.inner_text()
    assert later < first, f"the clock does not count down: {first} then {later}"
    assert not walk.axe(page), "the countdown's banner"
    page.screenshot(path=str(SCREENSHOTS / f"29-countdown-{size}.png"))
    expect(page.locator("#stage")).to_contain_text("The time for this part has passed", timeout=15_000)
    expect(page.locator('[data-role="clock"]')).to_have_text("0:00")
    page.screenshot(path=str(SCREENSHOTS / f"29-countdown-at-zero-{size}.png"))
    wait_view(page, "ended")
    stopped = page.locator('[data-role="stopped"]')
    expect(stopped).to_contain_text("The time allowed for this study has passed")
    expect(page.locator("#stage")).to_contain_text(study.screenout_code)
    assert not walk.axe(page), "the ended page"
    page.screenshot(path=str(SCREENSHOTS / f"30-time-passed-with-a-code-{size}.png"))
    enrollment.refresh_from_db()
    assert enrollment.state == Enrollment.State.EXPIRED and enrollment.stopped_at is not None
    assert Answer.objects.filter(enrollment=enrollment).count() == 1, "the answer kept"


@pytest.mark.parametrize("size", ["laptop", "phone"])
def test_ending_a_part_with_nothing_answered_gives_no_code_and_says_what_to_do(pages, demo_data, size):
    """End now is a code only for work: near the limit with nothing answered, the page withdraws the worker, shows no
    code, and tells a Prolific participant to return the submission."""
    _study, _cohort, page, enrollment = _started(pages, size, "NOTHING")
    expect(page.locator('[data-role="stop"]')).to_be_hidden()  # early in the part: no End now
    limit = enrollment.timer_minutes
    Enrollment.objects.filter(pk=enrollment.pk).update(
        enrolled_at=enrollment.enrolled_at - timedelta(minutes=limit - 4)
    )
    page.reload()
    wait_view(page, "item")
    page.locator('[data-role="stop"]').click()
    wait_view(page, "ended")
    stage = page.locator("#stage")
    expect(stage).to_contain_text("there is no code for it")
    expect(stage).to_contain_text("please return your submission")
    expect(page.locator('[data-role="stopped"]')).to_have_count(0)
    page.screenshot(path=str(SCREENSHOTS / f"29-ended-with-nothing-answered-{size}.png"))
    assert Enrollment.objects.get(pk=enrollment.pk).state == "withdrawn"
