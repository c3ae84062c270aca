"""A reader storing a cohort's scores while a change to them is not yet committed, on real concurrent PostgreSQL
connections: the reader shows what was committed when it read, and its store waits for the change and is refused,
so the stored row never says current for scores of older answers (``results.scores._store``)."""

import threading
import time

import pytest
from django.db import connection, transaction

from annotation import services
from annotation.models import Study
from results import scores
from results.models import StoredScores
from tests.annotation.threads import run_together, tiny_sst2
from tests.results.stored import check_stored

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _postgresql_only():
    # SQLite serialises writers with one database-wide lock and has no row locks to wait on.
    if connection.vendor != "postgresql":
        pytest.skip("concurrency tests need PostgreSQL: set DATABASE_URL=postgres://...")


def _completed(cohort, i: int) -> int:
    """A worker who joins and answers every test item (gold): their enrollment id."""
    params = {"PROLIFIC_PID": f"{i:024x}", "STUDY_ID": "s", "SESSION_ID": f"session-{i}"}
    enrollment = services.join(token=cohort.join_token, params=params).enrollment
    while (state := services.current_item(enrollment_id=enrollment.pk)).item is not None:
        services.submit_answer(enrollment_id=enrollment.pk, item=state.item_handle, answer=["positive"])
    return enrollment.pk


def test_a_store_racing_an_uncommitted_change_waits_for_it_and_is_refused():
    tiny_sst2("race test")
    study = services.create_study(
        name="race", tasks=["sst2"], shots=[0], workers_per_cohort=3, launch=True, platform="prolific"
    )
    cohort = study.cohorts.get()
    first, _second = _completed(cohort, 1), _completed(cohort, 2)
    assert {c: s.n for c, s in scores.study_scores(study).items()} == {cohort.pk: 2}
    _completed(cohort, 3)  # committed: the stored scores are stale, the next reader computes and stores them
    bumped = threading.Event()

    def work(i: int):
        if i == 0:  # the researcher leaves the first worker out, and commits only once the reader waits
            with transaction.atomic():
                services.leave_out_of_results(enrollment_id=first, actor="researcher", reason="race")
                bumped.set()
                waited = time.monotonic() + 30
                with connection.cursor() as cursor:
                    while time.monotonic() < waited:
                        cursor.execute("SELECT count(*) FROM pg_locks WHERE NOT granted")
                        if cursor.fetchone()[0]:
                            return "committed while the reader waited"
                        time.sleep(0.05)
            return "the reader never waited"
        bumped.wait(timeout=30)
        return {c: s.n for c, s in scores.study_scores(Study.objects.get(pk=study.pk)).items()}

    change, read = run_together(2, work)
    assert change == "committed while the reader waited"
    assert read == {cohort.pk: 3}, "the reader shows what was committed when it read"
    row = StoredScores.objects.get(cohort=cohort)
    assert row.basis != row.changes, "its store was refused: the row says stale"
    assert {c: s.n for c, s in scores.study_scores(Study.objects.get(pk=study.pk)).items()} == {cohort.pk: 2}
    assert check_stored(study) == {cohort.pk}
