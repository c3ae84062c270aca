"""Fixtures shared by the whole suite.

* ``clues_zip``: path of the official CLUES-JSON.zip ($CLUES_DATA, else ../shared/clues/ beside the
  repository); the test is skipped, with the reason, when it is absent.
* ``clues_data``: the official release imported into the test database (an ImportReport).
* ``demo_data``: the bundled demo data (tasks_data/demo/CLUES-JSON) imported (an ImportReport).
* ``clues``: the CLUES data imported once per test module, inside a transaction rolled back after the
  module (each test runs in its own nested transaction): the official CLUES-JSON.zip when found, else
  the demo data; the tests that use it read sizes and gold answers from the database, so they hold on either.
* Users: ``researcher`` (rita; ``researcher_client`` is logged in as her), ``other_researcher`` (oscar),
  ``superuser`` (root), ``plain_user`` (paula).
"""

import contextlib
import hashlib
import os
from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User
from hypothesis import HealthCheck, settings

REPO_ROOT = Path(__file__).resolve().parents[1]
OFFICIAL_SHA256 = "5475b29462e99abde3d93682866c217e99a43adec6ac6c8221092b9d8ea92fae"

# The machines running the suite are shared: no per-example deadline.
settings.register_profile("default", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", parent=settings.get_profile("default"), max_examples=200, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "default"))


def _official_zip() -> tuple[Path | None, str]:
    configured = os.environ.get("CLUES_DATA", "")
    if configured:
        path = Path(configured)
        if not path.is_absolute() and not path.exists():
            path = REPO_ROOT / configured
        where = f"CLUES_DATA={configured}"
    else:
        path = REPO_ROOT.parent / "shared" / "clues" / "CLUES-JSON.zip"
        where = "CLUES_DATA unset"
    if not path.is_file():
        return None, f"official CLUES-JSON.zip not found ({where}; looked at {path})"
    return path.resolve(), ""


@pytest.fixture(scope="session")
def clues_zip() -> Path:
    """The official CLUES-JSON.zip (sha256 checked: the tests' expectations are measured on it)."""
    path, reason = _official_zip()
    if path is None:
        pytest.skip(reason)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != OFFICIAL_SHA256:
        pytest.fail(f"{path} is not the official CLUES-JSON.zip (sha256 {digest}, expected {OFFICIAL_SHA256})")
    return path


@pytest.fixture
def clues_data(db, clues_zip):
    """The official release imported into the test database; returns the ImportReport."""
    from tasks_data.importer import import_release

    return import_release(clues_zip, source=f"CLUES release {clues_zip.name}")


@pytest.fixture(scope="session")
def demo_path() -> Path:
    from tasks_data.management.commands.import_clues import DEMO_DATA

    if not DEMO_DATA.is_dir():
        pytest.fail(f"the bundled demo data is missing: {DEMO_DATA}")
    return DEMO_DATA


@pytest.fixture
def demo_data(db, demo_path):
    """The bundled demo data imported into the test database; returns the ImportReport."""
    from tasks_data.importer import import_release
    from tasks_data.management.commands.import_clues import DEMO_SOURCE

    return import_release(demo_path, source=DEMO_SOURCE)


def pytest_collection_modifyitems(config, items):
    """Tests using the official data carry the official_data marker (deselect: -m "not official_data")."""
    for item in items:
        if "clues_zip" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.official_data)


@contextlib.contextmanager
def imported_for_module(django_db_blocker, load):
    """Run ``load()`` (an import) inside a transaction that is rolled back when the block ends:
    module-scoped data shared by a module's tests, each of which runs in its own nested transaction."""
    from django.db import transaction

    with django_db_blocker.unblock():
        atomic = transaction.atomic()
        atomic.__enter__()
        try:
            result = load()
        except BaseException:
            transaction.set_rollback(True)
            atomic.__exit__(None, None, None)
            raise
    try:
        yield result
    finally:
        with django_db_blocker.unblock():
            transaction.set_rollback(True)
            atomic.__exit__(None, None, None)


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
def researcher_client(client, researcher):
    """The Django test client logged in as ``researcher``."""
    client.force_login(researcher)
    return client


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
