"""The researcher, end to end in Chromium: log in, create a study, watch the grid, filter, download."""

from __future__ import annotations

import pytest

from tests.browser.replays import researcher_journey

pytestmark = pytest.mark.django_db(transaction=True)


def test_researcher_journey(pages, shoot, demo_data, settings):
    researcher_journey(pages, shoot, settings)
