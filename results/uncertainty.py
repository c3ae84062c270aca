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
graded item scores, 3/5/10/20 annotators) and prints each interval's coverage, the gap intervals' and the
planner's.

Both intervals assume that the annotators' S1 spread roughly normally around their mean. ``interval_flags``
names what this cell's own values show against it, beside the cell (``FLAGS``): an annotator at chance (a
population with guessers: bimodal), an outlier annotator, a t interval past the scale, annotators who differ
on fewer than 10 items (near-certain items: the items' spread is measured from almost no variation). A cell
of fewer than ``MODEL_BASED_BELOW`` annotators is shown with its values and a model-based interval: so few
values cannot check the normal model. What no cell can show, guessers of the population that the cohort
happened not to draw, is said once in the table's note (coverage with and without guessers:
``benchmarks/interval_coverage.py``).

The human-minus-model gap (``gap_interval``) lets the model's runs on its training splits vary too: Welch's
interval over the annotators' S1 and the runs' S1 on this test set, the crossed design's items part added on
the task's items.

The planner (``annotators_needed``) plans for "this test set": the fewest annotators whose t
interval's half-width is at most the target in a share ``assurance`` (default 0.8) of studies when the
population's spread is the pilot's upper 90% confidence bound (``spread_upper_bound``), so that the promise
holds for this pilot with 90% confidence, whatever its spread happened to be (a plan from the pilot's spread
taken as the truth reached the target in ~55-75% of studies from a pilot of 3; one from the F predictive,
``plan_assurance``, kept 80% on average over pilots but a third of the time after the pilots of lowest spread).
``plan_range`` shows how far plans from pilots of the same size move. ``benchmarks/planner_assurance.py``
measures the assurance per pilot for normal, skewed and guessing populations. ``plan_cost`` prices a plan:
annotators x (expected active time x hourly rate, ``annotation.protocol.pay``), plus the platform's service fee.

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
OUTLIER = "outlier"
PAST_SCALE = "past_scale"
ONE_RUN = "one_run"
FLAGS = {
    AT_CHANCE: "an annotator's S1 is at chance (within binomial noise of the task's chance level, or below): "
    "the annotators' S1 is not one normal spread (guessers), and the 95% intervals may cover much less",
    OUTLIER: "an annotator's S1 lies outside the prediction interval of the others' (t, normal annotators; 5% "
    "false alarms per cell): the annotators' S1 is not one normal spread, and the 95% intervals may cover less",
    PAST_SCALE: "the t interval of the annotators' S1 reaches past 0 or 100: a spread this wide on a bounded "
    "scale is not a normal one, and the interval (shown clipped) may cover less than 95%",
    NEAR_CEILING: "the annotators differ on fewer than 10 items (near-certain items): the items' spread is "
    "measured from almost no variation, and the task's-items interval may cover less than 95%",
    ONE_RUN: "the model row has one run: its spread over training splits cannot be measured, and the gap's "
    "intervals count the annotators (and items) only",
}
MIN_VARYING_ITEMS = 10  # below this many items on which the annotators' S1 differ: NEAR_CEILING
OUTLIER_ALARMS = 0.05  # the share of normal cells with an OUTLIER flag (Bonferroni over the annotators)
# Below this many annotators the cohort's values are shown beside its interval, which then rests on the
# normal model alone: so few values cannot check it (the paper's cells hold 3).
MODEL_BASED_BELOW = 5


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


def outliers(s1: Sequence[float], *, alarms: float = OUTLIER_ALARMS) -> list[int]:
    """Positions of the annotators whose S1 lies outside the prediction interval of the others' (mean ± t(m - 1)
    s sqrt(1 + 1/m) over the m others: exact for normal annotator S1), each at confidence 1 - ``alarms`` / n so
    that a normal cohort is flagged in at most ``alarms`` of cells. Needs 4 annotators (3 others, so that their
    spread has 2 degrees of freedom); none is named otherwise."""
    x = np.asarray(s1, dtype=float)
    if len(x) < 4:
        return []
    confidence = 1 - alarms / len(x)
    out = []
    for j in range(len(x)):
        others = np.delete(x, j)
        m, sd = mean_std(others)
        assert m is not None and sd is not None  # 3 others or more
        half = _t(confidence, len(others) - 1) * sd * np.sqrt(1 + 1 / len(others))
        if abs(x[j] - m) > half + 1e-12:
            out.append(j)
    return out


