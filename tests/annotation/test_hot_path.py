"""The worker's hot path in hand-written SQL (annotation/services/hot_sql.py) reads and stores exactly what
its ORM version (benchmarks/hot_orm.py, the oracle) does: the same objects, the same counts, the same stored rows."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.forms.models import model_to_dict
from django.utils import timezone

from annotation import services
from annotation.models import Answer, AuditEvent, Enrollment
from annotation.services import hot_paths, hot_sql
from benchmarks import hot_orm
from tests.annotation.factories import cohort, gold_answer, join, make_study, wrong_answer

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clues")]

COUNTS = ("training_total", "test_total", "training_done", "test_done")


def _loaded(enrollment: Enrollment) -> dict:
    """Every field of the enrollment and of what the hot path loads with it, and its counts."""
    cohort_ = enrollment.cohort
    return {
        "enrollment": model_to_dict(enrollment),
        "cohort": model_to_dict(cohort_),
        "study": model_to_dict(cohort_.study),
        "task": model_to_dict(cohort_.task),
        "enrollment.task": enrollment.task.pk,
        "counts": {name: getattr(enrollment, name, None) for name in COUNTS},
        "types": [type(getattr(enrollment, f.attname)) for f in Enrollment._meta.concrete_fields],
    }


def _same_reads(enrollment_id: int) -> None:
    for lock in (False, True):
        assert _loaded(hot_sql.fetch(enrollment_id, lock=lock)) == _loaded(hot_orm.fetch(enrollment_id, lock=lock))
    enrollment = hot_orm.fetch(enrollment_id, lock=False)
    for step in (Answer.Step.TRAINING, Answer.Step.TEST):
        assert hot_sql.answers_in_step(enrollment_id, step) == hot_orm.answers_in_step(enrollment_id, step)
    c = enrollment.cohort
    for step in (Answer.Step.TRAINING, Answer.Step.TEST):
        done, item = hot_sql.next_item(enrollment_id, step, training_set_id=c.training_set_id, task_id=c.task_id)
        oracle_done, oracle = hot_orm.next_item(
            enrollment_id, step, training_set_id=c.training_set_id, task_id=c.task_id
        )
        assert done == oracle_done == hot_sql.answers_in_step(enrollment_id, step)
        assert (item and model_to_dict(item)) == (oracle and model_to_dict(oracle))
        at = (
            hot_sql.training_item(c.training_set_id, done) if step == "training" else hot_sql.test_item(c.task_id, done)
        )
        assert (item and item.pk) == (at and at.pk)
    for position in (0, 1, enrollment.training_total - 1, enrollment.training_total, 10_000):
        a, b = hot_sql.training_item(c.training_set_id, position), hot_orm.training_item(c.training_set_id, position)
        assert (a and model_to_dict(a)) == (b and model_to_dict(b))
    for position in (0, 3, enrollment.test_total - 1, enrollment.test_total):
        a, b = hot_sql.test_item(c.task_id, position), hot_orm.test_item(c.task_id, position)
        assert (a and model_to_dict(a)) == (b and model_to_dict(b))


def _journey(settings, name: str, enrollment_id: int) -> None:
    """Answer every item through the services, on one implementation of the hot path, chosen by its name."""
    settings.CLUES_HOT_PATH = name
    n = 0
    while True:
        state = services.current_item(enrollment_id=enrollment_id)
        if state.item is None:
            return
        # A reload serves the same item.
        assert services.current_item(enrollment_id=enrollment_id).item.pk == state.item.pk
        assert Enrollment.objects.get(pk=enrollment_id).current_served_at is not None
        stored = services.submit_answer(
            enrollment_id=enrollment_id,
            item=state.item_handle,
            answer=(gold_answer if n % 3 else wrong_answer)(state.item),
        ).answer
        assert stored.pk and Answer.objects.get(pk=stored.pk).texts == stored.texts
        # The next item is not served yet: its serving time is recorded when it is read.
        assert Enrollment.objects.get(pk=enrollment_id).current_served_at is None
        n += 1


def _stored(enrollment_id: int) -> dict:
    enrollment = Enrollment.objects.get(pk=enrollment_id)
    answers = [
        (a.example_id, a.step, a.position, a.texts, a.spans, a.s1, a.served_at is not None)
        for a in Answer.objects.filter(enrollment_id=enrollment_id).order_by("position", "step")
    ]
    audit = list(
        AuditEvent.objects.filter(enrollment_id=enrollment_id)
        .order_by("pk")
        .values_list("action", "from_state", "to_state", "reason")
    )
    return {
        "state": enrollment.state,
        "training_s1": enrollment.training_s1,
        "answers": answers,
        "audit": audit,
        "served": enrollment.current_served_at,
        "finished": enrollment.training_finished_at is not None,
        "completed": enrollment.completed_at is not None,
    }


@pytest.fixture
def orm_hot_path(monkeypatch):
    """The ORM oracle offered under its name, as the load benchmark's app offers it."""
    monkeypatch.setitem(hot_paths.HOT_PATHS, "orm", hot_orm)


