"""How long a cohort takes and what it pays: one estimate per cohort, read by every page that says so.

The worker's description page, the crowd platform's listing (its estimated time, reward and maximum time), the
dashboard and the results planner all read ``cohort_estimate``. It is the cohort's items times the task's
time per item (``TaskSpec.seconds_per_item``), until the cohort's first ``MEASURED_AFTER`` workers have
finished a part: then the median of their measured active time per item (rule 7's gaps between answers,
each capped at the idle cap). A researcher's own figure (``Study.expected_minutes``) overrides it, and is
compared with it (``override_warning``).

A test step whose estimate is longer than the study's sitting cap (``Study.sitting_minutes``) is split into
parts at item boundaries (``Part``): the split uses the task's time per item, never the measured one, so
that the parts of a cohort never move under its workers.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal

from django.db.models import Count

from tasks_data.models import Example, Task, TrainingSetItem
from tasks_data.registry import get_task, task_name

from .models import Answer, Cohort, Enrollment, Study

MEASURED_AFTER = 3  # workers of a cohort who finished a part before their median replaces the task's figure
MEASURED_STATES = (Enrollment.State.COMPLETED, Enrollment.State.BETWEEN)  # who finished a part
OVERRIDE_TOLERANCE = 0.25  # a researcher's figure further off the estimate than this is warned about
MIN_TIME_LIMIT = 30  # minutes: a short part still leaves time to read the description and take a break


@dataclass(frozen=True)
class Part:
    """One sitting: the test items at positions [first, end) (0-based), and the training step in part 1."""

    number: int
    parts: int
    first: int
    end: int
    training_items: int
    minutes: float
    time_limit: int  # minutes

    @property
    def test_items(self) -> int:
        return self.end - self.first

    @property
    def items(self) -> int:
        return self.training_items + self.test_items

    @property
    def listed_minutes(self) -> int:
        """The whole minutes a platform lists (rounded up, so the reward is never below the rate)."""
        return max(1, math.ceil(self.minutes - 1e-9))


@dataclass(frozen=True)
class Estimate:
    training_items: int
    test_items: int
    seconds_per_item: float  # what the minutes use: measured, or the task's
    task_seconds_per_item: float
    measured: bool
    override_minutes: int | None
    parts: tuple[Part, ...]
    pay_rate: Decimal

    @property
    def minutes(self) -> float:
        return sum(p.minutes for p in self.parts)

    @property
    def training_minutes(self) -> float:
        return self.training_items * self.seconds_per_item / 60 * self._scale

    @property
    def test_minutes(self) -> float:
        return self.minutes - self.training_minutes

    @property
    def _scale(self) -> float:
        unscaled = (self.training_items + self.test_items) * self.seconds_per_item / 60
        return self.minutes / unscaled if unscaled else 1.0

    @property
    def source(self) -> str:
        if self.override_minutes:
            return "your figure"
        return "measured" if self.measured else "task estimate"

    def part(self, number: int) -> Part:
        return self.parts[min(max(number, 1), len(self.parts)) - 1]

    def reward(self, number: int) -> Decimal:
        """A part's pay: the hourly rate over its listed minutes, rounded up to the cent (never below the rate)."""
        amount = self.pay_rate * self.part(number).listed_minutes / 60
        return amount.quantize(Decimal("0.01"), rounding=ROUND_CEILING)

    @property
    def total_pay(self) -> Decimal:
        return sum((self.reward(p.number) for p in self.parts), Decimal("0.00"))

    def part_of_position(self, position: int) -> int:
        """The part a test item's 0-based position belongs to."""
        for p in self.parts:
            if position < p.end:
                return p.number
        return len(self.parts)