def interval_flags(s1: Sequence[float], *, chance: float | None, items: int, matrix=None) -> list[str]:
    """What makes this cell's 95% intervals doubtful (keys of ``FLAGS``), from its annotators' S1 (0-1), the
    task's chance level on these items (``TaskSpec.chance_item_s1``, averaged) and the test set's size;
    ``matrix`` (annotators x items S1) for the ceiling. Each flag is a diagnostic of this cell's own values:
    an annotator at chance, an outlier annotator, a spread that reaches past the scale, near-certain items."""
    flags = []
    if chance is not None and items > 0 and len(s1) >= 2:
        # Binomial noise of a guesser's S1 over the items (one-sided 97.5%): a guesser scores above chance by
        # luck; an annotator who learned the task scores well above it.
        margin = 1.96 * np.sqrt(max(chance * (1 - chance), 0.0) / items)
        if any(v <= chance + margin for v in s1):
            flags.append(AT_CHANCE)
    if outliers(s1):
        flags.append(OUTLIER)
    if len(s1) >= 2:
        interval = t_interval(s1)
        if interval.low < 0 or interval.high > 1:
            flags.append(PAST_SCALE)
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


# ---------------------------------------------------------------- the human-minus-model gap


def _welch(v_h: float, df_h: int, v_m: float, df_m: int) -> float:
    """Welch-Satterthwaite degrees of freedom of v_h + v_m (each a variance of a mean with its own df)."""
    total = v_h + v_m
    parts = (v_h**2 / df_h if df_h > 0 else 0.0) + (v_m**2 / df_m if df_m > 0 else 0.0)
    if parts <= 0:
        return float(max(df_h, 1))
    return total**2 / parts


def gap_interval(
    human, model, *, target: str = TEST_SET, confidence: float = CONFIDENCE, model_random: bool = True
) -> Interval:
    """95% interval of the human-minus-model gap: the mean of the annotators x items matrix ``human`` minus the
    mean of the runs x items matrix ``model`` (the model's runs on its training splits), on the same items.

    Annotators and runs are two independent samples: "this test set" (items fixed) is Welch's interval on
    the annotators' S1 and the runs' S1, var = s_h^2 / A + s_m^2 / S with Welch-Satterthwaite df (a single
    run, or ``model_random=False`` for runs of one split, adds nothing: the split is then part of the
    target). "The task's items" adds the items' part of the gap, estimated without bias from the crossed
    design: (var_i(d_i) - MS_res(human) / A - MS_res(model) / S) / I, where d_i is the item's human mean minus
    its model mean; the item part is scaled by its own t quantile (I - 1 df), as in ``two_level_interval``.
    """
    h, m = _matrix(human), np.asarray(model, dtype=float)
    if m.ndim != 2 or m.shape[0] < 1 or m.shape[1] != h.shape[1] or not np.isfinite(m).all():
        raise ValueError(f"need a runs x items model matrix on the human matrix's {h.shape[1]} items, got {m.shape}")
    a, i = h.shape
    s = m.shape[0]
    diff = float(h.mean() - m.mean())
    v_h = float(h.mean(axis=1).var(ddof=1)) / a
    v_m = float(m.mean(axis=1).var(ddof=1)) / s if s >= 2 and model_random else 0.0
    df = _welch(v_h, a - 1, v_m, s - 1)
    half_sq = _t(confidence, df) ** 2 * (v_h + v_m)
    if target == TASK_ITEMS:
        d = h.mean(axis=0) - m.mean(axis=0)
        res_h = variance_components(h).ms_residual
        res_m = variance_components(m).ms_residual if s >= 2 else 0.0
        items_part = max(float(d.var(ddof=1)) - res_h / a - res_m / s, 0.0) / i
        half_sq += _t(confidence, i - 1) ** 2 * items_part
    elif target != TEST_SET:
        raise ValueError(f"target must be {TEST_SET!r} or {TASK_ITEMS!r}")
    half = float(np.sqrt(half_sq))
    return Interval(diff, diff - half, diff + half, confidence, df, target)


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


