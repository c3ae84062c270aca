"""A worker between parts who opens the study link in another browser, in Chromium on a laptop and a phone: welcomed
back (never "you cannot join"), asked for the resume code, and back at their part's page once it is typed; the page
is on screen without scrolling and has no serious axe finding."""

from __future__ import annotations

import pytest

from annotation import services
from annotation.models import Enrollment
from tests.annotation.factories import gold_answer
from tests.browser import walk
from tests.browser.conftest import SCREENSHOTS
from tests.browser.journeys import LAPTOP, PHONE, wait_view
from tests.worker_pages.factories import cohort_of, make_study

expect = pytest.importorskip("playwright.sync_api").expect
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("size", ["laptop", "phone"])
def test_a_worker_between_parts_is_welcomed_back_in_another_browser(pages, demo_data, size):
    # ReCoRD's demo test items at 60 s each and a 10-minute sitting: two parts.
    study = make_study(
        tasks=("record",), shots=(0,), platform="generic", worker_id_param="worker_id", sitting_minutes=10
    )
    cohort = cohort_of(study, "record", 0)
    touch = {"has_touch": True, "is_mobile": True} if size == "phone" else {}
    viewport = PHONE if size == "phone" else LAPTOP
    first = pages.new(viewport=viewport, **touch)
    worker = f"back-{size}"
    first.goto(f"/join/{cohort.join_token}/?worker_id={worker}")
    wait_view(first, "description")
    enrollment = Enrollment.objects.get(worker__external_id=worker)
    while (state := services.current_item(enrollment_id=enrollment.pk)).step == "test":
        services.submit_answer(enrollment_id=enrollment.pk, item=state.item_handle, answer=gold_answer(state.item))
    enrollment.refresh_from_db()
    assert enrollment.state == Enrollment.State.BETWEEN and enrollment.part == 1

    other = pages.new(viewport=viewport, **touch)  # another browser: no session
    other.goto(f"/join/{cohort.join_token}/?worker_id={worker}")
    expect(other.get_by_role("heading", name="Welcome back")).to_be_visible()
    expect(other.locator('[data-role="returning"]')).to_contain_text("You hold a place in this study")
    expect(other.locator("body")).not_to_contain_text("cannot join")
    code = other.get_by_label("Resume code")
    box = other.get_by_role("button", name="Continue my study").bounding_box()
    assert box is not None and box["y"] + box["height"] <= viewport["height"], "the form needs no scrolling"
    assert not walk.axe(other), "the welcome back page"
    other.screenshot(path=str(SCREENSHOTS / f"31-welcome-back-{size}.png"))
    code.fill(enrollment.resume_code)
    other.get_by_role("button", name="Continue my study").click()
    wait_view(other, "between")
    expect(other.locator("#stage")).to_contain_text("Part 1 of 2 done")
    other.screenshot(path=str(SCREENSHOTS / f"32-welcome-back-continued-{size}.png"))
