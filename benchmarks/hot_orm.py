"""The worker's hot path with the ORM: what ``annotation.services.hot_sql`` does by hand, in plain querysets.

Not shipped as an alternative: it is the oracle the SQL is checked against (the same reads, the same
stored rows: tests/annotation/test_hot_path.py), and what benchmarks/load.py ``--hot-path orm``
measures against it (``CLUES_HOT_PATH=orm``: registered by benchmarks/ceiling/apps.py).
"""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.db.models import Count, OuterRef, Subquery, Value
from django.db.models.functions import Coalesce

from annotation.models import Answer, AttentionAnswer, Enrollment, Study
from annotation.services.hot_sql import UNCHANGED
from tasks_data.models import Example, TrainingSetItem


def _count(queryset, outer: str):
    """COUNT(*) of ``queryset`` as a subquery (0 when empty)."""
    counted = queryset.order_by().values(outer).annotate(n=Count("*")).values("n")
    return Coalesce(Subquery(counted), Value(0))


def _counts(lock: bool) -> dict:
    counts = {
        "training_total": _count(
            TrainingSetItem.objects.filter(training_set_id=OuterRef("cohort__training_set_id")), "training_set_id"
        ),
        "test_total": _count(
            Example.objects.filter(task_id=OuterRef("cohort__task_id"), role=Example.Role.TEST), "task_id"
        ),
    }
    if not lock:  # a locking read that waited would count as of before the wait (see hot_sql.fetch)
        for name, step in (("training_done", Answer.Step.TRAINING), ("test_done", Answer.Step.TEST)):
            counts[name] = _count(Answer.objects.filter(enrollment_id=OuterRef("pk"), step=step), "enrollment_id")
    return counts


def fetch(enrollment_id: int, *, lock: bool, serve_at: datetime | None = None) -> Enrollment:
    """The enrollment with its cohort, study and task and the item counts of each step (hot_sql.fetch); the serving
    time is left to the caller (``mark_served``), as hot_sql leaves it on SQLite."""
    qs = Enrollment.objects.select_related("cohort__study", "cohort__task").annotate(**_counts(lock))
    if lock:
        qs = qs.select_for_update(of=("self",))
    enrollment = qs.get(pk=enrollment_id)
    enrollment.task = enrollment.cohort.task
    if not lock:
        enrollment.place_read = _place(enrollment)
    return enrollment


def _place(enrollment: Enrollment) -> tuple[str, int, Example | None] | None:
    """The item at the worker's place in the step their state is in, in the file's order (hot_sql.fetch)."""
    cohort = enrollment.cohort
    if enrollment.state == Enrollment.State.TRAINING:
        done = enrollment.training_done
        item = training_item(cohort.training_set_id, done) if cohort.training_set_id else None
        return Answer.Step.TRAINING, done, item
    if enrollment.state == Enrollment.State.TESTING and cohort.study.test_order == Study.TestOrder.FILE:
        return Answer.Step.TEST, enrollment.test_done, test_item(cohort.task_id, enrollment.test_done)
    return None


def answers_in_step(enrollment_id: int, step: str) -> int:
    return Answer.objects.filter(enrollment_id=enrollment_id, step=step).count()


def mark_served(enrollment_id: int, now: datetime | None) -> bool:
    """Record when the current item was first served (``now``), or clear it (None); True if a row changed."""
    rows = Enrollment.objects.filter(pk=enrollment_id)
    if now is not None:
        rows = rows.filter(current_served_at__isnull=True)
    return rows.update(current_served_at=now) == 1


def training_item(training_set_id: int, position: int) -> Example | None:
    item = (
        TrainingSetItem.objects.filter(training_set_id=training_set_id)
        .select_related("example")
        .order_by("position", "pk")[position : position + 1]
        .first()
    )
    return item.example if item is not None else None


def test_item(task_id: int, position: int) -> Example | None:
    return (
        Example.objects.filter(task_id=task_id, role=Example.Role.TEST)
        .order_by("position", "pk")[position : position + 1]
        .first()
    )


def next_item(
    enrollment_id: int, step: str, *, training_set_id: int | None, task_id: int
) -> tuple[int, Example | None]:
    """The answers given in the step and the item after them (hot_sql.next_item; here two statements)."""
    done = answers_in_step(enrollment_id, step)
    if step == Answer.Step.TRAINING:
        return done, training_item(training_set_id, done) if training_set_id is not None else None
    return done, test_item(task_id, done)


def insert_if_unchanged(answer: Answer, *, read: Enrollment) -> bool:
    """The answer saved and the serving time cleared, if the enrollment is as ``read`` (hot_sql.insert_if_unchanged)."""
    with transaction.atomic():
        now = Enrollment.objects.select_for_update().filter(pk=answer.enrollment_id).values(*UNCHANGED).first()
        if now is None or any(now[column] != getattr(read, column) for column in UNCHANGED):
            return False
        insert(answer, clear_served=True)
    return True


def insert(answer: Answer | AttentionAnswer, *, clear_served: bool) -> None:
    """The answer saved, and the serving time cleared when ``clear_served`` (hot_sql.insert)."""
    answer.save(force_insert=True)
    if clear_served:
        mark_served(answer.enrollment_id, None)