PLAN_CONFIDENCE = 0.9  # the confidence, over the pilot, that the plan keeps its assurance (``annotators_needed``)
# What benchmarks/planner_assurance.py measured (2,000 pilots of 3, 5 and 10 each, targets ± 5 and ± 3 points):
# the page states it beside the plan. Measure again when the planner changes.
PLAN_MEASURED = (
    "the share of pilots whose plan reached the target in at least 80% of studies was 89-91% for normal "
    "annotators, 89-92% with 20% of them guessing, 89-90% for annotators of the logistic ability model, and "
    "78-85% for a left-skewed population (the bound assumes a normal spread); over all pilots, 87-95% of the "
    "planned studies reached the target"
)


def spread_upper_bound(pilot_s1: Sequence[float], *, confidence: float = PLAN_CONFIDENCE) -> float | None:
    """Upper ``confidence`` bound of the population's spread from a pilot's annotator S1: s sqrt((n - 1) /
    chi2_{1 - confidence}(n - 1)), exact for normal annotator S1. None below 2 values."""
    x = np.asarray(pilot_s1, dtype=float)
    if len(x) < 2:
        return None
    from scipy import special

    df = len(x) - 1
    return float(np.sqrt(df * x.var(ddof=1) / special.chdtri(df, confidence)))  # chdtri: the upper-tail inverse


def annotators_needed(
    pilot_s1: Sequence[float],
    half_width: float,
    *,
    confidence: float = CONFIDENCE,
    assurance: float = 0.8,
    bound: float = PLAN_CONFIDENCE,
) -> int | None:
    """From a pilot cohort's annotator S1 (0-1), the annotators a cell needs for a t interval ("this test set")
    of ± ``half_width`` (0-1 units) in a share ``assurance`` of studies, planned from the upper ``bound``
    confidence bound of the spread (``spread_upper_bound``): the promise holds for this pilot with confidence
    ``bound``, not only on average over pilots (a plan from the F predictive, ``plan_assurance``, kept its 80%
    on average but reached the width in a third of studies after the pilots of lowest spread). None when it
    cannot be estimated (fewer than 2) or 1000 are not enough."""
    _check_plan(half_width, assurance)
    sigma = spread_upper_bound(pilot_s1, confidence=bound)
    if sigma is None:
        return None
    return annotators_for(sigma, half_width, confidence=confidence, assurance=assurance)


def plan_range(
    pilot_s1: Sequence[float],
    half_width: float,
    *,
    assurance: float = 0.8,
    bound: float = PLAN_CONFIDENCE,
    quantiles: tuple[float, float] = (0.1, 0.9),
) -> tuple[int | None, int | None]:
    """The plans (10th and 90th percentiles) that another pilot of the same size would give if the population's
    spread were this pilot's: how much a plan from so few annotators moves from one pilot to the next. The plan
    grows with the pilot's spread, s^2 (n - 1) / sigma^2 is chi2(n - 1): its percentiles are the plans at the
    spread's. (None, None) below 2 values; None for a plan past 1000."""
    x = np.asarray(pilot_s1, dtype=float)
    if len(x) < 2:
        return None, None
    from scipy import special

    df, sd = len(x) - 1, float(mean_std(x)[1] or 0.0)
    out = []
    for q in quantiles:
        s = sd * np.sqrt(special.chdtri(df, 1 - q) / df)  # the q-th percentile of a pilot's s when sigma = sd
        upper = float(np.sqrt(df * s**2 / special.chdtri(df, bound)))
        out.append(annotators_for(upper, half_width, assurance=assurance))
    return out[0], out[1]


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
