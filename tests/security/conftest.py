"""Fixtures of the security tests.

* ``clues`` and the users: tests/conftest.py;
* ``tricky``: the release of tests/security/tricky.py (hostile and tricky texts), once per module.
"""

import pytest

from tests.security.tricky import tricky_fixture

tricky = pytest.fixture(scope="module")(tricky_fixture)
