"""axe-core (vendored, tests/browser/vendor/) on every researcher page and on /api/docs/, at 1366x800 and
390x844: no serious or critical violation (the worker's pages are checked by the walk, test_worker_walk.py).
Also: /api/docs/ is in English, themed like the site and links back to it; the cohort table fits 1366 px."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tasks_data.card_import import import_task
from tests.browser import walk
from tests.browser.conftest import SCREENSHOTS
from tests.browser.dashboard_pages import WIDTHS, busy_study, log_in, make_researcher

expect = pytest.importorskip("playwright.sync_api").expect
pytestmark = pytest.mark.django_db(transaction=True)
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "reviews"


@pytest.mark.parametrize("size", WIDTHS)
def test_no_serious_axe_violation_on_researcher_pages_and_api_docs(pages, demo_data, size):
    user = make_researcher()
    study, ten, guesser, quiet = busy_study(user)
    import_task(EXAMPLE, owner=user)  # the tasks page with a task of one's own (its share form)
    page = pages.new(viewport=WIDTHS[size])
    page.context.set_default_timeout(30_000)
    page.goto("/accounts/login/")
    found = {"login": walk.axe(page)}
    log_in(page, "/dashboard/")
    for name, url in (
        ("study-list", "/dashboard/"),
        ("study-new", "/dashboard/studies/new/"),
        ("tasks", "/dashboard/tasks/"),
        ("study", f"/dashboard/studies/{study.pk}/"),
        ("cohort", f"/dashboard/cohorts/{ten.pk}/"),
        ("results", f"/dashboard/studies/{study.pk}/results/"),
        ("confirm", f"/dashboard/cohorts/{ten.pk}/close/"),
        ("attention", f"/dashboard/studies/{study.pk}/attention-checks/"),
        ("prolific", f"/dashboard/studies/{study.pk}/prolific/"),
        ("api-docs", "/api/docs/"),
    ):
        page.goto(url)
        if name == "api-docs":
            expect(page.locator(".opblock").first).to_be_visible()
            page.locator(".opblock-summary").first.click()  # one operation open: its parameters and responses
            expect(page.locator(".opblock-body").first).to_be_visible()
        found[name] = walk.axe(page)
        page.screenshot(path=str(SCREENSHOTS / f"axe-{name}-{size}.png"))
        if name == "cohort" and size == "desktop":
            assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")
            box = page.locator("table.enrollments").evaluate(
                "t => { const s = t.closest('.table-scroll') || t.parentElement;"
                " return [s.scrollWidth, s.clientWidth]; }"
            )
            assert box[0] <= box[1], f"the workers table scrolls sideways at 1366 px: {box}"
    found = {name: v for name, v in found.items() if v}
    assert not found, json.dumps(found, indent=1)


def test_api_docs_are_in_english_link_back_and_use_the_site_theme(pages, db):
    page = pages.new()
    page.goto("/api/docs/")
    assert page.evaluate("document.documentElement.lang") == "en"
    back = page.get_by_role("link", name="CLUES human evaluation")
    expect(back).to_have_attribute("href", "/")
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("CLUES human-evaluation platform API")
    # the site's font and accent, not Swagger's
    assert "system-ui" in page.evaluate("getComputedStyle(document.body).fontFamily")
