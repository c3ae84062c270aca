"""Fixtures shared by the whole suite.

* ``clues_zip``: path of the official CLUES-JSON.zip ($CLUES_DATA, else ../shared/clues/ beside the
  repository); the test is skipped, with the reason, when it is absent.
* ``clues_data``: the official release imported into the test database (an ImportReport).
* ``demo_data``: the bundled demo data (tasks_data/demo/CLUES-JSON) imported (an ImportReport).
* ``clues``: the CLUES data in the database for a test module, inside a transaction rolled back after the
  module (each test runs in its own nested transaction): the official CLUES-JSON.zip when found, else
  the demo data; the tests that use it read sizes and gold answers from the database, so they hold on either.
  It is imported once per session; the next modules get the same rows written back directly (``import_once``).
* ``own_task``: a task of one's own (``tests/tasks_data/own_tasks.py``) imported for rita, by kind.
* ``clock``: Django's clock (``timezone.now``) at a fixed moment, moved by ``clock.advance(seconds)``.
* Users: ``researcher`` (rita; ``researcher_client`` is logged in as her), ``other_researcher`` (oscar),
  ``superuser`` (root), ``plain_user`` (paula).

Every test starts with an empty local-memory cache (results, rate limits), and passwords are hashed with MD5:
a real hash costs about 0.3 s a user, and no test is about the hash's strength.
"""

import contextlib
import hashlib
import os
from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User
from hypothesis import HealthCheck, settings

from tests.clock import Clock

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
    return import_once(clues_zip, source=f"CLUES release {clues_zip.name}")


@pytest.fixture(scope="session")
def demo_path() -> Path:
    from tasks_data.management.commands.import_clues import DEMO_DATA

    if not DEMO_DATA.is_dir():
        pytest.fail(f"the bundled demo data is missing: {DEMO_DATA}")
    return DEMO_DATA


@pytest.fixture
def demo_data(db, demo_path):
    """The bundled demo data imported into the test database; returns the ImportReport."""
    from tasks_data.management.commands.import_clues import DEMO_SOURCE

    return import_once(demo_path, source=DEMO_SOURCE)


@pytest.fixture(scope="session", autouse=True)
def _fast_password_hasher():
    from django.conf import settings as django_settings
    from django.contrib.auth.hashers import get_hashers

    django_settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    get_hashers.cache_clear()


@pytest.fixture(autouse=True)
def _fresh_local_cache():
    """A value cached by one test never answers in another (a rolled-back test's ids are reused on SQLite).
    Only the per-process cache is cleared: a Redis database may be shared with other runs."""
    from django.core.cache import caches
    from django.core.cache.backends.locmem import LocMemCache

    for cache in caches.all(initialized_only=True):
        if isinstance(cache, LocMemCache):
            cache.clear()


@pytest.fixture(autouse=True)
def _fresh_task_registry():
    """The tasks of one's own a test imported are gone with its transaction: the registry forgets them after it."""
    yield
    from tasks_data import registry, selectors

    registry.set_task_source(selectors.imported_specs)


def pytest_configure(config):
    """Under pytest-xdist (-n N) each worker has its own test database (pytest-django adds the worker's name to it);
    its cache keys get the worker's name too, so that workers sharing a Redis never count each other's requests."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:
        from django.conf import settings as django_settings

        for alias in django_settings.CACHES.values():
            alias["KEY_PREFIX"] = f"{alias.get('KEY_PREFIX', '')}{worker}"


# Fixtures that flush the one Redis database of the real-broker tests: their tests share one xdist worker.
SHARED_BROKER_FIXTURES = {"celery_broker", "celery_worker_process"}


def pytest_collection_modifyitems(config, items):
    """Tests using the official data carry the official_data marker (deselect: -m "not official_data")."""
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        if "clues_zip" in names:
            item.add_marker(pytest.mark.official_data)
        if names & SHARED_BROKER_FIXTURES:
            item.add_marker(pytest.mark.xdist_group("redis-broker"))


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


# What import_once wrote, by path: the ImportReport and each table's rows, written back by the next calls.
_IMPORTED: dict[str, tuple[object, list]] = {}


def _release_tables():
    from tasks_data.models import Example, Task, TrainingSet, TrainingSetItem

    return (Task, Example, TrainingSet, TrainingSetItem)  # in the order their foreign keys need


def import_once(path: Path, **options):
    """``import_release(path)`` into an empty database, the first time in the session; the next times, the rows it
    wrote, written back with one INSERT per table (a fraction of an import's cost: the reading, validation and
    model objects are paid once). The ids are the first import's (on PostgreSQL below the sequences, which never
    go back, so new rows never collide with them); the caller rolls the rows back as it would an import."""
    from django.db import connection

    from tasks_data.importer import import_release
    from tasks_data.models import Task

    key = f"{path}|{sorted(options.items())}"
    if Task.objects.exists():  # only an import into an empty database can be replayed
        return import_release(path, **options)
    if key not in _IMPORTED:
        report = import_release(path, **options)
        tables = []
        for model in _release_tables():
            fields = list(model._meta.concrete_fields)
            rows = list(model.objects.order_by("pk").values_list(*[f.attname for f in fields]))
            tables.append((model, fields, rows))
        _IMPORTED[key] = (report, tables)
        return report
    report, tables = _IMPORTED[key]
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        for model, fields, rows in tables:
            columns = ", ".join(quote(f.column) for f in fields)
            marks = ", ".join(["%s"] * len(fields))
            cursor.executemany(
                f"INSERT INTO {quote(model._meta.db_table)} ({columns}) VALUES ({marks})",
                [[f.get_db_prep_save(v, connection) for f, v in zip(fields, row, strict=True)] for row in rows],
            )
    return report


@pytest.fixture(scope="module")
def clues(django_db_setup, django_db_blocker):
    path = release_path()
    if path is None:
        pytest.skip("no CLUES data: neither CLUES-JSON.zip nor tasks_data/demo/CLUES-JSON found")
    with imported_for_module(django_db_blocker, lambda: import_once(path)) as report:
        yield report


@pytest.fixture
def clock(monkeypatch):
    """``django.utils.timezone.now`` on a clock the test moves."""
    clock = Clock()
    monkeypatch.setattr("django.utils.timezone.now", clock)
    return clock


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


@pytest.fixture
def own_task(db, researcher, tmp_path):
    """Import a task of one's own (``tests/tasks_data/own_tasks.write_task``): ``own_task(kind="spans", owner=...)``
    writes it under tmp_path and imports it for ``owner`` (rita by default); returns its Task."""
    from tasks_data.card_import import import_task
    from tests.tasks_data.own_tasks import write_task

    def make(*, owner=None, share_with=(), public=None, **options):
        folder = write_task(tmp_path / f"own-{len(list(tmp_path.iterdir()))}", **options)
        return import_task(folder, owner=owner or researcher, share_with=share_with, public=public).task

    return make
