"""The researcher dashboard in Chromium at 1366x800 and 390x844.

* closing a cohort asks for confirmation and a reason, with htmx (the form beside the links, the cohort's row
  updated in place) and without JavaScript (a page of its own); a closed cohort with places left is re-opened the
  same way;
* every dashboard page fits a phone (the page itself never scrolls sideways; wide tables scroll
  inside their own box) and is screenshotted at both widths into artifacts/screenshots/.
"""

from __future__ import annotations

import re

import pytest

from annotation.models import AuditEvent, Cohort
from tests.browser.conftest import SCREENSHOTS
from tests.browser.dashboard_pages import WIDTHS, busy_study, log_in, make_researcher, no_sideways_scroll
from tests.worker_pages.factories import cohort_of, enroll, make_study

expect = pytest.importorskip("playwright.sync_api").expect
pytestmark = pytest.mark.django_db(transaction=True)


def _shoot(page, name: str, size: str):
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    width = WIDTHS[size]["width"]
    page.screenshot(path=str(SCREENSHOTS / f"dashboard-{name}-{width}.png"), full_page=True)


@pytest.mark.parametrize("size", WIDTHS)
def test_close_confirm_and_reopen_a_cohort_with_htmx_and_without_javascript(pages, demo_data, size):
    user = make_researcher()
    study = make_study(tasks=("sst2",), shots=(0, 10), created_by=user, workers_per_cohort=2, name="Closing study")
    cohort = cohort_of(study, "sst2", 10)
    enroll(cohort, "W-CLOSE-1")
    page = pages.new(viewport=WIDTHS[size])
    log_in(page, f"/dashboard/studies/{study.pk}/")
    row = page.locator("table.links tbody tr", has=page.locator(f"#link-{cohort.pk}"))
    # A Prolific study with no token, launched: it takes workers, and says plainly it runs as a plain link.
    expect(row.locator(".link-note")).to_have_text(re.compile(r"^Takes workers now\. A plain link until published"))

    # With htmx: "Close…" brings the confirmation form beside the links; nothing is closed yet.
    row.get_by_role("link", name="Close…").click()
    box = page.locator("#cohort-confirm .confirm-box")
    expect(box.get_by_role("heading")).to_have_text("Close SST-2 · 10 shots?")
    expect(box.get_by_label("Reason")).to_be_focused()
    assert page.url.endswith(f"/dashboard/studies/{study.pk}/")  # swapped in, no navigation
    _shoot(page, "close-inline", size)
    # An empty reason: the browser refuses to send the form (the server would answer 400 too).
    box.get_by_role("button", name="Close the cohort").click()
    expect(box).to_be_visible()
    assert Cohort.objects.get(pk=cohort.pk).closed_at is None
    box.get_by_label("Reason").fill("pilot <enough> data")
    page.evaluate("window.__same_page = true")
    box.get_by_role("button", name="Close the cohort").click()
    # Applied in place: what was done in the form's place, the cohort's row updated, the page not reloaded.
    expect(page.locator('#cohort-confirm [data-role="confirm-done"]')).to_have_text("Closed SST-2 10-shot.")
    assert page.evaluate("window.__same_page") is True
    expect(row.locator(".badge")).to_have_text("closed")
    expect(row.locator(".link-note")).to_have_text("Closed: this link takes no new workers.")
    assert Cohort.objects.get(pk=cohort.pk).closed_at is not None
    no_sideways_scroll(page)

    # Re-open (1 of 2 places taken), with a reason; Cancel first changes nothing.
    row.get_by_role("link", name="Re-open…").click()
    expect(page.locator("#cohort-confirm .confirm-box")).to_be_visible()
    page.locator("#cohort-confirm").get_by_role("link", name="Cancel").click()
    expect(row.locator(".badge")).to_have_text("closed")
    row.get_by_role("link", name="Re-open…").click()
    page.locator("#cohort-confirm").get_by_label("Reason").fill("one more worker needed")
    page.locator("#cohort-confirm").get_by_role("button", name="Re-open the cohort").click()
    expect(page.locator('#cohort-confirm [data-role="confirm-done"]')).to_have_text("Re-opened SST-2 10-shot.")
    expect(row.locator(".badge")).to_have_text("open")
    reasons = list(
        AuditEvent.objects.filter(study=study, action__in=("close cohort", "reopen cohort"))
        .order_by("at")
        .values_list("action", "actor", "reason")
    )
    assert reasons == [
        ("close cohort", "alice", "sst2 10-shot: pilot <enough> data"),
        ("reopen cohort", "alice", "sst2 10-shot: one more worker needed"),
    ]

    # Without JavaScript: the same links open a confirmation page; back to the cohort page after it.
    plain = pages.new(viewport=WIDTHS[size], java_script_enabled=False)
    log_in(plain, f"/dashboard/cohorts/{cohort.pk}/")
    plain.locator(".cohort-actions").get_by_role("link", name="Close…").click()
    assert plain.url.endswith(f"/dashboard/cohorts/{cohort.pk}/close/?back=cohort")
    expect(plain.get_by_role("heading", name="Close SST-2 · 10 shots?")).to_be_visible()
    no_sideways_scroll(plain)
    _shoot(plain, "close-confirm-page", size)
    plain.get_by_label("Reason").fill("closing without JavaScript")
    plain.get_by_role("button", name="Close the cohort").click()
    assert plain.url.endswith(f"/dashboard/cohorts/{cohort.pk}/")
    expect(plain.locator(".messages")).to_contain_text("Closed SST-2 10-shot.")
    expect(plain.locator(".cohort-recruitment .badge")).to_have_text("closed")
    expect(plain.locator("table").last).to_contain_text("closing without JavaScript")  # the cohort's events
    plain.locator(".cohort-actions").get_by_role("link", name="Re-open…").click()
    plain.get_by_label("Reason").fill("re-opening without JavaScript")
    plain.get_by_role("button", name="Re-open the cohort").click()
    expect(plain.locator(".cohort-recruitment .badge")).to_have_text("open")
    assert Cohort.objects.get(pk=cohort.pk).closed_at is None


