"""Attention checks: instructed-response items a researcher writes, optional per study.

Off by default, as in the paper. A researcher writes a check for one of the study's tasks
("For this item choose negative."; "Mark the word 'river'.") and the position in the test
step it comes before. Workers of that task's cohorts see it there as a normal item; their
answer goes to ``AttentionAnswer``, never to ``Answer``, so no result (Table 5, majority vote,
agreement, annotator rows, prediction files) and no progress total in the researcher's tables
counts it. Failures are shown per worker on the cohort page: the researcher decides what they
mean; nothing here filters or rejects anyone.

A check must not be told apart from an item: it offers what an item of the task offers (a ReCoRD-like
check, the text's names as a real item's candidates, ``entity_candidates``), the worker can change their
answer to it as to any item until they answer the next one (the check is scored on the final answer), and
each worker meets it at a place of their own: near the position the researcher chose, drawn per
enrollment (``shown_before``), so that workers comparing notes find no fixed place. A check can be written at
any time; a worker meets the checks written before their test step began (``checks_of``), so the count they
are told never changes under them (the researcher trying the link first does not stop a check).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import Exists, Max, OuterRef

from tasks_data.models import Example, Task
from tasks_data.s1 import as_set

from .answers import InvalidAnswer, validate_answer
from .estimates import Estimate, cohort_estimate, enrollment_estimate, split
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
    had_checks = study.has_attention_checks
    try:
        with transaction.atomic():
            Study.objects.select_for_update().filter(pk=study.pk).first()
            check.item_id = _reserve_item_id()
            check.save()
            if not study.has_attention_checks:
                study.has_attention_checks = True
                study.save(update_fields=["has_attention_checks"])
            _keep_published_parts(study, task_row, spec.name)
            AuditEvent.objects.create(
                study=study,
                actor=actor,
                action="add attention check",
                reason=f"{spec.name}, before test item {position}: {check.question}",
            )
    except ValidationError:
        study.has_attention_checks = had_checks  # rolled back with the rest
        raise
    return check


def _keep_published_parts(study: Study, task: Task, name: str) -> None:
    """ValidationError when the check just written would change the parts of a cohort its crowd platform already
    lists part by part (each part its own listing, with its pay): a worker would meet a part nobody published."""
    for cohort in Cohort.objects.filter(study=study, task=task).select_related("study", "task"):
        listed = study.provider.listed_parts(cohort)
        parts = len(cohort_estimate(cohort).parts)
        if listed and parts != len(listed):
            raise ValidationError(
                {
                    "position": f"{name} {cohort.shots}-shot is published on {study.provider.name} in {len(listed)} "
                    f"part(s); with this check its test step would need {parts} (no part may outgrow the study's "
                    f"sitting cap of {study.sitting_minutes} minutes). Write checks before publishing."
                }
            )


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


# Each worker meets a check within this share of the test step on either side of the researcher's position.
SPREAD = 0.1
MIN_SPREAD = 2  # items, on a short test step


def spread(test_items: int) -> int:
    """How far from the researcher's position a worker may meet a check, in test items, on either side."""
    return max(MIN_SPREAD, round(SPREAD * test_items))


def shown_before(check: AttentionCheck, *, seed: int, test_items: int, part: tuple[int, int] | None = None) -> int:
    """The test item (0-based) before which a worker meets the check: drawn near the researcher's position (within
    ``SPREAD`` of the test step), per enrollment (its ``order_seed``) and check, the same on every request; within
    ``part`` (the test positions [first, end) of the part that holds the researcher's position), so that every
    worker meets it in the same part, the one whose item count includes it (``estimates.split``)."""
    first, end = part or (0, test_items)
    low = max(0, first, check.position - spread(test_items))
    high = max(low, min(test_items - 1, end - 1, check.position + spread(test_items)))
    return random.Random(f"{seed}:{check.item_id}").randint(low, high)


def _part_holding(bounds: list[tuple[int, int]], position: int) -> tuple[int, int]:
    return next(((first, end) for first, end in bounds if first <= position < end), bounds[-1])


def began_testing_at(enrollment: Enrollment):
    """When the worker's test step began (the end of training; joining, without training); None before."""
    return enrollment.training_finished_at if enrollment.cohort.shots else enrollment.enrolled_at


def checks_of(enrollment: Enrollment):
    """The checks a worker meets: those of their study's task written before their test step began (all, before
    it begins). A check written later is not theirs: the test step's count a worker is told (on the description
    page and when the test step starts) never grows under them, and the researcher trying the link first never
    stops a check from being added."""
    checks = AttentionCheck.objects.filter(study_id=enrollment.cohort.study_id, task_id=enrollment.cohort.task_id)
    started = began_testing_at(enrollment)
    return checks.filter(created_at__lte=started) if started is not None else checks


@dataclass
class Progress:
    """Where a worker stands with the checks of their test step."""

    due: AttentionCheck | None  # the check due before the next test item
    answered: int
    total: int
    positions: list[int]  # the researcher's positions of the worker's checks: the parts hold them (estimates.split)


