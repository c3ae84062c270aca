"""Attention checks (issue 12.6): instructed-response items a researcher writes, optional per study.

Off by default, as in the paper. A researcher writes a check for one of the study's tasks
("For this item choose negative."; "Mark the word 'river'.") and the position in the test
step it comes before. Workers of that task's cohorts see it there as a normal item; their
answer goes to ``AttentionAnswer``, never to ``Answer``, so no result (Table 5, majority vote,
agreement, annotator rows, prediction files) and no progress total in the researcher's tables
counts it. Failures are shown per worker on the cohort page: the researcher decides what they
mean; nothing here filters or rejects anyone.

Checks are written before any worker joins a cohort of the task, so every worker of a cohort
sees the same checks at the same places.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import Exists, Max, OuterRef

from tasks_data.models import Example, Task
from tasks_data.s1 import as_set

from .answers import InvalidAnswer, validate_answer
from .models import AttentionAnswer, AttentionCheck, AuditEvent, Cohort, Enrollment, Study


def add_check(
    study: Study, *, task: str, position: int, question: str, context: str, expected: str, actor: str
) -> AttentionCheck:
    """Write one attention check; ValidationError (field: message) when it cannot be used as asked."""
    if task not in study.tasks:
        raise ValidationError({"task": f"not a task of this study ({', '.join(study.tasks)})"})
    task_row = Task.objects.get(slug=task)
    spec = task_row.spec
    n_test = Example.objects.filter(task=task_row, role=Example.Role.TEST).count()
    if not isinstance(position, int) or not 0 <= position < n_test:
        raise ValidationError({"position": f"between 0 and {n_test - 1} (before that test item)"})
    if not question.strip() or not context.strip():
        raise ValidationError({"question": "write the instruction and the text"})
    if len(context) > AttentionCheck.MAX_CONTEXT:  # a TextField's max_length is not a validator
        raise ValidationError({"context": f"at most {AttentionCheck.MAX_CONTEXT} characters"})
    if Enrollment.objects.filter(cohort__study=study, cohort__task=task_row).exists():
        raise ValidationError(
            {
                "task": "workers have already joined this task's cohorts: every worker of a cohort "
                "must see the same checks"
            }
        )
    try:
        answer, candidates = spec.answer_kind.expected_from_text(spec, context, expected)
    except InvalidAnswer as exc:
        raise ValidationError({"expected": str(exc)}) from None
    check = AttentionCheck(
        study=study,
        task=task_row,
        position=position,
        question=question.strip(),
        context=context,
        expected=answer,
        candidates=candidates,
        item_id=0,
    )
    check.full_clean(exclude=["item_id"])
    with transaction.atomic():
        Study.objects.select_for_update().filter(pk=study.pk).first()
        check.item_id = _reserve_item_id()
        check.save()
        if not study.has_attention_checks:
            study.has_attention_checks = True
            study.save(update_fields=["has_attention_checks"])
        AuditEvent.objects.create(
            study=study,
            actor=actor,
            action="add attention check",
            reason=f"{spec.name}, before test item {position}: {check.question}",
        )
    return check


def _reserve_item_id() -> int:
    """The check's item id: taken from the examples' own id sequence, so that no example imported later
    can ever get it (answers, revisions and the worker's handle, ``annotation.handles``, are keyed by item
    id; the worker never sees the id itself). PostgreSQL: ``nextval`` of the identity sequence; SQLite: the
    AUTOINCREMENT counter (Django declares AutoFields AUTOINCREMENT there, so a reserved id is never reused)."""
    table = Example._meta.db_table
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT nextval(pg_get_serial_sequence(%s, 'id'))", [table])
            return cursor.fetchone()[0]
        top = max(
            Example.objects.aggregate(m=Max("id"))["m"] or 0,
            AttentionCheck.objects.aggregate(m=Max("item_id"))["m"] or 0,
        )
        if connection.vendor == "sqlite":
            cursor.execute("SELECT seq FROM sqlite_sequence WHERE name = %s", [table])
            row = cursor.fetchone()
            reserved = max(top, row[0] if row else 0) + 1
            if row:
                cursor.execute("UPDATE sqlite_sequence SET seq = %s WHERE name = %s", [reserved, table])
            else:
                cursor.execute("INSERT INTO sqlite_sequence (name, seq) VALUES (%s, %s)", [table, reserved])
            return reserved
        return top + 1  # another backend: after every id so far


def progress(enrollment: Enrollment, done: int) -> tuple[AttentionCheck | None, int, int]:
    """(the check due before test item ``done``, checks answered, checks in all) of a worker (1 query)."""
    answered = AttentionAnswer.objects.filter(enrollment_id=enrollment.pk, attention_check=OuterRef("pk"))
    checks = list(
        AttentionCheck.objects.filter(study_id=enrollment.cohort.study_id, task_id=enrollment.cohort.task_id)
        .annotate(answered=Exists(answered))
        .order_by("position", "id")
    )
    due = next((c for c in checks if not c.answered and c.position <= done), None)
    return due, sum(c.answered for c in checks), len(checks)


def count(study_id: int, task_id) -> int:
    """How many checks the workers of a study's task see (the totals a worker is shown include them)."""
    return AttentionCheck.objects.filter(study_id=study_id, task_id=task_id).count()


def answered_after(enrollment_id: int, moment) -> bool:
    """Whether the worker answered a check after ``moment`` (their last test answer): that answer is then
    no longer the last thing they answered, so it can no longer be changed, as after any item."""
    return AttentionAnswer.objects.filter(enrollment_id=enrollment_id, answered_at__gt=moment).exists()


def answered_before(enrollment_id: int, moment) -> int:
    """Checks the worker answered before ``moment``: an item's place among what the worker saw counts them."""
    return AttentionAnswer.objects.filter(enrollment_id=enrollment_id, answered_at__lt=moment).count()


def as_item(check: AttentionCheck, task: Task) -> Example:
    """The check as the item a worker sees (an unsaved Example: the worker pages and API render it as any)."""
    return Example(
        pk=check.item_id,
        task=task,
        role=Example.Role.TEST,
        clues_id="",
        context=check.context,
        question=check.question,
        gold=check.expected,
        candidates=check.candidates,
    )


def store_answer(enrollment: Enrollment, check: AttentionCheck, raw_answer) -> AttentionAnswer:
    """Validate and store a worker's answer to a check (``InvalidAnswer`` as for any item)."""
    valid = validate_answer(enrollment.cohort.task.spec, as_item(check, enrollment.cohort.task), raw_answer)
    return AttentionAnswer.objects.create(
        enrollment=enrollment,
        attention_check=check,
        texts=valid.texts,
        spans=valid.spans,
        passed=as_set(valid.texts) == as_set(check.expected),
        served_at=enrollment.current_served_at,
    )


def cohort_results(cohort: Cohort) -> dict[int, dict]:
    """Per enrollment of the cohort: ``{"answered", "failed": [{"question", "expected", "given"}]}`` (1 query)."""
    out: dict[int, dict] = {}
    for a in (
        AttentionAnswer.objects.filter(enrollment__cohort=cohort)
        .select_related("attention_check")
        .order_by("enrollment_id", "attention_check__position", "attention_check_id")
    ):
        row = out.setdefault(a.enrollment_id, {"answered": 0, "failed": []})
        row["answered"] += 1
        if not a.passed:
            row["failed"].append(
                {"question": a.attention_check.question, "expected": a.attention_check.expected, "given": a.texts}
            )
    return out
