"""End-to-end fixtures: a headless Chromium (the system's /usr/bin/chromium) driving the live server.

* ``browser``: one Chromium for the session (skipped when playwright or chromium is missing);
* ``pages``: a factory of pages, each in its own browser context (its own cookies = its own
  worker), that records console errors and uncaught page errors; the test fails at teardown
  if any page logged one (``pages.expect_error(pattern)`` allows a known one, e.g. a 403 page);
* ``shoot(page, name)``: a full-page screenshot at laptop (1280) and phone (375) width into
  artifacts/screenshots/ (ignored by git).

The live server runs in a thread of this process, on the PostgreSQL test database; the tests
are transactional (data is committed, then flushed after each test).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.browser.journeys import LAPTOP, PHONE

# Playwright's sync API runs an event loop in this thread; Django's ORM calls from the test are fine.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

REPO_ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = REPO_ROOT / "artifacts" / "screenshots"
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


def pytest_collection_modifyitems(config, items):
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.fspath)).is_relative_to(here):
            item.add_marker(pytest.mark.browser)
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no chromium at {CHROMIUM} (set CHROMIUM=/path/to/chromium)")
    with sync_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


class Pages:
    def __init__(self, browser, base_url: str):
        self.browser, self.base_url = browser, base_url
        self.contexts, self.errors, self.allowed = [], [], []

    def new(self, viewport=None, **kwargs):
        context = self.browser.new_context(
            viewport=viewport or LAPTOP, base_url=self.base_url, accept_downloads=True, **kwargs
        )
        context.set_default_timeout(10_000)
        page = context.new_page()
        page.on("console", lambda msg: self._console(page, msg))
        page.on("pageerror", lambda exc: self.errors.append(f"{page.url}: uncaught {exc}"))
        self.contexts.append(context)
        return page

    def _console(self, page, msg):
        if msg.type == "error":
            self.errors.append(f"{page.url}: console.error: {msg.text}")

    def expect_error(self, pattern: str):
        self.allowed.append(re.compile(pattern))

    def unexpected_errors(self) -> list[str]:
        return [e for e in self.errors if not any(p.search(e) for p in self.allowed)]

    def close(self):
        for context in self.contexts:
            context.close()


@pytest.fixture
def pages(browser, live_server):
    factory = Pages(browser, live_server.url)
    yield factory
    factory.close()
    errors = factory.unexpected_errors()
    assert not errors, "JavaScript errors in the browser:\n" + "\n".join(errors)


@pytest.fixture(scope="session")
def shoot():
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def take(page, name: str, *, phone: bool = True):
        page.screenshot(path=str(SCREENSHOTS / f"{name}-laptop.png"), full_page=True)
        if phone:
            size = page.viewport_size
            page.set_viewport_size(PHONE)
            page.screenshot(path=str(SCREENSHOTS / f"{name}-phone.png"), full_page=True)
            page.set_viewport_size(size)

    return take
