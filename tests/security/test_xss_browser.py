"""HTML and script inside dataset text are shown as text and never run: checked in Chromium.

The SST-2 contexts of the tricky release (tests/security/tricky.py) hold ``<script>`` elements,
an ``<img onerror>``, an ``<svg onload>`` breaking out of an attribute, and template syntax, each of
which would set ``window.__pwned`` if the page ran it. A worker joins through the link, reads the
description, answers training items (the feedback page shows the context again with the gold) and
test items; on every page the markup is visible literally and ``window.__pwned`` stays undefined.
A control then inserts the same markup unescaped, and it does run: the escaping is what protects.
"""

from __future__ import annotations

import pytest

from tests.browser.conftest import browser, pages  # noqa: F401 - the fixtures (Chromium, live server)
from tests.security.tricky import XSS, import_tricky
from tests.ui.helpers import cohort_of, make_study

expect = pytest.importorskip("playwright.sync_api").expect
pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def assert_inert(page, where: str):
    assert page.evaluate("() => typeof window.__pwned") == "undefined", f"script ran on the {where}"
    shown = page.locator("#stage").inner_text()
    assert any(payload in shown for payload in XSS), f"the markup is not shown as text on the {where}: {shown!r}"
    assert page.locator("#stage script, #stage img[onerror], #stage svg").count() == 0, where


def test_markup_in_dataset_text_is_shown_literally_and_never_executed(pages, tmp_path):  # noqa: F811
    import_tricky(tmp_path)
    study = make_study(tasks=("sst2",), shots=(10,))
    target = cohort_of(study, "sst2", 10)
    page = pages.new()
    page.goto(f"/join/{target.join_token}/?PROLIFIC_PID=XSS-1&STUDY_ID=S&SESSION_ID=SESS-XSS-1")
    page.wait_for_selector('#stage[data-view="description"]')
    page.get_by_role("button", name="Start").click()
    seen = {"item": 0, "feedback": 0}
    for _ in range(14):  # ten training items with their feedback, then test items
        page.wait_for_selector('#stage[data-view="item"]')
        assert_inert(page, "item page")
        seen["item"] += 1
        literal = next(p for p in XSS if p in page.locator("#stage").inner_text())
        expect(page.get_by_text(literal, exact=False).first).to_be_visible()
        old = page.locator('#answer-form input[name="example_id"]').input_value()
        page.keyboard.press("1")
        page.wait_for_function(
            """old => { const s = document.getElementById('stage'); if (!s) return false;
                        if (s.dataset.view !== 'item') return true;
                        const i = s.querySelector('input[name="example_id"]'); return i && i.value !== old; }""",
            arg=old)
        if page.locator("#stage").get_attribute("data-view") == "feedback":
            assert_inert(page, "feedback page")
            seen["feedback"] += 1
            page.locator('[data-role="next"]').click()
            page.wait_for_function("() => document.getElementById('stage').dataset.view !== 'feedback'")
    page.reload()  # a full page load of the current item, not an htmx swap
    page.wait_for_selector('#stage[data-view="item"]')
    assert_inert(page, "reloaded test item page")
    assert seen == {"item": 14, "feedback": 10}
    # Control: the same markup, put into the page unescaped, does run in this browser.
    pages.expect_error("Failed to load resource")
    page.evaluate("() => document.getElementById('stage').insertAdjacentHTML('beforeend', "
                  "'<img src=x onerror=window.__pwned=1>')")
    page.wait_for_function("() => window.__pwned === 1")
