"""Fixtures of the Prolific tests: the CLUES data, a researcher, and a fake Prolific server on 127.0.0.1."""

import pytest

from tests.annotation.conftest import clues, other_researcher, researcher  # noqa: F401 (fixtures)
from tests.prolific.fake_prolific import TOKEN, FakeProlific


@pytest.fixture
def fake(settings):
    server = FakeProlific().start()
    settings.PROLIFIC_API_URL = server.url
    settings.PROLIFIC_API_TOKEN = TOKEN
    settings.PROLIFIC_RETRIES = 1
    settings.PROLIFIC_BACKOFF = 0
    settings.PROLIFIC_TIMEOUT = 2
    yield server
    server.stop()
