"""How long a cohort takes, how its test step is split into parts, each part's time limit and what it pays: one
estimate per cohort, read by every page that says so.

The worker's description page, the crowd platform's listing (its estimated time, reward and maximum time), the
dashboard and the results planner all read ``cohort_estimate`` (a worker's own pages ``attention.worker_estimate``: the
same, with the attention checks they meet).

**Parts.** A test step longer than the study's sitting cap (``Study.sitting_minutes``) is split at item boundaries
(``split``): every item counts as one unit at the task's time per item (``TaskSpec.seconds_per_item``, never the
measured one, so that the parts of a cohort never move under its workers): the training step in part 1, and each
attention check in the part that holds it. As few parts as keep every part within the cap, the units shared out
evenly, so that no part is below half the largest (unless the training step alone fills most of a sitting); a cap
shorter than the training step and one test item is refused when the study is created (``sitting_refusal``).

**Minutes.** A part's minutes are its units times the time per item: the task's figure until the cohort's workers
finished parts (at least ``MEASURED_AFTER`` of them), then the measured typical pace (``PaceFit``). A researcher's
own figure (``Study.expected_minutes``) overrides it, shared out over the parts in whole minutes so that the parts
add up to it, and is compared with it (``override_warning``). What a worker, a listing or a table shows as the
total is the sum of the parts' listed (whole, rounded up) minutes: ``Estimate.listed_minutes``.

**Time limits.** A part's limit is a high quantile (``LIMIT_QUANTILE``) of the time a worker takes for it, so that a
slow honest worker is not cut off:

- before data, from the task's figure with a stated spread: the figure is read as the median time of one item for a
  typical worker (what timing a typical item gives, not a mean), item times log-normal around it with log-sd
  ``ITEM_SIGMA`` and the workers' speeds log-normal with log-sd ``WORKER_SIGMA`` (the top of the spreads
  benchmarks/time_limits.py simulates); the part's total is the sum of its items' times (``prior_limit_seconds``,
  Fenton-Wilkinson's log-normal for the sum; ``part_z`` makes the quantile hold for every part of a test step
  together: a slow worker is slow in each), and a break of ``BREAK_MINUTES`` is added;
- after data, from the measured part totals of every worker who finished a part, breaks and all (``PartTiming``,
  from the part's start to its last answer), the parts cut off by their limit counted as "at least that long"
  (a censored log-normal fit, ``fit_paces``): the quantile of that fit, its spread never below the stated one
  (``measured_limit_seconds``). Data only ever lengthen a limit (the larger of the two is taken): a few workers
  who rush a part cannot shorten everyone's time.

A researcher's own limit (``Study.time_limit_minutes``) replaces both. A worker's limit is fixed as their part
starts (``Enrollment.timer_minutes``): a limit never changes under someone working.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal
from statistics import NormalDist

from django.db.models import Count

from tasks_data.models import Example, Task, TrainingSetItem
from tasks_data.registry import TaskSpec, find_task, task_name

from .models import AttentionCheck, Cohort, Enrollment, PartTiming, Study

MEASURED_AFTER = 3  # workers of a cohort who finished a part before the measured pace replaces the task's figure
MEASURED_STATES = (Enrollment.State.COMPLETED, Enrollment.State.BETWEEN)  # who finished a part
OVERRIDE_TOLERANCE = 0.25  # a researcher's figure further off the estimate than this is warned about
MIN_TIME_LIMIT = 30  # minutes: a short part still leaves time to read the description and take a break
# The share of honest workers the limits let finish every part of their test step. A little above the 95th
# percentile: at the top of the stated spreads a limit at exactly the 95th would cut off 5%, with nothing to spare.
LIMIT_QUANTILE = 0.96
ITEM_SIGMA = 1.0  # log-sd of one item's time around the task's figure (assumed before data)
# Minutes added to a part's limit before data: the description page tells workers to take breaks when they need them
# (after data, the measured part times hold their breaks).
BREAK_MINUTES = 15
WORKER_SIGMA = 0.4  # log-sd of the workers' speeds (assumed before data, and the least spread assumed after)
_Z = NormalDist().inv_cdf(LIMIT_QUANTILE)


@dataclass(frozen=True)
class Part:
    """One sitting: the test items at positions [first, end) (0-based), the training step in part 1, and the
    attention checks shown before one of its test items."""

    number: int
    parts: int
    first: int
    end: int
    training_items: int
    checks: int
    minutes: float
    listed_minutes: int  # the whole minutes a platform lists (rounded up, so that the reward is never below the rate)
    time_limit: int  # minutes

    @property
    def test_items(self) -> int:
        """The test items a worker answers in the part (the attention checks among them: a worker cannot tell)."""
        return self.end - self.first + self.checks

    @property
    def items(self) -> int:
        return self.training_items + self.test_items


@dataclass(frozen=True)
class Estimate:
    training_items: int
    test_items: int  # the test set's items (the attention checks are the parts' ``checks``)
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
    def listed_minutes(self) -> int:
        """The total every page shows: the sum of the parts' listed minutes."""
        return sum(p.listed_minutes for p in self.parts)

    @property
    def checks(self) -> int:
        return sum(p.checks for p in self.parts)

    @property
    def items(self) -> int:
        return sum(p.items for p in self.parts)

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


