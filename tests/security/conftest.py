"""Fixtures of the security tests.

* ``clues`` (the CLUES data, official else the demo, once per module) and the users: those of
  tests/annotation, imported rather than copied;
* ``tricky``: the release of tests/security/tricky.py (hostile and tricky texts), once per module.
"""

import pytest

from tests.annotation.conftest import clues, other_researcher, plain_user, researcher, superuser  # noqa: F401
from tests.security.tricky import tricky_fixture

tricky = pytest.fixture(scope="module")(tricky_fixture)
