"""The Content-Security-Policy in Chromium: the pages work under it, and it stops what it must.

Every page of these journeys listens for ``securitypolicyviolation`` and reports each violation as a
console error, which the ``pages`` fixture turns into a failure; the worker's and the researcher's
journeys of tests/browser are replayed that way. A control shows the listener catches a violation;
a ``javascript:`` form action (what an unchecked MTurk ``turkSubmitTo`` could become) is
blocked by the header alone, and runs when the header is stripped.
"""

from __future__ import annotations

import pytest

from tests.browser.journeys import CSP_LISTENER as LISTENER
from tests.browser.replays import researcher_journey, sst2_worker_keyboard_only

expect = pytest.importorskip("playwright.sync_api").expect
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def csp_pages(pages):
    """``pages`` whose every page reports CSP violations as console errors (failures at teardown)."""
    new = pages.new

    def watched(*args, **kwargs):
        page = new(*args, **kwargs)
        page.add_init_script(LISTENER)
        return page

    pages.new = watched
    return pages


def test_the_worker_journey_raises_no_csp_violation(csp_pages, shoot, demo_data):
    sst2_worker_keyboard_only(csp_pages, shoot)


def test_the_researcher_journey_raises_no_csp_violation(csp_pages, shoot, demo_data, settings):
    researcher_journey(csp_pages, shoot, settings)


def test_the_api_docs_load_under_the_policy_without_any_other_origin(csp_pages, db):
    page = csp_pages.new()
    origins = set()
    page.on("request", lambda request: origins.add(request.url.split("/")[2]))
    page.goto("/api/docs/")
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("CLUES human-evaluation platform API")
    expect(page.locator(".opblock").first).to_be_visible()
    assert page.evaluate("window.__csp") == []
    assert origins == {csp_pages.base_url.split("/")[2]}, origins


def test_the_listener_sees_a_violation(csp_pages, db):
    """The control: an inline script put into a page is refused, and reported."""
    csp_pages.expect_error(r"CSP violation: script-src")
    csp_pages.expect_error(r"inline script violates the following Content Security Policy directive")
    page = csp_pages.new()
    page.goto("/accounts/login/")
    page.evaluate("""() => { const s = document.createElement("script");
                             s.textContent = "window.__pwned = 1"; document.body.appendChild(s); }""")
    page.wait_for_function("window.__csp.length > 0")
    assert page.evaluate("window.__pwned") is None
    assert page.evaluate("window.__csp")[0].startswith("script-src")


def _submit_javascript_form(page):
    page.goto("/accounts/login/")
    page.evaluate("""() => { const f = document.createElement("form");
                             f.method = "post"; f.action = "javascript:void(window.__pwned = 'ran')";
                             document.body.appendChild(f); f.submit(); }""")
    page.wait_for_timeout(500)


def test_a_javascript_form_action_is_blocked_by_the_header(csp_pages, db):
    csp_pages.expect_error(r"CSP violation: (form-action|script-src)")
    csp_pages.expect_error(r"violates the following Content Security Policy directive")
    page = csp_pages.new()
    _submit_javascript_form(page)
    assert page.evaluate("window.__pwned") is None
    assert any(v.split()[0] in ("form-action", "script-src-elem", "script-src") for v in page.evaluate("window.__csp"))

    # The control: the same page without the header runs the script.
    control = csp_pages.new()

    def strip_csp(route):
        response = route.fetch()
        headers = {k: v for k, v in response.headers.items() if k.lower() != "content-security-policy"}
        route.fulfill(response=response, headers=headers)

    control.route("**/accounts/login/", strip_csp)
    _submit_javascript_form(control)
    assert control.evaluate("window.__pwned") is not None


def test_a_page_from_another_origin_cannot_frame_the_platform(csp_pages, db):
    page = csp_pages.new()
    page.goto("/accounts/login/")
    response = page.request.get("/accounts/login/")
    policy = response.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in policy and "object-src 'none'" in policy and "base-uri 'self'" in policy


def test_the_grid_poll_waits_while_the_focus_is_in_the_grid(csp_pages, demo_data):
    """The poll filter (which needed eval) became an htmx:beforeRequest listener: same behaviour, no eval."""
    from django.contrib.auth.models import Group, User

    from annotation.models import RESEARCHERS_GROUP
    from tests.worker_pages.factories import cohort_of, enroll, make_study

    alice = User.objects.create_user("alice", password="alice-pw-2024")
    alice.groups.add(Group.objects.get_or_create(name=RESEARCHERS_GROUP)[0])
    study = make_study(shots=(0,), created_by=alice)
    zero = cohort_of(study, "sst2", 0)
    page = csp_pages.new()
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password").fill("alice-pw-2024")
    page.get_by_role("button", name="Log in").click()
    page.goto(f"/dashboard/studies/{study.pk}/")
    enrolled = page.locator('#grid td[data-task="sst2"][data-shots="0"] .enrolled')
    target = zero.target
    expect(enrolled).to_have_text(f"0 / {target}")
    page.locator('#grid td[data-task="sst2"][data-shots="0"] a').focus()
    enroll(zero, "FOCUS-1")
    page.wait_for_timeout(4_000)  # more than one poll interval
    expect(enrolled).to_have_text(f"0 / {target}")  # not swapped under the keyboard's focus
    page.locator("h1").first.click()  # the focus leaves the grid
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    expect(enrolled).to_have_text(f"1 / {target}", timeout=10_000)


def test_the_operators_admin_raises_no_csp_violation(csp_pages, demo_data):
    from django.contrib.auth.models import User

    from tasks_data.models import Example

    User.objects.create_superuser("root", password="pw-root-123")
    csp_pages.expect_error(r"/admin/login/.*status of 404")  # the browser's /favicon.ico: the admin links none
    page = csp_pages.new()
    page.goto("/admin/login/?next=/admin/")
    page.get_by_label("Username").fill("root")
    page.get_by_label("Password").fill("pw-root-123")
    page.get_by_role("button", name="Log in").click()
    expect(page.locator("#site-name")).to_contain_text("operators")
    example = Example.objects.order_by("pk").first()
    for path in (
        "/admin/tasks_data/example/",
        f"/admin/tasks_data/example/{example.pk}/change/",
        "/admin/annotation/study/",
        "/admin/auth/user/add/",
    ):
        page.goto(path)
        page.wait_for_load_state("load")
        assert page.evaluate("window.__csp") == [], path