def split(*, training_items: int, test_items: int, seconds_per_item: float, sitting_minutes: int) -> list[tuple]:
    """(first, end) test positions of each part: as few parts as keep each part's items (the training step
    counts in part 1) within the sitting cap at ``seconds_per_item``, the items shared out evenly."""
    per_sitting = max(1, int(sitting_minutes * 60 // seconds_per_item))
    total = training_items + test_items
    parts = max(1, math.ceil(total / per_sitting))
    while True:
        size = math.ceil(total / parts)
        if size > training_items or parts == 1:
            break
        parts -= 1  # the training step alone fills a sitting: keep at least one test item in part 1
    bounds, first = [], 0
    for number in range(1, parts + 1):
        take = size - (training_items if number == 1 else 0)
        end = test_items if number == parts else min(test_items, first + max(1, take))
        bounds.append((first, end))
        first = end
    return [b for b in bounds if b[1] > b[0]] or [(0, test_items)]


def time_limit(minutes: float, study: Study) -> int:
    """A part's time limit: the study's own, or twice the part's estimate (at least ``MIN_TIME_LIMIT``)."""
    if study.time_limit_minutes:
        return study.time_limit_minutes
    return max(MIN_TIME_LIMIT, math.ceil(2 * minutes))


def estimate(
    *,
    study: Study,
    task_slug: str,
    training_items: int,
    test_items: int,
    measured_seconds: float | None = None,
) -> Estimate:
    """The estimate of a cohort's items under ``study``'s settings (``cohort_estimate`` reads them for a cohort)."""
    spec = get_task(task_slug)
    bounds = split(
        training_items=training_items,
        test_items=test_items,
        seconds_per_item=spec.seconds_per_item,
        sitting_minutes=study.sitting_minutes,
    )
    per_item = measured_seconds or spec.seconds_per_item
    items = [(training_items if i == 0 else 0) + end - first for i, (first, end) in enumerate(bounds)]
    raw = [n * per_item / 60 for n in items]
    # The time limits follow the task's figure, never the measured one: a part's limit is the platform's maximum
    # time, fixed once its listing is published, and the worker's pages read it without a query.
    planned = [n * spec.seconds_per_item / 60 for n in items]
    if study.expected_minutes:
        raw = [m * study.expected_minutes / (sum(raw) or 1.0) for m in raw]
        planned = [m * study.expected_minutes / (sum(planned) or 1.0) for m in planned]
    parts = tuple(
        Part(
            number=i + 1,
            parts=len(bounds),
            first=first,
            end=end,
            training_items=training_items if i == 0 else 0,
            minutes=minutes,
            time_limit=time_limit(fixed, study),
        )
        for i, ((first, end), minutes, fixed) in enumerate(zip(bounds, raw, planned, strict=True))
    )
    return Estimate(
        training_items=training_items,
        test_items=test_items,
        seconds_per_item=per_item,
        task_seconds_per_item=spec.seconds_per_item,
        measured=measured_seconds is not None,
        override_minutes=study.expected_minutes,
        parts=parts,
        pay_rate=Decimal(study.pay_rate),
    )


def test_items_of(task: Task | int) -> int:
    return Example.objects.filter(task=task, role=Example.Role.TEST).count()


test_items_of.__test__ = False  # type: ignore[attr-defined]


def training_items_of(cohort: Cohort) -> int:
    if not cohort.shots or cohort.training_set_id is None:
        return 0
    return TrainingSetItem.objects.filter(training_set_id=cohort.training_set_id).count()


def planned_estimate(*, study: Study, task: Task, shots: int) -> Estimate:
    """The estimate of a cohort not created yet (the study form): its training rows from the task's shape."""
    spec = task.spec
    return estimate(
        study=study,
        task_slug=task.slug,
        training_items=shots * spec.train_rows_per_shot,
        test_items=test_items_of(task),
    )


def measured_seconds_per_item(cohort: Cohort) -> float | None:
    """The median active seconds per item of the cohort's first workers who finished a part (at least
    ``MEASURED_AFTER`` of them), or None: the gaps between a worker's consecutive answers, a gap at the idle cap or
    longer (a break, or the time between sittings) left out (rule 7's measure of active time)."""
    return _measured([cohort]).get(cohort.pk)


def cohort_estimates(cohorts, *, study: Study | None = None) -> dict[int, Estimate]:
    """``cohort_estimate`` of each cohort (with its task loaded, and its study, or all of ``study``), in a constant
    number of queries."""
    cohorts = list(cohorts)
    for cohort in cohorts if study is not None else ():
        cohort.study = study
    if not cohorts:
        return {}
    tests = dict(
        Example.objects.filter(task_id__in={c.task_id for c in cohorts}, role=Example.Role.TEST)
        .values_list("task_id")
        .annotate(n=Count("pk"))
        .values_list("task_id", "n")
    )
    trainings = dict(
        TrainingSetItem.objects.filter(training_set__cohorts__in=cohorts)
        .values_list("training_set_id")
        .annotate(n=Count("pk", distinct=True))
        .values_list("training_set_id", "n")
    )
    measured = _measured(cohorts)
    return {
        c.pk: estimate(
            study=c.study,
            task_slug=c.task.slug,
            training_items=trainings.get(c.training_set_id, 0) if c.shots else 0,
            test_items=tests.get(c.task_id, 0),
            measured_seconds=measured.get(c.pk),
        )
        for c in cohorts
    }


def _measured(cohorts: list[Cohort]) -> dict[int, float]:
    """``measured_seconds_per_item`` of each cohort that has one, in two queries."""
    first: dict[int, list[int]] = {}
    for cohort_id, enrollment_id in (
        Enrollment.objects.filter(cohort__in=cohorts, state__in=MEASURED_STATES)
        .exclude(verification__in=(Enrollment.UNVERIFIED, Enrollment.SUPERSEDED))
        .order_by("pk")
        .values_list("cohort_id", "pk")
    ):
        if len(first.setdefault(cohort_id, [])) < MEASURED_AFTER:
            first[cohort_id].append(enrollment_id)
    ready = {c: ids for c, ids in first.items() if len(ids) >= MEASURED_AFTER}
    owner = {e: c for c, ids in ready.items() for e in ids}
    caps = {c.pk: c.study.idle_cap_seconds for c in cohorts}
    times: dict[int, list] = {}
    # One query whether or not a cohort is measured yet (an empty list would skip it): the callers' query counts
    # never depend on the data.
    answers = Answer.objects.filter(enrollment_id__in=list(owner) or [-1]).order_by("answered_at")
    for enrollment_id, at in answers.values_list("enrollment_id", "answered_at"):
        times.setdefault(enrollment_id, []).append(at)
    gaps: dict[int, list[float]] = {}
    for enrollment_id, answered in times.items():
        cohort_id = owner[enrollment_id]
        cap = caps[cohort_id]
        gaps.setdefault(cohort_id, []).extend(
            g for a, b in zip(answered, answered[1:], strict=False) if (g := (b - a).total_seconds()) < cap
        )
    return {c: statistics.median(g) for c, g in gaps.items() if g}


def cohort_estimate(cohort: Cohort) -> Estimate:
    """The cohort's estimate: every page and listing that shows a cohort's time or pay reads this."""
    return estimate(
        study=cohort.study,
        task_slug=cohort.task.slug,
        training_items=training_items_of(cohort),
        test_items=test_items_of(cohort.task_id),
        measured_seconds=measured_seconds_per_item(cohort),
    )


def override_warning(*, study: Study, task: Task, shots: int) -> str:
    """A warning when the researcher's own expected duration is more than ``OVERRIDE_TOLERANCE`` off the
    estimate from the cohort's items, or when their time limit is shorter than a part's estimate (its workers
    would be cut off); "" otherwise."""
    own = study.expected_minutes
    study.expected_minutes = None
    try:
        estimated = planned_estimate(study=study, task=task, shots=shots)
    finally:
        study.expected_minutes = own
    minutes = estimated.minutes
    if own and minutes and abs(own - minutes) / minutes > OVERRIDE_TOLERANCE:
        return (
            f"{task.slug} {shots}-shot: your expected duration of {own} minutes is "
            f"{round(100 * (own - minutes) / minutes):+d}% off the estimate of {math.ceil(minutes)} minutes "
            f"({estimated.training_items + estimated.test_items} items x {estimated.task_seconds_per_item:g} s): "
            "the platform's reward and time limit follow your figure"
        )
    longest = max(p.listed_minutes for p in estimated.parts)
    if study.time_limit_minutes and study.time_limit_minutes < longest:
        return (
            f"{task.slug} {shots}-shot: your time limit of {study.time_limit_minutes} minutes is shorter than a "
            f"part's estimate of {longest} minutes: its workers would run out of time (they get the screen-out code "
            "and the pay for the time worked); leave the time limit empty for twice each part's estimate"
        )
    return ""


def duration_text(minutes: float) -> str:
    """A duration as a person reads it: "2 h 33 min", "40 min": rounded up to the minute, as the crowd platform's
    listing is, so that the worker reads the same figure there and here (and the pay matches it)."""
    rounded = max(1, -(-math.ceil(minutes * 60) // 60))
    hours, rest = divmod(rounded, 60)
    return f"{hours} h {rest} min" if hours and rest else (f"{hours} h" if hours else f"{rest} min")


def study_listing(study: Study) -> list[dict]:
    """Per cohort of the study: its estimate in the words the researcher's pages use (the dashboard's study page,
    the crowd platform's page), one row per part: the same figures the worker and the platform are shown."""
    rows = []
    cohorts = list(study.cohorts.select_related("task", "study").order_by("task__slug", "shots"))
    estimates = cohort_estimates(cohorts)
    for cohort in cohorts:
        est = estimates[cohort.pk]
        for p in est.parts:
            rows.append(
                {
                    "cohort": cohort,
                    "task": cohort.task.slug,
                    "task_name": task_name(cohort.task.slug),
                    "shots": cohort.shots,
                    "part": p.number,
                    "parts": len(est.parts),
                    "items": p.items,
                    "minutes": p.listed_minutes,
                    "duration": duration_text(p.listed_minutes),
                    "time_limit": p.time_limit,
                    "reward": est.reward(p.number),
                    "source": est.source,
                    "seconds_per_item": round(est.seconds_per_item, 1),
                    "total_minutes": math.ceil(est.minutes - 1e-9),
                    "total_pay": est.total_pay,
                }
            )
    return rows
