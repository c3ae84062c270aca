"""Fixtures for the browser-UI view tests (Django test client): users, studies, bound workers.

Data: the bundled demo data (``demo_data`` from tests/conftest.py), small enough for every test.
Helpers (make_study, enroll, bind, answer_current) are in tests/worker_pages/factories.py.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User

from annotation.models import RESEARCHERS_GROUP


@pytest.fixture
def researcher(db):
    user = User.objects.create_user("res", password="pw-research-123")
    user.groups.add(Group.objects.get_or_create(name=RESEARCHERS_GROUP)[0])
    return user


@pytest.fixture
def researcher_client(client, researcher):
    client.force_login(researcher)
    return client


@pytest.fixture
def plain_user(db):
    return User.objects.create_user("plain", password="pw-plain-123")