@pytest.mark.parametrize("size", WIDTHS)
def test_every_dashboard_page_fits_and_is_screenshotted(pages, demo_data, size):
    user = make_researcher()
    study, ten, guesser, quiet = busy_study(user)
    page = pages.new(viewport=WIDTHS[size])
    log_in(page, "/dashboard/")
    for name, url in (
        ("study-list", "/dashboard/"),
        ("study-new", "/dashboard/studies/new/"),
        ("study", f"/dashboard/studies/{study.pk}/"),
        ("cohort", f"/dashboard/cohorts/{ten.pk}/"),
        ("results", f"/dashboard/studies/{study.pk}/results/"),
        ("confirm", f"/dashboard/cohorts/{ten.pk}/close/"),
    ):
        page.goto(url)
        expect(page.locator("h1")).to_be_visible()
        _shoot(page, name, size)
        no_sideways_scroll(page)
        if name == "study":
            expect(page.locator(".launch-notice")).to_contain_text("1 cohort not launched")
            cell = page.locator(f'#grid td[data-cohort="{ten.pk}"]')
            expect(cell.locator(".n-idle")).to_have_text("1")
            expect(cell.locator(".n-below-chance")).to_have_text("1")
        if name == "cohort":
            expect(page.locator(f"#enrollment-{guesser.pk} .flag.below-chance")).to_be_visible()
            expect(page.locator(f"#enrollment-{quiet.pk} .flag.idle")).to_be_visible()
            expect(page.locator(f"#enrollment-{guesser.pk} .flag.idle")).to_have_count(0)
        if name == "study-new":
            expect(page.get_by_label("Launch every cohort now")).to_be_checked()


@pytest.mark.parametrize("size", WIDTHS)
def test_the_prolific_page_lists_what_was_published_and_the_submissions_not_approved(pages, demo_data, size, settings):
    """The Prolific page of a published study, with a stranger's submission the sync asked to return: the published
    figures and the list fit a phone and a laptop (fake Prolific, a real HTTP server)."""
    from recruitment.publish import publish
    from recruitment.sync import sync
    from tests.annotation.factories import pid_for
    from tests.recruitment.fake_prolific import TOKEN, WORKSPACE, FakeProlific

    fake = FakeProlific().start()
    try:
        settings.PROLIFIC_API_URL, settings.PROLIFIC_API_TOKEN = fake.url, TOKEN
        settings.PROLIFIC_WORKSPACE_ID, settings.PROLIFIC_RETRIES, settings.PROLIFIC_BACKOFF = WORKSPACE, 0, 0
        user = make_researcher()
        study = make_study(tasks=("sst2",), shots=(0, 10), created_by=user, launch=False, name="On Prolific")
        publish(study, site_url="https://clues.example")
        cohort = cohort_of(study, "sst2", 0)
        sid = fake.start_submission(cohort.prolific.prolific_study_id, pid_for("stranger"))
        fake.submit(sid, fake.code(sid))
        sync(study)
        page = pages.new(viewport=WIDTHS[size])
        log_in(page, f"/dashboard/studies/{study.pk}/prolific/")
        expect(page.locator('[data-role="published"] tbody tr')).to_have_count(2)
        expect(page.locator('[data-role="published"]')).to_contain_text("0.14 USD")
        expect(page.locator('[data-role="reviews"]')).to_contain_text("no enrollment here")
        no_sideways_scroll(page)
        _shoot(page, "prolific", size)
    finally:
        fake.stop()