# ---------------------------------------------------------------- parts


def sitting_units(sitting_minutes: int, seconds_per_item: float) -> int:
    """How many items a part may hold within the sitting cap."""
    return max(1, int(sitting_minutes * 60 // seconds_per_item))


def split(
    *,
    training_items: int,
    test_items: int,
    seconds_per_item: float,
    sitting_minutes: int,
    checks: Iterable[int] = (),
) -> list[tuple[int, int]]:
    """(first, end) test positions of each part: as few parts as keep each part's items within the sitting cap at
    ``seconds_per_item``, the items shared out evenly. The training step counts in part 1 (which holds at least one
    test item), and each attention check (``checks``: the test positions they are shown before) in the part of its
    position."""
    if test_items <= 0:
        return [(0, 0)]
    capacity = sitting_units(sitting_minutes, seconds_per_item)
    before = [1] * test_items  # each test item with the checks shown just before it: never cut apart
    for position in checks:
        before[min(max(position, 0), test_items - 1)] += 1
    total = training_items + sum(before)
    parts = max(1, math.ceil(total / capacity))
    while True:
        bounds = _cut(before, training_items, parts, capacity)
        if bounds is not None or parts >= test_items:
            return bounds or [(0, test_items)]
        parts += 1


def _cut(blocks: list[int], training: int, parts: int, capacity: int) -> list[tuple[int, int]] | None:
    """The blocks cut into ``parts`` runs of about equal units (part 1 starting with the training step), each within
    ``capacity``; None when that cannot be done so."""
    bounds, first = [], 0
    remaining = training + sum(blocks)
    for number in range(1, parts + 1):
        size = training if number == 1 else 0
        # Part 1 holds the training step and a first test item whatever the cap (a cap too short for them is refused
        # when the study is made: ``sitting_refusal``).
        cap = max(capacity, training + blocks[0]) if number == 1 else capacity
        target = remaining / (parts - number + 1)
        end = first
        if number == parts:
            size, end = size + sum(blocks[first:]), len(blocks)
        else:
            while end < len(blocks) - (parts - number):  # leave a block for each later part
                step = blocks[end]
                # Take the next block while it brings the part nearer its share (and keeps it within the cap);
                # every part takes at least one.
                if end > first and (size + step > cap or size + step - target > target - size):
                    break
                size, end = size + step, end + 1
        if size > cap:
            return None
        bounds.append((first, end))
        remaining -= size
        first = end
    return bounds


def checks_in(bounds: Sequence[tuple[int, int]], checks: Iterable[int], test_items: int) -> list[int]:
    """How many of the attention checks (their test positions) each part holds."""
    counts = [0] * len(bounds)
    for position in checks:
        position = min(max(position, 0), max(test_items - 1, 0))
        for i, (first, end) in enumerate(bounds):
            if first <= position < end or i == len(bounds) - 1:
                counts[i] += 1
                break
    return counts


def sitting_refusal(*, study: Study) -> str:
    """Why the study's sitting cap cannot hold one of its cohorts' part 1 (its training step and a first test
    item), or "": a part never outruns the cap."""
    for slug in study.tasks if isinstance(study.tasks, list) else []:
        spec = find_task(slug)
        if spec is None or not isinstance(study.shots, list):
            continue
        for shots in sorted(k for k in study.shots if isinstance(k, int) and k):
            training = shots * spec.train_rows_per_shot
            if training + 1 > sitting_units(study.sitting_minutes, spec.seconds_per_item):
                need = math.ceil((training + 1) * spec.seconds_per_item / 60)
                return (
                    f"{slug} {shots}-shot: its training step ({training} items, about "
                    f"{duration_text(training * spec.seconds_per_item / 60)}) and a first test item do not fit a "
                    f"sitting of {study.sitting_minutes} minutes: make the sitting cap at least {need} minutes"
                )
    return ""


# ---------------------------------------------------------------- time limits


def _sum_log_sd(items: int, item_sigma: float = ITEM_SIGMA) -> float:
    """The log-sd of a sum of ``items`` independent log-normal item times (Fenton-Wilkinson)."""
    return math.sqrt(math.log1p(math.expm1(item_sigma**2) / max(items, 1)))


def assumed_spread(items: int) -> float:
    """The stated spread of a part's log total time: the workers' speeds and the items' times."""
    return math.hypot(WORKER_SIGMA, _sum_log_sd(items))


@functools.lru_cache(maxsize=4096)
def part_z(items: tuple[int, ...]) -> float:
    """How many stated spreads above its median each part's limit lies, for a test step of parts of ``items`` items,
    so that a worker finishes every part within its limit with probability ``LIMIT_QUANTILE``: a slow worker is slow
    in every part (their speed is shared), the items' times are each part's own. Solved over the worker's speed
    by Gauss-Hermite quadrature; for one part it is the quantile's z."""
    import numpy as np  # the estimate's only numerical solve: cached per shape of a test step
    from scipy.special import ndtr

    nodes, weights = np.polynomial.hermite_e.hermegauss(48)
    weights = weights / weights.sum()
    own = np.array([_sum_log_sd(n) for n in items])  # each part's own (items') spread
    total = np.hypot(WORKER_SIGMA, own)

    def finishes(z: float) -> float:
        inside = (z * total[None, :] - WORKER_SIGMA * nodes[:, None]) / own[None, :]
        return float((weights * ndtr(inside).prod(axis=1)).sum())

    low, high = _Z, _Z + 6.0
    for _ in range(60):
        middle = (low + high) / 2
        low, high = (middle, high) if finishes(middle) < LIMIT_QUANTILE else (low, middle)
    return high


def prior_limit_seconds(items: int, seconds_per_item: float, z: float = _Z) -> float:
    """A part's limit before any data, ``z`` stated spreads above its median time (``part_z``): ``seconds_per_item``
    the median item of a typical worker, the spreads ``ITEM_SIGMA`` and ``WORKER_SIGMA`` (the module's docstring)."""
    items = max(items, 1)
    sum_var = _sum_log_sd(items) ** 2
    # The sum's mean is items x the item mean (the median x e^(sigma^2/2)); its log-normal's median is below it.
    log_median = math.log(items * seconds_per_item) + ITEM_SIGMA**2 / 2 - sum_var / 2
    return math.exp(log_median + z * assumed_spread(items))


@dataclass(frozen=True)
class PaceFit:
    """What a cohort's part totals say: the log of the seconds per item a part took (mean and sd of a log-normal
    fitted to every finished part, the parts cut off by their limit censored), over ``workers`` workers."""

    log_mean: float
    log_sd: float
    workers: int

    @property
    def seconds_per_item(self) -> float:
        """The typical worker's pace (the fit's median)."""
        return math.exp(self.log_mean)


def fit_paces(finished: Sequence[tuple[float, int]], cut_off: Sequence[tuple[float, int]], workers: int) -> PaceFit:
    """A log-normal fitted to the seconds per item of each worker (``(seconds, items)`` of their parts), those a
    limit cut off counted as taking at least that long (a censored fit: leaving them out would lean the fit to the
    fast workers who finished)."""
    done = [math.log(max(s, 1.0) / max(n, 1)) for s, n in finished]
    if not done:  # every worker measured was cut off somewhere: their times are all one knows, each a lower bound
        done, cut_off = [math.log(max(s, 1.0) / max(n, 1)) for s, n in cut_off], ()
    mean = sum(done) / len(done)
    sd = math.sqrt(sum((y - mean) ** 2 for y in done) / (len(done) - 1)) if len(done) > 1 else WORKER_SIGMA
    if not cut_off:
        return PaceFit(mean, sd, workers)
    import numpy as np  # the censored fit only: the pages that need no fit import neither
    from scipy.optimize import minimize
    from scipy.stats import norm

    y = np.array(done)
    c = np.array([math.log(max(s, 1.0) / max(n, 1)) for s, n in cut_off])

    def minus_log_likelihood(theta):
        m, log_s = theta
        s = math.exp(log_s)
        return -(norm.logpdf(y, m, s).sum() + norm.logsf(c, m, s).sum())

    start = [max(mean, float(c.mean())), math.log(max(sd, 0.05))]
    bounds = [(mean - 5, max(mean, float(c.max())) + 5), (math.log(0.01), math.log(5.0))]
    result = minimize(minus_log_likelihood, start, method="L-BFGS-B", bounds=bounds)
    return PaceFit(float(result.x[0]), math.exp(float(result.x[1])), workers)


def measured_limit_seconds(items: int, fit: PaceFit, z: float = _Z) -> float:
    """A part's limit from the cohort's data, ``z`` spreads above the fit's pace (``part_z``): its spread at least
    the stated one, widened for the few workers measured (a prediction for the next worker)."""
    spread = max(fit.log_sd, assumed_spread(items)) * math.sqrt(1 + 1 / max(fit.workers, 1))
    return max(items, 1) * math.exp(fit.log_mean + z * spread)


def part_time_limit(
    *, items: int, seconds_per_item: float, study: Study, fit: PaceFit | None = None, z: float = _Z
) -> int:
    """A part's time limit in minutes: the study's own, or the larger of the limits before and after data (at least
    ``MIN_TIME_LIMIT``); ``z`` from ``part_z`` of the test step's parts."""
    if study.time_limit_minutes:
        return study.time_limit_minutes
    seconds = prior_limit_seconds(items, seconds_per_item, z) + 60 * BREAK_MINUTES
    if fit is not None:
        seconds = max(seconds, measured_limit_seconds(items, fit, z))
    return max(MIN_TIME_LIMIT, math.ceil(seconds / 60 - 1e-9))


# ---------------------------------------------------------------- the estimate


def _whole_minutes(minutes: Sequence[float], total: int) -> list[int]:
    """``total`` whole minutes shared out in proportion to ``minutes`` (largest remainders; at least 1 each)."""
    exact = [m * total / (sum(minutes) or 1.0) for m in minutes]
    whole = [max(1, math.floor(m)) for m in exact]
    for i in sorted(range(len(exact)), key=lambda i: whole[i] - exact[i])[: max(0, total - sum(whole))]:
        whole[i] += 1
    return whole


def estimate(
    *,
    study: Study,
    spec: TaskSpec,
    training_items: int,
    test_items: int,
    fit: PaceFit | None = None,
    checks: Sequence[int] = (),
) -> Estimate:
    """The estimate of a cohort's items of the task ``spec`` under ``study``'s settings (``cohort_estimate`` reads them
    for a cohort): ``fit`` the cohort's measured pace, if any; ``checks`` the test positions of the attention checks
    it meets. ``spec`` is the task as stored (``Task.spec``), never a process's memory of it: a card imported again
    with another pace changes every estimate and time limit at once, in every process."""
    bounds = split(
        training_items=training_items,
        test_items=test_items,
        seconds_per_item=spec.seconds_per_item,
        sitting_minutes=study.sitting_minutes,
        checks=checks,
    )
    in_part = checks_in(bounds, checks, test_items)
    items = [(training_items if i == 0 else 0) + end - first + in_part[i] for i, (first, end) in enumerate(bounds)]
    per_item = fit.seconds_per_item if fit is not None else spec.seconds_per_item
    if study.expected_minutes:
        # The researcher's figure, shared out over the parts in whole minutes: the parts add up to it.
        listed = _whole_minutes(items, study.expected_minutes)
        minutes: list[float] = list(map(float, listed))
        per_item = study.expected_minutes * 60 / (sum(items) or 1)
    else:
        minutes = [n * per_item / 60 for n in items]
        listed = [max(1, math.ceil(m - 1e-9)) for m in minutes]
    # A limit from the figure the minutes use, before data (the researcher's, if given: they know their items).
    figure = per_item if study.expected_minutes else spec.seconds_per_item
    z = part_z(tuple(items))
    parts = tuple(
        Part(
            number=i + 1,
            parts=len(bounds),
            first=first,
            end=end,
            training_items=training_items if i == 0 else 0,
            checks=in_part[i],
            minutes=minutes[i],
            listed_minutes=listed[i],
            time_limit=part_time_limit(items=items[i], seconds_per_item=figure, study=study, fit=fit, z=z),
        )
        for i, (first, end) in enumerate(bounds)
    )
    return Estimate(
        training_items=training_items,
        test_items=test_items,
        seconds_per_item=per_item,
        task_seconds_per_item=spec.seconds_per_item,
        measured=fit is not None,
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
        spec=spec,
        training_items=shots * spec.train_rows_per_shot,
        test_items=test_items_of(task),
    )


def measured_fit(cohort: Cohort) -> PaceFit | None:
    """The cohort's measured pace (``fit_paces``) once ``MEASURED_AFTER`` of its workers finished a part, else None."""
    return _fits([cohort]).get(cohort.pk)


def _fits(cohorts: list[Cohort]) -> dict[int, PaceFit]:
    """``measured_fit`` of each cohort that has one, in one query. One pace per worker (whose join the crowd platform
    did not leave unconfirmed): their parts' seconds over their items, "at least" when a limit cut one off. One per
    worker, not per part: only those who finished a part go on to the next, and counting their later parts would
    lean the fit to the fast workers."""
    workers: dict[int, dict[int, list]] = {}
    for cohort_id, enrollment_id, started, ended, items, cut in (
        PartTiming.objects.filter(enrollment__cohort__in=cohorts)
        .exclude(enrollment__verification__in=(Enrollment.UNVERIFIED, Enrollment.SUPERSEDED))
        .values_list("enrollment__cohort_id", "enrollment_id", "started_at", "ended_at", "items", "cut_off")
    ):
        row = workers.setdefault(cohort_id, {}).setdefault(enrollment_id, [0.0, 0, False, False])
        row[0] += (ended - started).total_seconds()
        row[1] += items
        row[2 if cut else 3] = True  # cut off in a part; finished a part
    fits = {}
    for cohort_id, rows in workers.items():
        if sum(finished_one for *_, finished_one in rows.values()) < MEASURED_AFTER:
            continue
        finished = [(s, n) for s, n, cut, _ in rows.values() if not cut]
        cut_off = [(s, n) for s, n, cut, _ in rows.values() if cut]
        fits[cohort_id] = fit_paces(finished, cut_off, len(rows))
    return fits


def study_check_positions(cohorts: Sequence[Cohort]) -> dict[tuple[int, int], list[int]]:
    """The test positions of the attention checks of each (study, task) of ``cohorts`` (no query when no study of
    theirs has one)."""
    studies = {c.study_id for c in cohorts if c.study.has_attention_checks}
    out: dict[tuple[int, int], list[int]] = {}
    if studies:
        for study_id, task_id, position in AttentionCheck.objects.filter(study_id__in=studies).values_list(
            "study_id", "task_id", "position"
        ):
            out.setdefault((study_id, task_id), []).append(position)
    return out


def cohort_estimates(cohorts, *, study: Study | None = None) -> dict[int, Estimate]:
    """``cohort_estimate`` of each cohort (with its task loaded, and its study, or all of ``study``), in a constant
    number of queries (one more where a study has attention checks)."""
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
    fits = _fits(cohorts)
    checks = study_check_positions(cohorts)
    specs = {c.task_id: c.task.spec for c in cohorts}  # a card read once per task
    return {
        c.pk: estimate(
            study=c.study,
            spec=specs[c.task_id],
            training_items=trainings.get(c.training_set_id, 0) if c.shots else 0,
            test_items=tests.get(c.task_id, 0),
            fit=fits.get(c.pk),
            checks=checks.get((c.study_id, c.task_id), ()),
        )
        for c in cohorts
    }


def cohort_estimate(cohort: Cohort) -> Estimate:
    """The cohort's estimate: every page and listing that shows a cohort's time or pay reads this."""
    return cohort_estimates([cohort])[cohort.pk]


def granted_limit(cohort: Cohort, part: Part) -> int:
    """The time limit a worker starting ``part`` of ``cohort`` is given (kept on their enrollment): the part's, at most
    what the crowd platform's listing allows (``listed_time_limit``: a platform that times its workers out itself
    would otherwise end a part before the limit here, which measured data may have lengthened since it was listed)."""
    listed = cohort.study.provider.listed_time_limit(cohort, part.number)
    return part.time_limit if listed is None else min(part.time_limit, listed)


def enrollment_estimate(enrollment: Enrollment, *, checks: Sequence[int]) -> Estimate:
    """The cohort's estimate as one worker meets it: with the attention checks they meet (``checks``: their test
    positions, ``attention.check_positions``), in the parts that hold them (``attention.worker_estimate``)."""
    cohort = enrollment.cohort
    return estimate(
        study=cohort.study,
        spec=cohort.task.spec,
        training_items=training_items_of(cohort),
        test_items=test_items_of(cohort.task_id),
        fit=measured_fit(cohort),
        checks=checks,
    )


# ---------------------------------------------------------------- what the researcher is told


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
    minutes = estimated.listed_minutes
    if own and minutes and abs(own - minutes) / minutes > OVERRIDE_TOLERANCE:
        return (
            f"{task.slug} {shots}-shot: your expected duration of {own} minutes is "
            f"{round(100 * (own - minutes) / minutes):+d}% off the estimate of {minutes} minutes "
            f"({estimated.training_items + estimated.test_items} items x {estimated.task_seconds_per_item:g} s): "
            "the platform's reward and time limit follow your figure"
        )
    longest = max(p.listed_minutes for p in estimated.parts)
    if study.time_limit_minutes and study.time_limit_minutes < longest:
        return (
            f"{task.slug} {shots}-shot: your time limit of {study.time_limit_minutes} minutes is shorter than a "
            f"part's estimate of {longest} minutes: its workers would run out of time (they get the screen-out code "
            "and the pay for the time worked); leave the time limit empty for one that fits slow workers"
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
                    "total_minutes": est.listed_minutes,
                    "total_pay": est.total_pay,
                }
            )
    return rows