def test_the_hot_path_is_chosen_by_a_registered_name_never_a_module_path(settings):
    settings.CLUES_HOT_PATH = "sql"
    assert hot_paths.hot_path() is hot_sql
    settings.CLUES_HOT_PATH = "benchmarks.hot_orm"
    with pytest.raises(ImproperlyConfigured, match="not a registered hot path"):
        hot_paths.hot_path()


@pytest.mark.usefixtures("orm_hot_path")
@pytest.mark.parametrize("test_order", ["file", "shuffle"])
def test_the_sql_and_the_orm_hot_paths_read_and_store_the_same(settings, test_order):
    study = make_study(shots=[10], filter_fraction=None, filter_floor=None, test_order=test_order)
    sst10 = cohort(study, "sst2", 10)
    one, two = join(sst10, "P-sql"), join(sst10, "P-orm")
    Enrollment.objects.filter(pk=two.pk).update(order_seed=one.order_seed)  # the same order for both
    _same_reads(one.pk)
    _journey(settings, "sql", one.pk)
    _journey(settings, "orm", two.pk)
    _same_reads(one.pk)
    assert _stored(one.pk) == _stored(two.pk)
    assert _stored(one.pk)["state"] == Enrollment.State.COMPLETED and len(_stored(one.pk)["answers"]) > 10


def test_serving_times_are_marked_once_and_cleared_the_same_way():
    study = make_study(shots=[0])
    sst0 = cohort(study, "sst2", 0)
    enrollment = join(sst0, "P-served")
    for module in (hot_sql, hot_orm):
        now = Enrollment.objects.get(pk=enrollment.pk).enrolled_at
        assert module.mark_served(enrollment.pk, now) is True
        assert module.mark_served(enrollment.pk, now) is False  # only the first serving counts
        assert Enrollment.objects.get(pk=enrollment.pk).current_served_at == now
        assert module.mark_served(enrollment.pk, None) is True
        assert Enrollment.objects.get(pk=enrollment.pk).current_served_at is None
    with pytest.raises(Enrollment.DoesNotExist):
        hot_sql.fetch(10**9, lock=False)
    with pytest.raises(Enrollment.DoesNotExist):
        hot_orm.fetch(10**9, lock=False)


def test_a_read_records_the_serving_time_once_and_never_past_the_deadline():
    enrollment = join(cohort(make_study(shots=[0]), "sst2", 0), "P-serve")
    first = services.current_item(enrollment_id=enrollment.pk).enrollment.current_served_at
    assert first is not None and Enrollment.objects.get(pk=enrollment.pk).current_served_at == first
    again = services.current_item(enrollment_id=enrollment.pk).enrollment.current_served_at
    assert again == first == Enrollment.objects.get(pk=enrollment.pk).current_served_at  # the first serving counts
    # Past the part's deadline, a read (which then expires the enrollment) records no serving time.
    now = timezone.now()
    Enrollment.objects.filter(pk=enrollment.pk).update(
        current_served_at=None, timer_started_at=now - timedelta(hours=2), timer_minutes=60
    )
    read = hot_sql.fetch(enrollment.pk, lock=False, serve_at=now)
    assert read.current_served_at is None
    assert Enrollment.objects.get(pk=enrollment.pk).current_served_at is None
    # Within it, the read records it (PostgreSQL: in the read's own statement; elsewhere current_item's UPDATE).
    Enrollment.objects.filter(pk=enrollment.pk).update(timer_minutes=180)
    assert services.current_item(enrollment_id=enrollment.pk).enrollment.current_served_at is not None
    assert Enrollment.objects.get(pk=enrollment.pk).current_served_at is not None
