"""HTML and script inside dataset text are shown as text and never run: checked in Chromium.

The SST-2 contexts of the tricky release (tests/security/tricky.py) hold ``<script>`` elements,
an ``<img onerror>``, an ``<svg onload>`` breaking out of an attribute, and template syntax, each of
which would set ``window.__pwned`` if the page ran it. A worker joins through the link, reads the
description, answers training items (the feedback page shows the context again with the gold) and
test items; on every page the markup is visible literally and ``window.__pwned`` stays undefined.
A control then inserts the same markup unescaped, and it does run: the escaping is what protects.

Chromium is driven from a thread of its own: Playwright's sync API allows one instance per thread,
and tests/browser keeps one open in the main thread for the whole session.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.annotation.factories import pid_for
from tests.security.tricky import XSS, import_tricky
from tests.worker_pages.factories import cohort_of, make_study

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # the live server and the ORM beside Playwright
sync_api = pytest.importorskip("playwright.sync_api")
pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


LEFT_ITEM = """old => { const s = document.getElementById('stage'); if (!s) return false;
                        if (s.dataset.view !== 'item') return true;
                        const i = s.querySelector('input[name="item"]'); return i && i.value !== old; }"""


def assert_inert(page, where: str):
    assert page.evaluate("() => typeof window.__pwned") == "undefined", f"script ran on the {where}"
    shown = page.locator("#stage").inner_text()
    assert any(payload in shown for payload in XSS), f"the markup is not shown as text on the {where}: {shown!r}"
    assert page.locator("#stage script, #stage img[onerror], #stage svg").count() == 0, where


def journey(base_url: str, join_url: str) -> dict:
    """The worker's journey in Chromium; returns what was seen (runs in its own thread)."""
    expect = sync_api.expect
    seen = {"item": 0, "feedback": 0, "errors": []}
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = chromium.new_context(base_url=base_url).new_page()
            page.set_default_timeout(10_000)
            page.on("pageerror", lambda exc: seen["errors"].append(str(exc)))
            page.goto(join_url)
            page.wait_for_selector('#stage[data-view="description"]')
            page.get_by_role("button", name="Start").click()
            for _ in range(14):  # ten training items with their feedback, then test items
                page.wait_for_selector('#stage[data-view="item"]')
                assert_inert(page, "item page")
                seen["item"] += 1
                literal = next(p for p in XSS if p in page.locator("#stage").inner_text())
                expect(page.get_by_text(literal, exact=False).first).to_be_visible()
                old = page.locator('#answer-form input[name="item"]').input_value()
                page.keyboard.press("1")  # choose the first label...
                page.keyboard.press("Enter")  # ...and submit it
                page.wait_for_function(LEFT_ITEM, arg=old)
                if page.locator("#stage").get_attribute("data-view") == "feedback":
                    assert_inert(page, "feedback page")
                    seen["feedback"] += 1
                    page.locator('[data-role="next"]').click()
                    page.wait_for_function("() => document.getElementById('stage').dataset.view !== 'feedback'")
            page.reload()  # a full page load of the current item, not an htmx swap
            page.wait_for_selector('#stage[data-view="item"]')
            assert_inert(page, "reloaded test item page")
            # The same markup put into the page unescaped is stopped by the Content-Security-Policy...
            insert = (
                "() => document.getElementById('stage').insertAdjacentHTML('beforeend', "
                "'<img src=x onerror=window.__pwned=1>')"
            )
            page.evaluate(insert)
            page.wait_for_timeout(300)
            assert page.evaluate("() => typeof window.__pwned") == "undefined", "the CSP let an inline handler run"

            # ...and, control, does run in this browser once the header is stripped: the escaping protects on its own.
            def without_csp(route):
                response = route.fetch()
                route.fulfill(
                    response=response,
                    headers={k: v for k, v in response.headers.items() if k.lower() != "content-security-policy"},
                )

            page.route("**/work/", without_csp)
            page.reload()
            page.wait_for_selector('#stage[data-view="item"]')
            page.evaluate(insert)
            page.wait_for_function("() => window.__pwned === 1")
        finally:
            chromium.close()
    return seen


def test_markup_in_dataset_text_is_shown_literally_and_never_executed(live_server, tmp_path):
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no chromium at {CHROMIUM} (set CHROMIUM=/path/to/chromium)")
    import_tricky(tmp_path)
    study = make_study(tasks=("sst2",), shots=(10,))
    target = cohort_of(study, "sst2", 10)
    join_url = f"/join/{target.join_token}/?PROLIFIC_PID={pid_for('XSS-1')}&STUDY_ID=S&SESSION_ID=SESS-XSS-1"
    with ThreadPoolExecutor(max_workers=1) as pool:
        seen = pool.submit(journey, live_server.url, join_url).result(timeout=240)
    assert (seen["item"], seen["feedback"]) == (14, 10)
    assert not seen["errors"], seen["errors"]
