"""Rules that must hold under simultaneous requests, on real concurrent PostgreSQL connections."""

import threading
import time

import pytest
from django.db import connection, transaction

from annotation import services
from annotation.models import Answer, Enrollment
from annotation.protocol import JoinRefusal
from tests.annotation.threads import run_together, tiny_sst2

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _postgresql_only():
    # SQLite serialises writers with one database-wide lock and no row locks: these rules are
    # about PostgreSQL's concurrent connections (CI and production run on it).
    if connection.vendor != "postgresql":
        pytest.skip("concurrency tests need PostgreSQL: set DATABASE_URL=postgres://...")


@pytest.fixture
def sst2_task():
    """A tiny SST-2 test set, committed so every thread's connection sees it."""
    return tiny_sst2("concurrency test")


def test_twenty_simultaneous_joins_of_a_three_slot_cohort_make_exactly_three_enrollments(sst2_task):
    study = services.create_study(
        name="race", tasks=["sst2"], shots=[0], workers_per_cohort=3, launch=True, platform="prolific"
    )
    cohort = study.cohorts.get()
    backends: set[int] = set()

    def work(i):
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            backends.add(cursor.fetchone()[0])
        params = {"PROLIFIC_PID": f"{i:024x}", "STUDY_ID": "s", "SESSION_ID": f"session-{i}"}
        return services.join(token=cohort.join_token, params=params).enrollment.pk

    results = run_together(20, work)
    assert len(backends) == 20, "each join ran on its own PostgreSQL connection"
    joined = [r for r in results if isinstance(r, int)]
    refused = [r for r in results if isinstance(r, services.JoinRefused)]
    assert len(joined) == 3
    assert len(refused) == 17 and all(r.reason == JoinRefusal.FULL for r in refused), results
    assert Enrollment.objects.filter(cohort=cohort).count() == 3


def test_the_same_worker_joining_twice_at_once_gets_one_enrollment(sst2_task):
    study = services.create_study(
        name="race", tasks=["sst2"], shots=[0], workers_per_cohort=3, launch=True, platform="prolific"
    )
    cohort = study.cohorts.get()
    params = {"PROLIFIC_PID": "1" * 24, "STUDY_ID": "s", "SESSION_ID": "session-1"}
    results = run_together(8, lambda i: services.join(token=cohort.join_token, params=params).enrollment.pk)
    assert not [r for r in results if not isinstance(r, (int, services.JoinRefused))], results
    assert len({r for r in results if isinstance(r, int)}) == 1
    assert Enrollment.objects.count() == 1


def _at_first_item(pid: str) -> tuple[Enrollment, str]:
    """A worker of a new 0-shot study at its first test item, and that item's handle."""
    study = services.create_study(name="race", tasks=["sst2"], shots=[0], launch=True, platform="prolific")
    joined = services.join(token=study.cohorts.get().join_token, params={"PROLIFIC_PID": pid, "SESSION_ID": "x"})
    enrollment = joined.enrollment
    item = services.current_item(enrollment_id=enrollment.pk).item
    return enrollment, services.item_handle(enrollment_id=enrollment.pk, item_id=item.pk)


def test_simultaneous_submissions_of_one_item_store_one_answer(sst2_task):
    enrollment, handle = _at_first_item("1" * 24)
    results = run_together(
        10, lambda i: services.submit_answer(enrollment_id=enrollment.pk, item=handle, answer=["negative"])
    )
    stored = [r for r in results if isinstance(r, services.SubmitResult)]
    assert len(stored) == 1
    assert all(isinstance(r, services.Conflict) for r in results if r not in stored), results
    assert Answer.objects.filter(enrollment=enrollment).count() == 1


@pytest.mark.parametrize("change", ["withdraw", "filter"])
def test_an_answer_racing_a_change_of_state_is_not_stored_after_it(sst2_task, change):
    """The answer reads the enrollment while a researcher's (or the worker's) change holds its lock: its INSERT waits
    for the change, sees it, and stores nothing."""
    enrollment, handle = _at_first_item("2" * 24)
    locked = threading.Event()

    def work(i: int):
        if i == 0:
            with transaction.atomic():
                Enrollment.objects.select_for_update().get(pk=enrollment.pk)
                locked.set()
                time.sleep(0.5)  # the answer reads the enrollment meanwhile, then waits for this lock
                if change == "withdraw":
                    services.withdraw(enrollment_id=enrollment.pk, actor="worker", reason="race")
                else:
                    services.filter_enrollment(enrollment_id=enrollment.pk, actor="researcher", reason="race")
            return "changed"
        assert locked.wait(10)
        return services.submit_answer(enrollment_id=enrollment.pk, item=handle, answer=["negative"])

    results = run_together(2, work)
    assert results[0] == "changed", results
    assert isinstance(results[1], services.Conflict) and "no answers are taken now" in str(results[1]), results
    assert not Answer.objects.filter(enrollment=enrollment).exists()
