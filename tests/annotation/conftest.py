"""Fixtures of the annotation protocol tests (independent of tests/conftest.py).

``clues``: the CLUES data, imported once per test module inside a transaction that is
rolled back after the module (each test then runs in its own nested transaction). The
official CLUES-JSON.zip is used when found ($CLUES_DATA, else ../shared/clues/ beside the
repository), else the bundled demo data (tasks_data/demo/CLUES-JSON); the tests read
sizes and gold answers from the database, so they hold on either.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User

from tests.conftest import imported_for_module

REPO_ROOT = Path(__file__).resolve().parents[2]


def release_path() -> Path | None:
    candidates = []
    if os.environ.get("CLUES_DATA"):
        configured = Path(os.environ["CLUES_DATA"])
        candidates.append(configured if configured.is_absolute() else REPO_ROOT / configured)
    candidates.append(REPO_ROOT.parent / "shared" / "clues" / "CLUES-JSON.zip")
    candidates.append(REPO_ROOT / "tasks_data" / "demo" / "CLUES-JSON")
    return next((p for p in candidates if p.exists()), None)


@pytest.fixture(scope="module")
def clues(django_db_setup, django_db_blocker):
    from tasks_data.importer import import_release

    path = release_path()
    if path is None:
        pytest.skip("no CLUES data: neither CLUES-JSON.zip nor tasks_data/demo/CLUES-JSON found")
    with imported_for_module(django_db_blocker, lambda: import_release(path)) as report:
        yield report


@pytest.fixture
def researcher(db):
    user = User.objects.create_user("rita", password="pw-rita-123")
    user.groups.add(Group.objects.get_or_create(name="researchers")[0])
    return user


@pytest.fixture
def other_researcher(db):
    user = User.objects.create_user("oscar", password="pw-oscar-123")
    user.groups.add(Group.objects.get_or_create(name="researchers")[0])
    return user


@pytest.fixture
def superuser(db):
    return User.objects.create_superuser("root", password="pw-root-123")


@pytest.fixture
def plain_user(db):
    return User.objects.create_user("paula", password="pw-paula-123")