def progress(enrollment: Enrollment, done: int) -> Progress:
    """The worker's checks before test item ``done`` (1 query; the enrollment as ``hot_sql.fetch`` reads it, with
    ``training_total`` and ``test_total``)."""
    answered = AttentionAnswer.objects.filter(enrollment_id=enrollment.pk, attention_check=OuterRef("pk"))
    checks = list(checks_of(enrollment).annotate(answered=Exists(answered)).order_by("position", "id"))
    positions = [c.position for c in checks]
    bounds = part_bounds(enrollment, positions)
    places = {
        c.pk: shown_before(
            c,
            seed=enrollment.order_seed,
            test_items=enrollment.test_total,
            part=_part_holding(bounds, c.position),
        )
        for c in checks
    }
    checks.sort(key=lambda c: (places[c.pk], c.position, c.pk))
    due = next((c for c in checks if not c.answered and places[c.pk] <= done), None)
    return Progress(due, sum(c.answered for c in checks), len(checks), positions)


def check_positions(enrollment: Enrollment) -> list[int]:
    """The test positions of the checks a worker meets (no query in a study without checks)."""
    if not enrollment.cohort.study.has_attention_checks:
        return []
    return list(checks_of(enrollment).values_list("position", flat=True))


def worker_estimate(enrollment: Enrollment) -> Estimate:
    """The cohort's estimate as one worker meets it: their checks counted as items in the parts that hold them, so
    that no count they read tells a check from an item."""
    return enrollment_estimate(enrollment, checks=check_positions(enrollment))


def part_items(enrollment: Enrollment, bounds: list[tuple[int, int]], positions: list[int], part: int) -> int:
    """The items of a worker's part: its test items and checks, and the training step in part 1 (the enrollment as
    ``hot_sql.fetch`` reads it, with ``training_total`` and ``test_total``)."""
    first, end = bounds[min(part, len(bounds)) - 1]
    held = sum(1 for p in positions if first <= min(p, enrollment.test_total - 1) < end)
    return (enrollment.training_total if part == 1 and enrollment.cohort.shots else 0) + end - first + held


def part_bounds(enrollment: Enrollment, positions: list[int]) -> list[tuple[int, int]]:
    """(first, end) test positions of each part of the worker's test step, their checks at ``positions``
    (``estimates.split``), from the counts the hot path read with the enrollment: no query."""
    cohort = enrollment.cohort
    return split(
        training_items=enrollment.training_total if cohort.shots else 0,
        test_items=enrollment.test_total,
        seconds_per_item=cohort.task.spec.seconds_per_item,
        sitting_minutes=cohort.study.sitting_minutes,
        checks=positions,
    )


def count(enrollment: Enrollment) -> int:
    """How many checks a worker meets (the totals a worker is shown include them)."""
    return checks_of(enrollment).count()


def last_answer(enrollment_id: int) -> AttentionAnswer | None:
    """The worker's latest answer to a check, with its check (1 query)."""
    return (
        AttentionAnswer.objects.filter(enrollment_id=enrollment_id)
        .select_related("attention_check")
        .order_by("-answered_at", "-pk")
        .first()
    )


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


def new_answer(enrollment: Enrollment, check: AttentionCheck, raw_answer) -> AttentionAnswer:
    """A worker's answer to a check, validated (``InvalidAnswer`` as for any item), not yet stored (the hot path's
    ``insert`` stores it)."""
    valid = validate_answer(enrollment.cohort.task.spec, as_item(check, enrollment.cohort.task), raw_answer)
    return AttentionAnswer(
        enrollment=enrollment,
        attention_check=check,
        texts=valid.texts,
        spans=valid.spans,
        passed=as_set(valid.texts) == as_set(check.expected),
        served_at=enrollment.current_served_at,
    )


def revise_answer(enrollment: Enrollment, answer: AttentionAnswer, raw_answer) -> AttentionAnswer:
    """Change the worker's answer to a check (their last answer, under the enrollment's lock: the caller's), as
    any item's: validated alike (``InvalidAnswer``), scored on the final answer, audited with both values."""
    check = answer.attention_check
    valid = validate_answer(enrollment.cohort.task.spec, as_item(check, enrollment.cohort.task), raw_answer)
    passed = as_set(valid.texts) == as_set(check.expected)
    AttentionAnswer.objects.filter(pk=answer.pk).update(texts=valid.texts, spans=valid.spans, passed=passed)
    AuditEvent.objects.create(
        study_id=enrollment.cohort.study_id,
        enrollment=enrollment,
        actor="worker",
        action="revise attention check answer",
        from_state=enrollment.state,
        to_state=enrollment.state,
        reason=json.dumps(
            {
                "attention_check": check.pk,
                "before": {"texts": answer.texts, "spans": answer.spans, "passed": answer.passed},
                "after": {"texts": valid.texts, "spans": valid.spans, "passed": passed},
            },
            ensure_ascii=False,
        ),
    )
    answer.texts, answer.spans, answer.passed = valid.texts, valid.spans, passed
    return answer


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
