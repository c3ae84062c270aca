"""The cohort page's actions are applied in place, at 1366x800, under the Content-Security-Policy:

* "Leave out of results" and "Count in results again" swap their row and leave the workers table as wide as before
  (within its box: the Action column never covers Pay), with no console error (no inline style in a swapped
  fragment, none settled onto one);
* a worker's id is shown whole (never broken mid-word);
* confirming "Close…" updates the cohort's status, link and actions in place: the page is not reloaded.
"""

from __future__ import annotations

import pytest

from annotation.models import Cohort, Enrollment
from tests.annotation.factories import cohort as cohort_of
from tests.annotation.factories import complete, make_study
from tests.browser.dashboard_pages import DESKTOP, log_in, make_researcher
from tests.browser.journeys import CSP_LISTENER

expect = pytest.importorskip("playwright.sync_api").expect
pytestmark = pytest.mark.django_db(transaction=True)

WIDTHS = """() => { const t = document.querySelector('table.enrollments');
  return {table: t.getBoundingClientRect().width, box: t.parentElement.clientWidth,
          columns: Array.from(t.querySelectorAll('thead th'), th => Math.round(th.getBoundingClientRect().width))};
}"""


def test_row_actions_keep_the_table_whole_and_closing_updates_in_place(pages, demo_data):
    user = make_researcher()
    study = make_study(tasks=("sst2",), shots=(10,), created_by=user, workers_per_cohort=4, filter_fraction=None)
    cohort = cohort_of(study, "sst2", 10)
    for i in range(2):
        complete(cohort, f"good-{i}")
    guesser = complete(cohort, "guesser", wrong_training=set(range(1000)), wrong_test=set(range(0, 1000, 2)))
    page = pages.new(viewport=DESKTOP)
    page.add_init_script(CSP_LISTENER)  # a CSP violation becomes a console error: the pages fixture fails on it
    log_in(page, f"/dashboard/cohorts/{cohort.pk}/")
    page.evaluate("window.__same_page = true")
    before = page.evaluate(WIDTHS)
    assert before["table"] <= before["box"], before
    # Each id on one line, whole.
    ids = page.locator("table.enrollments tbody td:first-child code")
    for i in range(ids.count()):
        assert ids.nth(i).evaluate("el => el.getClientRects().length") == 1

    row = page.locator(f"#enrollment-{guesser.pk}")
    for button, done in (
        ("Leave out of results", "Left out of the results"),
        ("Count in results again", "Counted in the results again"),
    ):
        row.get_by_label("Reason").fill("answers at random")
        row.get_by_role("button", name=button).click()
        expect(row.locator(".row-done")).to_contain_text(done)
        after = page.evaluate(WIDTHS)
        assert after["table"] == before["table"] and after["table"] <= after["box"], (button, before, after)
    assert not Enrollment.objects.get(pk=guesser.pk).left_out

    # Close…: the confirmation beside the link, then the cohort's status, link and actions updated in place.
    page.locator(".cohort-actions").get_by_role("link", name="Close…").click()
    page.locator("#cohort-confirm").get_by_label("Reason").fill("enough workers")
    page.locator("#cohort-confirm").get_by_role("button", name="Close the cohort").click()
    expect(page.locator('#cohort-confirm [data-role="confirm-done"]')).to_have_text("Closed SST-2 10-shot.")
    expect(page.locator("#cohort-recruitment .badge")).to_have_text("closed")
    expect(page.locator("#cohort-recruitment .link-note")).to_have_text("Closed: this link takes no new workers.")
    expect(page.locator("#cohort-recruitment").get_by_role("link", name="Re-open…")).to_be_visible()
    assert page.evaluate("window.__same_page") is True  # not reloaded
    assert Cohort.objects.get(pk=cohort.pk).closed_at is not None
    page.reload()
    expect(page.locator(".messages")).to_have_count(0)  # nothing left to say on the next page
