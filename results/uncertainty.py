"""Uncertainty of a human cell (a cohort's mean S1), of a human-minus-model gap, and how many
annotators a cell needs, at what cost.

A human cell of Table 5 is the mean over a cohort's annotators of their test S1, i.e. the mean
of an annotators x items matrix of per-item S1 (0-1). Which quantity it estimates decides its
interval; both are given, each named by its target (``TARGETS``):

* **this test set** (``t_interval``): the mean annotator's S1 on the items the cohort answered.
  The test set is fixed; only which annotators came is random. The annotators' S1 are independent
  draws, so the interval is Student's t on them (A - 1 degrees of freedom), exact for normal
  annotator S1 and close to it otherwise; a percentile bootstrap over 3 annotators cannot make the
  tails of a t with 2 degrees of freedom, and covered ~88%.
* **the task's items** (``two_level_interval``): the mean annotator's S1 on the task's population of
  items, of which the test set is one draw. The variance of the matrix's mean is that of a crossed
  random design, sigma_a^2/A + sigma_i^2/I + sigma_e^2/(A I), estimated without bias by
  MS_annotators / (A I) + (MS_items - MS_residual) / (A I) (two-way ANOVA, one observation per
  cell); each part is scaled by its own t quantile (A - 1 and I - 1 degrees of freedom).

``benchmarks/interval_coverage.py`` simulates both targets (logistic ability/difficulty, binary and
graded item scores, 3/5/10 annotators) and prints each interval's coverage and the planner's error.

Both intervals assume that the annotators' S1 spread roughly normally around their mean. When an
annotator of the cohort is at chance (a population with guessers: bimodal), or the annotators differ on
fewer than 10 items (a few near-certain items: the items' spread is measured from almost no
variation), they can cover less than 95%; with fewer than 14 annotators a population's guessers are
too often absent from the cohort for the first test to see them. ``interval_flags`` names what fails
or cannot be checked, and the page and the files say it beside the cell (``FLAGS``; coverage with and without guessers:
``benchmarks/interval_coverage.py``).

The planner (``annotators_needed``) plans for "this test set": the fewest annotators whose t
interval's half-width is at most the target in a share ``assurance`` (default 0.8) of studies, the
pilot's noise included: the study's variance over the pilot's is F(n - 1, pilot - 1) distributed
(normal annotator S1), so the assurance is a probability over both the pilot and the study to come
(``plan_assurance``; a plan from the pilot's spread taken as the truth reached the target in ~55-75% of
studies from a pilot of 3). ``plan_cost`` prices a plan: annotators x (expected active time x hourly
rate, ``annotation.protocol.pay``), plus the platform's service fee.

Plain numpy (scipy imported where it is used), no Django import.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import numpy as np

from tasks_data.stats import mean_std

MAX_ANNOTATORS = 1000
CONFIDENCE = 0.95
TEST_SET = "this test set"
TASK_ITEMS = "the task's items"
TARGETS = {
    TEST_SET: "the mean annotator's S1 on this test set: t interval over the annotators' S1 (A - 1 df)",
    TASK_ITEMS: "the mean annotator's S1 on the task's items (the test set one draw of them): two-level "
    "interval over annotators and items (crossed random-effects variance; the annotators' and the items' "
    "parts each scaled by its own t quantile, A - 1 and I - 1 df)",
}
AT_CHANCE = "at_chance"
NEAR_CEILING = "near_ceiling"
FEW_ANNOTATORS = "few_annotators"
FLAGS = {
    AT_CHANCE: "an annotator's S1 is at chance (within binomial noise of the task's chance level, or below): "
    "the annotators' S1 is not one normal spread (guessers), and the 95% intervals may cover much less",
    NEAR_CEILING: "the annotators differ on fewer than 10 items (near-certain items): the items' spread is "
    "measured from almost no variation, and the task's-items interval may cover less than 95%",
    FEW_ANNOTATORS: "fewer than 14 annotators: the intervals assume that nobody in the population answers at "
    "chance, and a cohort this small can hold no such worker even where some are (one in five guessing: "
    "a cohort of 5 holds none a third of the time), so where guessers exist the intervals may cover less than 95%",
}
MIN_VARYING_ITEMS = 10  # below this many items on which the annotators' S1 differ: NEAR_CEILING
# The smallest cohort that holds a guesser in 95% of draws when one in five of the population guesses
# (1 - 0.8^n >= 0.95): below it the at-chance flag too often has no one to see (FEW_ANNOTATORS).
MIN_ANNOTATORS_SEEN = 14


def _matrix(matrix) -> np.ndarray:
    m = np.asarray(matrix, dtype=float)
    if m.ndim != 2 or m.shape[0] < 2 or m.shape[1] < 2:
        raise ValueError(f"need an annotators x items matrix with at least 2 of each, got shape {m.shape}")
    if not np.isfinite(m).all():
        raise ValueError("the matrix holds missing or non-finite S1 values")
    return m


def cell_matrix(scores: Mapping[Hashable, Mapping[Any, float]]) -> np.ndarray:
    """``{annotator: {item: S1}}`` -> the annotators x items matrix (items in sorted order).

    Every annotator of a cell answered the same test items; a missing one is refused.
    """
    items = sorted({item for per_item in scores.values() for item in per_item})
    missing = [(a, i) for a, per_item in scores.items() for i in items if i not in per_item]
    if missing:
        raise ValueError(f"{len(missing)} (annotator, item) score(s) missing, e.g. {missing[0]!r}")
    return np.array([[per_item[i] for i in items] for per_item in scores.values()], dtype=float)


@dataclass(frozen=True)
class Interval:
    mean: float
    low: float
    high: float
    confidence: float
    df: float  # degrees of freedom of the t quantile
    target: str

    @property
    def width(self) -> float:
        return self.high - self.low

    def clipped(self, low: float = 0.0, high: float = 1.0) -> Interval:
        """The interval within [low, high] (a mean of S1 lies in [0, 1]; a t interval can pass the bounds)."""
        return Interval(self.mean, max(self.low, low), min(self.high, high), self.confidence, self.df, self.target)


def _t(confidence: float, df: float) -> float:
    """The t quantile of a two-sided interval (scipy.special's ufunc: the planner asks for hundreds)."""
    from scipy import special

    return float(special.stdtrit(df, 0.5 + confidence / 2))


def interval_flags(s1: Sequence[float], *, chance: float | None, items: int, matrix=None) -> list[str]:
    """What makes a cell's 95% intervals doubtful (keys of ``FLAGS``), from its annotators' S1 (0-1), the
    task's chance level on these items (``TaskSpec.chance_item_s1``, averaged) and the test set's size;
    ``matrix`` (annotators x items S1) for the ceiling."""
    flags = []
    if chance is not None and items > 0 and len(s1) >= 2:
        # Binomial noise of a guesser's S1 over the items (one-sided 97.5%): a guesser scores above chance by
        # luck; an annotator who learned the task scores well above it.
        margin = 1.96 * np.sqrt(max(chance * (1 - chance), 0.0) / items)
        if any(v <= chance + margin for v in s1):
            flags.append(AT_CHANCE)
    if 2 <= len(s1) < MIN_ANNOTATORS_SEEN:
        flags.append(FEW_ANNOTATORS)
    if matrix is not None:
        m = np.asarray(matrix, dtype=float)
        if m.ndim == 2 and m.shape[0] >= 2 and m.shape[1] >= 2 and np.isfinite(m).all():
            if int((np.ptp(m, axis=0) > 0).sum()) < MIN_VARYING_ITEMS:
                flags.append(NEAR_CEILING)
    return flags


def t_interval(values: Sequence[float], *, confidence: float = CONFIDENCE, target: str = TEST_SET) -> Interval:
    """Student's t interval of the mean of ``values`` (the annotators' S1): mean ± t(n-1) s / sqrt(n)."""
    x = np.asarray(values, dtype=float)
    if x.ndim != 1 or len(x) < 2 or not np.isfinite(x).all():
        raise ValueError(f"need at least 2 finite values, got {len(x) if x.ndim == 1 else x.shape}")
    n = len(x)
    mean, std = mean_std(x)  # the tables' mean ± std, one implementation
    assert mean is not None and std is not None  # n >= 2, checked above
    half = _t(confidence, n - 1) * std / np.sqrt(n)
    return Interval(mean, mean - half, mean + half, confidence, n - 1, target)


@dataclass(frozen=True)
class Components:
    """Two-way ANOVA mean squares of an annotators x items matrix (one observation per cell)."""

    ms_annotators: float
    ms_items: float
    ms_residual: float
    n_annotators: int
    n_items: int

    @property
    def annotator_means(self) -> float:
        """Variance across annotators of an annotator's mean S1 (over these items)."""
        return self.ms_annotators / self.n_items


def variance_components(matrix) -> Components:
    m = _matrix(matrix)
    n_a, n_i = m.shape
    grand = m.mean()
    row, col = m.mean(axis=1), m.mean(axis=0)
    resid = m - row[:, None] - col[None, :] + grand
    return Components(
        ms_annotators=float(n_i * row.var(ddof=1)),
        ms_items=float(n_a * col.var(ddof=1)),
        ms_residual=float((resid**2).sum() / ((n_a - 1) * (n_i - 1))),
        n_annotators=n_a,
        n_items=n_i,
    )


def two_level_interval(matrix, *, confidence: float = CONFIDENCE, target: str = TASK_ITEMS) -> Interval:
    """Interval of the matrix's mean with annotators and items both random (see the module's note).

    The mean's variance splits into the annotators' part, MS_annotators / (A I) (what the t interval
    over annotators uses, A - 1 df), and the items' part, (MS_items - MS_residual) / (A I) (I - 1 df);
    each part is scaled by its own t quantile before they are added: one pooled Satterthwaite df let a
    small annotator spread borrow the items' many degrees of freedom and covered ~91% with 3 annotators.
    """
    c = variance_components(matrix)
    a, i = c.n_annotators, c.n_items
    mean = float(np.asarray(matrix, dtype=float).mean())
    items_part = max(c.ms_items - c.ms_residual, 0.0) / (a * i)
    half = float(
        np.sqrt(_t(confidence, a - 1) ** 2 * c.ms_annotators / (a * i) + _t(confidence, i - 1) ** 2 * items_part)
    )
    return Interval(mean, mean - half, mean + half, confidence, a - 1, target)


# ---------------------------------------------------------------- the planner and its price


def reach_probability(sigma: float, annotators: int, half_width: float, *, confidence: float = CONFIDENCE) -> float:
    """P(the t interval of ``annotators`` has a half-width <= ``half_width``) when their S1 spread is ``sigma``.

    half-width = t s / sqrt(n) with s^2 ~ sigma^2 chi2(n-1) / (n-1): exact for normal annotator S1.
    """
    n = annotators
    if n < 2:
        return 0.0
    if sigma <= 0:
        return 1.0
    from scipy import special

    bound = (n - 1) * n * half_width**2 / (_t(confidence, n - 1) ** 2 * sigma**2)
    return float(special.chdtr(n - 1, bound))  # the chi2(n-1) cdf


def plan_assurance(
    pilot_variance: float, pilot_df: int, annotators: int, half_width: float, *, confidence: float = CONFIDENCE
) -> float:
    """P(a study of ``annotators`` reaches a t half-width <= ``half_width``), over the pilot's noise and the
    study's: s_study^2 / s_pilot^2 is F(n - 1, pilot_df) distributed when annotator S1 is normal (the spread
    itself cancels: the probability holds over repeated pilots and studies, whatever the true spread)."""
    n = annotators
    if n < 2 or pilot_df < 1:
        return 0.0
    if pilot_variance <= 0:
        return 1.0
    from scipy import special

    bound = n * half_width**2 / (_t(confidence, n - 1) ** 2 * pilot_variance)
    return float(special.fdtr(n - 1, pilot_df, bound))  # the F(n-1, pilot_df) cdf


def annotators_for(
    sigma: float, half_width: float, *, confidence: float = CONFIDENCE, assurance: float = 0.8
) -> int | None:
    """The fewest annotators (>= 2) whose t interval reaches ``half_width`` with probability ``assurance``
    when their spread is ``sigma``; None when ``MAX_ANNOTATORS`` are not enough."""
    _check_plan(half_width, assurance)
    if reach_probability(sigma, MAX_ANNOTATORS, half_width, confidence=confidence) < assurance:
        return None
    low, high = 2, MAX_ANNOTATORS  # reach_probability grows with n: bisect
    while low < high:
        mid = (low + high) // 2
        if reach_probability(sigma, mid, half_width, confidence=confidence) >= assurance:
            high = mid
        else:
            low = mid + 1
    return low


def annotators_needed(
    pilot_s1: Sequence[float], half_width: float, *, confidence: float = CONFIDENCE, assurance: float = 0.8
) -> int | None:
    """From a pilot cohort's annotator S1 (0-1), the annotators a cell needs for a t interval ("this test
    set") of ± ``half_width`` (0-1 units) in a share ``assurance`` of studies, the pilot's own noise included
    (``plan_assurance``). None when it cannot be estimated (fewer than 2) or 1000 are not
    enough."""
    _check_plan(half_width, assurance)
    x = np.asarray(pilot_s1, dtype=float)
    if len(x) < 2:
        return None
    variance, df = float(x.var(ddof=1)), len(x) - 1

    def reaches(n: int) -> bool:
        return plan_assurance(variance, df, n, half_width, confidence=confidence) >= assurance

    if not reaches(MAX_ANNOTATORS):
        return None
    low, high = 2, MAX_ANNOTATORS  # the assurance grows with n: bisect
    while low < high:
        mid = (low + high) // 2
        if reaches(mid):
            high = mid
        else:
            low = mid + 1
    return low


def _check_plan(half_width: float, assurance: float) -> None:
    if not half_width > 0:
        raise ValueError("the target half-width must be positive (S1 in 0-1 units: 0.05 is 5 points)")
    if not 0.5 <= assurance < 1:
        raise ValueError("assurance must be in [0.5, 1)")


@dataclass(frozen=True)
class Cost:
    annotators: int
    pay_each: Decimal  # what one annotator is paid: expected active time x hourly rate
    fee_share: float  # the platform's service fee, a share of what workers are paid
    pay: Decimal  # what the workers are paid
    fee: Decimal
    total: Decimal


def plan_cost(*, annotators: int, pay_each: Decimal, fee_share: float) -> Cost:
    """annotators x what each is paid, plus the platform's fee on that pay (to the cent)."""
    if annotators < 0 or pay_each < 0 or fee_share < 0:
        raise ValueError("annotators, pay and the fee share must not be negative")
    pay = Decimal(annotators) * pay_each
    fee = (pay * Decimal(str(fee_share))).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    return Cost(annotators, pay_each, fee_share, pay, fee, pay + fee)
