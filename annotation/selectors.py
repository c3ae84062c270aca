"""Read-only queries for progress and per-annotator rows (paper section 4.2).

The paper's tables (Table 5 cells, model rows, agreement, learning curves) live in the
``results`` app, which builds on these.

Every function here reads; none changes anything. The UI (dashboard), the API, the
exports and the management commands all call these, so each result is computed in one
place. Each function issues a fixed number of queries, whatever the size of the study.

Who counts in the results: only *completed* enrollments (the worker answered every test
item). Filtered, withdrawn and expired enrollments, and workers still in a step, are left
out of every result (table, per-annotator results, learning curves, agreement,
predictions); they appear only in the progress views (``study_grid``,
``cohort_enrollments``, ``study_enrollments``), where the researcher follows the study and
sees what each worker is owed.

Units: S1 values on enrollments and answers are 0-1 (``training_s1``, ``test_s1``,
``learning_curve``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from django.db.models import Count, Max, Q, QuerySet

from tasks_data.card_import import Use
from tasks_data.models import Example, TrainingSetItem
from tasks_data.registry import find_task, task_order
from tasks_data.scoring import as_published, published_id

from .estimates import split, study_check_positions
from .models import RESEARCHERS_GROUP, Answer, AuditEvent, Cohort, Enrollment, PartTiming, Study
from .pay import check_answer_times, seconds_per_part
from .protocol import (
    ACTIVE_STATES,
    HOLDS_SLOT,
    State,
    at_or_below_chance,
    holds_place,
    pay,
    waits_unverified,
)

RESULT_STATES = (State.COMPLETED,)
UNVERIFIED, SUPERSEDED = Enrollment.UNVERIFIED, Enrollment.SUPERSEDED


def in_results(prefix: str = "") -> Q:
    """The enrollments every result counts (one place): completed, and not admitted unverified
    while the crowd platform could not be asked (until it verifies them) nor superseded by the genuine
    participant, and not left out by a researcher. ``prefix`` e.g. "enrollment__"."""
    return (
        Q(**{f"{prefix}state__in": RESULT_STATES})
        & ~Q(**{f"{prefix}verification__in": (UNVERIFIED, SUPERSEDED)})
        & Q(**{f"{prefix}left_out": False})
    )


# ---------------------------------------------------------------- who sees what


def is_researcher(user) -> bool:
    """The researcher role: a superuser, or a member of the ``researchers`` group."""
    if not (user and user.is_authenticated and user.is_active):
        return False
    return user.is_superuser or user.groups.filter(name=RESEARCHERS_GROUP).exists()


def studies_visible_to(user) -> QuerySet[Study]:
    """The studies a researcher may see and act on: those they created; a superuser sees all.

    A researcher who is not a superuser never sees another researcher's study (the API
    answers 404 for it, as for a study that does not exist).
    """
    qs = Study.objects.all()
    if not user.is_superuser:
        qs = qs.filter(created_by=user)
    return qs


def task_uses(task) -> list[Use]:
    """The studies whose cohorts use ``task``'s items (``tasks_data.card_import.register_use``): each study, its
    test items and the training sets of its cohorts (1 query)."""
    studies: dict[int, dict] = {}
    for study_id, name, training_set in Cohort.objects.filter(task=task).values_list(
        "study_id", "study__name", "training_set_id"
    ):
        study = studies.setdefault(study_id, {"name": name, "sets": set()})
        if training_set is not None:
            study["sets"].add(training_set)
    return [
        Use(what=f"study {s['name']!r} (id {pk})", training_sets=frozenset(s["sets"]))
        for pk, s in sorted(studies.items())
    ]


def cohort_key(slug: str, shots: int) -> tuple[tuple[int, str], int]:
    """Registry order of tasks, then shots (0, 10, 20, 30): the order of every table."""
    return task_order(slug), shots


def test_item_counts(task_ids: Iterable[int]) -> dict[int, int]:
    """Number of test items of each task (one query)."""
    rows = (
        Example.objects.filter(task_id__in=set(task_ids), role=Example.Role.TEST)
        .order_by()
        .values("task_id")
        .annotate(n=Count("id"))
        .values_list("task_id", "n")
    )
    return dict(rows)


def cut_off_by_time(study: Study) -> dict[int, int]:
    """{cohort id: its workers cut off by a part's time limit} (1 query; cohorts with none left out), those who ended
    a part near it (End now) among them: paid for the time they worked, and left out of every result (they did not
    finish). Joins the crowd platform left unconfirmed are not counted."""
    return dict(
        PartTiming.objects.filter(cut_off=True, enrollment__cohort__study=study)
        .exclude(enrollment__verification__in=(UNVERIFIED, SUPERSEDED))
        .order_by()
        .values("enrollment__cohort_id")
        .annotate(n=Count("enrollment_id", distinct=True))
        .values_list("enrollment__cohort_id", "n")
    )


def study_cohorts(study: Study) -> list[Cohort]:
    cohorts = list(Cohort.objects.filter(study=study).select_related("task"))
    cohorts.sort(key=lambda c: cohort_key(c.task.slug, c.shots))
    return cohorts


# ---------------------------------------------------------------- progress


def study_grid(study: Study) -> list[dict]:
    """One row per cohort, in table order, for following a study (4 queries).

    Keys: ``cohort`` (Cohort), ``task`` (slug), ``task_name``, ``shots``, ``enrolled``
    (enrollments holding a place, ``protocol.holds_place``: in training, in the test step or
    completed, and verified by the crowd platform or not checked), ``target``,
    ``training_finished`` (of those, how many passed the training step, i.e. are in the
    test step or completed; for 0 shots every enrolled worker), ``test_items_done`` (test
    answers given by the place holders), ``test_items_total`` (target x test items: the
    answers the cohort needs), ``completed`` (what the results count, ``in_results``),
    ``unverified`` (enrollments admitted unverified, waiting outside the places),
    ``filtered``, ``accepting`` (the join link takes new workers) and ``join_path``.
    """
    cohorts = study_cohorts(study)
    counts = {
        row["cohort_id"]: row
        for row in Enrollment.objects.filter(cohort__study=study)
        .order_by()
        .values("cohort_id")
        .annotate(
            enrolled=Count("id", filter=holds_place()),
            training_finished=Count("id", filter=holds_place() & Q(state__in=(State.TESTING, State.COMPLETED))),
            completed=Count("id", filter=in_results()),
            unverified=Count("id", filter=waits_unverified()),
            filtered=Count("id", filter=Q(state=State.FILTERED)),
        )
    }
    test_done = dict(
        Answer.objects.filter(holds_place("enrollment__"), enrollment__cohort__study=study, step=Answer.Step.TEST)
        .order_by()
        .values("enrollment__cohort_id")
        .annotate(n=Count("id"))
        .values_list("enrollment__cohort_id", "n")
    )
    n_test = test_item_counts(c.task_id for c in cohorts)
    rows = []
    for cohort in cohorts:
        row: Mapping[str, Any] = counts.get(cohort.pk, {})
        rows.append(
            {
                "cohort": cohort,
                "task": cohort.task.slug,
                "task_name": cohort.task.spec.name,
                "shots": cohort.shots,
                "enrolled": row.get("enrolled", 0),
                "target": cohort.target,
                "training_finished": row.get("training_finished", 0),
                "test_items_done": test_done.get(cohort.pk, 0),
                "test_items_total": cohort.target * n_test.get(cohort.task_id, 0),
                "completed": row.get("completed", 0),
                "unverified": row.get("unverified", 0),
                "filtered": row.get("filtered", 0),
                "accepting": cohort.launched_at is not None and cohort.closed_at is None and study.is_open,
                "join_path": cohort.join_path,
            }
        )
    return rows


def training_chance(training_set_ids: Iterable[int | None]) -> dict[int | None, float]:
    """{training set id: the chance level of its training S1 (0-1)} (1 query). A cohort without a training set
    (0 shots) has none: its None is never a key, so ``.get(cohort.training_set_id)`` is None for it.

    The mean of ``TaskSpec.chance_item_s1`` over the set's items, leaving out those whose gold
    cannot be marked (as the training S1 does, ``services.filtering.finish_training``).
    """
    per_set: dict[int | None, list[float]] = defaultdict(list)
    rows = TrainingSetItem.objects.filter(
        training_set_id__in=set(training_set_ids), example__gold_unproducible=False
    ).values_list(
        "training_set_id", "training_set__task__slug", "example__gold", "example__context", "example__candidates"
    )
    for set_id, slug, gold, context, candidates in rows:
        spec = find_task(slug)
        if spec is not None:
            texts = [context[a:b] for a, b in candidates or ()]
            per_set[set_id].append(spec.chance_item_s1(gold, texts))
    return {set_id: sum(v) / len(v) for set_id, v in per_set.items() if v}


def last_activity(enrollments: Iterable[Enrollment]) -> dict[int, datetime]:
    """{enrollment id: its last sign of life} (1 query): the latest of joining, an item served, an answer."""
    enrollments = list(enrollments)
    answered = dict(
        Answer.objects.filter(enrollment__in=enrollments)
        .order_by()
        .values("enrollment_id")
        .annotate(last=Max("answered_at"))
        .values_list("enrollment_id", "last")
    )
    return {
        e.pk: max(t for t in (e.enrolled_at, e.current_served_at, answered.get(e.pk)) if t is not None)
        for e in enrollments
    }


def cohort_attention(study: Study, *, now: datetime) -> dict[int, dict]:
    """Per cohort id: ``idle`` (workers in a step with no activity for longer than the study's idle
    cap), ``below_chance`` (slot holders whose training S1 is at or below the chance level) and
    ``last_activity`` (the latest sign of life of any worker in a step, or None) (3 queries)."""
    enrollments = list(Enrollment.objects.filter(cohort__study=study, state__in=HOLDS_SLOT).select_related("cohort"))
    active = [e for e in enrollments if e.state in ACTIVE_STATES]
    last = last_activity(active)
    chance = training_chance({e.cohort.training_set_id for e in enrollments if e.training_s1 is not None})
    out: dict[int, dict] = defaultdict(lambda: {"idle": 0, "below_chance": 0, "last_activity": None})
    for e in active:
        cell = out[e.cohort_id]
        if (now - last[e.pk]).total_seconds() > study.idle_cap_seconds:
            cell["idle"] += 1
        if cell["last_activity"] is None or last[e.pk] > cell["last_activity"]:
            cell["last_activity"] = last[e.pk]
    for e in enrollments:
        if at_or_below_chance(e.training_s1, chance.get(e.cohort.training_set_id)):
            out[e.cohort_id]["below_chance"] += 1
    return dict(out)


LONGEST_GAPS = 3  # idle gaps shown per worker


def answer_time_signals(enrolled_at, answers: Sequence[tuple], min_seconds: float) -> dict:
    """Answer-time signals of one worker, from ``(step, served_at, answered_at)`` in order.

    ``fast_share``: the share of test answers given less than ``min_seconds`` (the task's
    ``min_answer_seconds``) after the item was served (None without timed test answers);
    ``fast_answers``; ``longest_gaps``: the longest idle gaps in seconds, longest first (from
    joining to the first answer, then between answers; uncapped, unlike active time). Signals
    for the researcher to read, never a rule that filters or rejects.
    """
    durations = [
        (answered - served).total_seconds()
        for step, served, answered in answers
        if step == Answer.Step.TEST and served is not None
    ]
    fast = sum(d < min_seconds for d in durations)
    times = [enrolled_at, *sorted(answered for _step, _served, answered in answers)]
    gaps = sorted(((b - a).total_seconds() for a, b in zip(times, times[1:], strict=False)), reverse=True)
    return {
        "fast_answers": fast,
        "fast_share": fast / len(durations) if durations else None,
        "longest_gaps": [round(g, 1) for g in gaps[:LONGEST_GAPS]],
    }


def enrollment_rows(enrollments: Sequence[Enrollment]) -> list[dict]:
    """Progress, time and pay of the given enrollments, as ``cohort_enrollments`` (2 queries whatever
    their number; 4 in a study with attention checks)."""
    ids = [e.pk for e in enrollments]
    curves: dict[int, list[float]] = defaultdict(list)
    unproducible: dict[int, list[bool]] = defaultdict(list)
    test_s1s: dict[int, list[float]] = defaultdict(list)
    times: dict[int, list] = defaultdict(list)
    timing: dict[int, list[tuple]] = defaultdict(list)
    for enrollment_id, step, s1, answered_at, quirk, served_at in (
        Answer.objects.filter(enrollment_id__in=ids)
        .order_by("enrollment_id", "step", "position")
        .values_list("enrollment_id", "step", "s1", "answered_at", "example__gold_unproducible", "served_at")
    ):
        timing[enrollment_id].append((step, served_at, answered_at))
        if step == Answer.Step.TRAINING:
            curves[enrollment_id].append(s1)
            unproducible[enrollment_id].append(quirk)
        else:
            test_s1s[enrollment_id].append(s1)
        times[enrollment_id].append(answered_at)
    n_test = test_item_counts({e.task_id for e in enrollments})
    checks = study_check_positions([e.cohort for e in enrollments])
    with_checks = [e.pk for e in enrollments if e.cohort.study.has_attention_checks]
    for enrollment_id, answered in check_answer_times(with_checks).items() if with_checks else ():
        times[enrollment_id] += answered  # the time of a check's answer is paid as an item's
    rows = []
    for e in enrollments:
        study = e.cohort.study
        seconds = sum(seconds_per_part(e, times[e.pk]).values())  # the parts' time: the waits between are no work
        test = test_s1s[e.pk]
        rows.append(
            {
                "enrollment": e,
                "worker": e.worker.external_id,
                "platform": e.worker.platform,
                "task": e.cohort.task.slug,
                "task_name": e.cohort.task.spec.name,
                "shots": e.cohort.shots,
                "state": e.state,
                "enrolled_at": e.enrolled_at,
                "training_s1": e.training_s1,
                "learning_curve": curves[e.pk],
                "learning_curve_unproducible": unproducible[e.pk],  # per training item: gold cannot be marked exactly
                "training_done": len(curves[e.pk]),
                "test_done": len(test),
                "test_total": n_test.get(e.task_id, 0),
                "active_seconds": seconds,
                "pay": pay(seconds=seconds, rate_per_hour=study.pay_rate),
                **answer_time_signals(e.enrolled_at, timing[e.pk], e.cohort.task.spec.min_answer_seconds),
                # Only a completed enrollment has a test S1: the mean over every test item.
                "test_s1": sum(test) / len(test) if e.state in RESULT_STATES and test else None,
                "sitting": sitting_text(
                    e,
                    test_done=len(test),
                    test_items=n_test.get(e.task_id, 0),
                    checks=checks.get((e.cohort.study_id, e.task_id), []),
                ),
            }
        )
    return rows


def sitting_text(enrollment: Enrollment, *, test_done: int, test_items: int, checks: Sequence[int] = ()) -> str:
    """Where a worker of a cohort in parts stands, for the researcher ("" for a cohort in one part): no query, the
    parts from the items and the study's attention checks (``estimates.split``), as the cohort's listing has them."""
    cohort = enrollment.cohort
    spec = cohort.task.spec
    bounds = split(
        training_items=cohort.shots * spec.train_rows_per_shot,
        test_items=test_items,
        seconds_per_item=spec.seconds_per_item,
        sitting_minutes=cohort.study.sitting_minutes,
        checks=checks,
    )
    parts, part = len(bounds), enrollment.part
    if parts < 2:
        return ""
    if enrollment.state == State.BETWEEN:
        return f"part {part} of {parts} done; expected back for part {part + 1}"
    if enrollment.state == State.EXPIRED and enrollment.stopped_at:
        return f"stopped in part {part} of {parts}; paid for the time worked"
    if enrollment.state == State.EXPIRED and test_done >= bounds[part - 1][1]:
        return f"did not come back after part {part} of {parts}; paid for it; place offered again"
    return f"part {part} of {parts}"


def study_enrollments(
    study: Study,
    *,
    cohort: Cohort | None = None,
    cohorts: Iterable[int] | None = None,
    state: str | None = None,
    results: bool | None = None,
) -> list[dict]:
    """Every enrollment of a study (optionally of one cohort or of the given cohort ids, in one state; with
    ``results`` True only those ``in_results``, False only the others), see ``cohort_enrollments``."""
    qs = Enrollment.objects.filter(cohort__study=study).select_related("worker", "cohort__task", "cohort__study")
    if cohort is not None:
        qs = qs.filter(cohort=cohort)
    if cohorts is not None:
        qs = qs.filter(cohort_id__in=list(cohorts))
    if results is not None:
        qs = qs.filter(in_results()) if results else qs.exclude(in_results())
    if state:
        qs = qs.filter(state=state)
    enrollments = sorted(qs, key=lambda e: (*cohort_key(e.cohort.task.slug, e.cohort.shots), e.enrolled_at, e.pk))
    return enrollment_rows(enrollments)


def cohort_enrollments(cohort: Cohort) -> list[dict]:
    """Every enrollment of a cohort, in joining order, with its progress (3 queries).

    Keys: ``enrollment`` (Enrollment), ``worker`` (the platform's worker id), ``platform``,
    ``task``, ``task_name``, ``shots``, ``state``, ``enrolled_at``, ``training_s1`` (0-1 or
    None), ``learning_curve`` (S1 0-1 of each training item in order), ``training_done``,
    ``test_done``, ``test_total``, ``active_seconds`` (per part from its start, idle gaps capped at the study's
    ``idle_cap_seconds``), ``pay`` (Decimal, USD: active time x the study's hourly rate) and
    ``test_s1`` (0-1, completed enrollments only, else None); ``fast_answers``, ``fast_share``
    and ``longest_gaps`` (``answer_time_signals``) and ``learning_curve_unproducible``.
    """
    return study_enrollments(cohort.study, cohort=cohort)


def enrollment_row(enrollment: Enrollment) -> dict:
    """``cohort_enrollments``'s row for one enrollment."""
    return enrollment_rows([enrollment])[0]


def audit_log(study: Study) -> QuerySet[AuditEvent]:
    return AuditEvent.objects.filter(study=study).select_related("enrollment__worker").order_by("at", "id")


# ---------------------------------------------------------------- results (rows the results app lays out)


def annotator_rows(study: Study, *, include_all: bool = False) -> list[dict]:
    """Per-annotator rows for the results (completed enrollments), or every enrollment.

    Keys as ``cohort_enrollments`` less ``enrollment`` and ``learning_curve``, plus
    ``enrollment_id``, ``items_answered`` (training + test answers) and ``pay`` as a
    string of USD. ``include_all`` adds filtered, withdrawn, expired and unfinished
    enrollments (what each worker is owed), still marked by their ``state``.
    """
    return [annotator_row(r) for r in study_enrollments(study, results=None if include_all else True)]


def annotator_row(r: dict) -> dict:
    """``annotator_rows``' row of one ``cohort_enrollments`` row."""
    return {
        "enrollment_id": r["enrollment"].pk,
        "worker": r["worker"],
        "platform": r["platform"],
        "task": r["task"],
        "shots": r["shots"],
        "state": r["state"],
        "training_s1": r["training_s1"],
        "test_s1": r["test_s1"],
        "training_done": r["training_done"],
        "test_done": r["test_done"],
        "test_total": r["test_total"],
        "items_answered": r["training_done"] + r["test_done"],
        "active_seconds": round(r["active_seconds"], 1),
        "pay": str(r["pay"]),
        "fast_answer_share": r["fast_share"],
        "longest_idle_seconds": r["longest_gaps"][0] if r["longest_gaps"] else None,
        "longest_idle_gaps": r["longest_gaps"],  # JSON only (a list)
    }


def prediction_rows(enrollment: Enrollment) -> list[dict]:
    """One annotator's test answers in the CLUES prediction format, in test-file order (1 query).

    ``[{"id": <CLUES id>, "prediction": [strings]}, ...]``, spelled as the data spells ids and answers
    (``tasks_data.scoring.as_published``: NER "no entity" is ``[""]``), so that the official
    ``eval/S1.py`` with the gold as published gives the platform's number; ``manage.py score``
    reads it too.
    """
    kind = enrollment.cohort.task.spec.answer_kind
    answers = (
        Answer.objects.filter(enrollment=enrollment, step=Answer.Step.TEST)
        .order_by("example__position")
        .values_list("example__clues_id", "example__clues_id_is_number", "texts")
    )
    return [prediction_row(kind, clues_id, number, texts) for clues_id, number, texts in answers]


def prediction_row(kind, clues_id: str, clues_id_is_number: bool, texts: Sequence[str]) -> dict:
    """One test answer as a CLUES prediction line (``prediction_rows``)."""
    return {"id": published_id(clues_id, clues_id_is_number), "prediction": as_published(kind, texts)}


def completed_enrollments(study: Study) -> list[Enrollment]:
    qs = Enrollment.objects.filter(in_results(), cohort__study=study).select_related("worker", "cohort__task")
    return sorted(qs, key=lambda e: (*cohort_key(e.cohort.task.slug, e.cohort.shots), e.enrolled_at, e.pk))
