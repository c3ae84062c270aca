"""Uncertainty of a human cell (a cohort's mean S1), and how many annotators a cell needs.

A human cell of Table 5 is the mean over a cohort's annotators of their test S1, i.e. the
mean of an annotators x items matrix of per-item S1 (0-1). Two sources of noise: which
annotators came (three per cell in the paper: very noisy) and which items the test set holds.

* ``bootstrap_interval(matrix)``: a two-level bootstrap 95% interval: each resample draws
  annotators with replacement (rows) and, independently, items with replacement (columns),
  and takes the mean of the resampled matrix; the interval is the percentile interval of
  those means. Seeded, so the same matrix always gives the same interval. The rows' spread
  is widened by sqrt(A / (A - 1)) before resampling: the plain bootstrap of A annotators
  underestimates their variance by (A - 1) / A, which matters at A = 3.
* ``variance_components(matrix)``: the variance of an annotator's mean S1 across
  annotators, the items' variance and the residual (two-way ANOVA, one observation per
  cell, negative estimates set to 0).
* ``annotators_needed(pilot, width)``: from a pilot cohort's matrix, the smallest number of
  annotators whose 95% interval (normal approximation with t quantiles, the same number of
  items) has at most the given full width; None when even 1000 annotators are not enough
  (the items' own variance sets a floor). A pilot of 3 annotators estimates their spread
  with 2 degrees of freedom, so the planner uses an upper confidence bound of it
  (``assurance``, default 0.8: about 4 in 5 plans reach the width); ``assurance=0.5``
  plans on the point estimate.

Plain numpy/scipy, no Django import.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass

import numpy as np
from scipy import stats

MAX_ANNOTATORS = 1000


def _matrix(matrix) -> np.ndarray:
    m = np.asarray(matrix, dtype=float)
    if m.ndim != 2 or m.shape[0] < 2 or m.shape[1] < 2:
        raise ValueError(f"need an annotators x items matrix with at least 2 of each, got shape {m.shape}")
    if not np.isfinite(m).all():
        raise ValueError("the matrix holds missing or non-finite S1 values")
    return m


def cell_matrix(scores: Mapping[Hashable, Mapping[Hashable, float]]) -> np.ndarray:
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
    resamples: int

    @property
    def width(self) -> float:
        return self.high - self.low


def bootstrap_interval(matrix, *, confidence: float = 0.95, resamples: int = 2000, seed: int = 0) -> Interval:
    """Two-level (annotators and items) percentile bootstrap interval of the matrix's mean."""
    m = _matrix(matrix)
    n_a, n_i = m.shape
    # Small-sample correction: spread each annotator's row around the cell mean by sqrt(A/(A-1)).
    row_means = m.mean(axis=1, keepdims=True)
    m = m + (row_means - row_means.mean()) * (np.sqrt(n_a / (n_a - 1)) - 1)
    rng = np.random.default_rng(seed)
    # Resampling annotators with replacement = multinomial counts per row; the resampled mean is
    # (row counts) . M summed over the drawn columns, / (A * I), for every resample at once.
    rows = rng.multinomial(n_a, np.full(n_a, 1 / n_a), size=resamples)
    # Items: the drawn column indices themselves (a multinomial over hundreds of items is slow to draw).
    cols = rng.integers(0, n_i, size=(resamples, n_i))
    means = np.take_along_axis(rows @ m, cols, axis=1).sum(axis=1) / (n_a * n_i)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return Interval(mean=float(m.mean()), low=float(low), high=float(high), confidence=confidence,
                    resamples=resamples)


@dataclass(frozen=True)
class Components:
    annotator_means: float  # variance across annotators of an annotator's mean S1 over the items
    items: float  # variance of the items' difficulty
    residual: float  # annotator x item interaction and noise
    n_annotators: int
    n_items: int

    @property
    def annotators(self) -> float:
        """Variance of annotators' true means (the residual's share of their spread taken out)."""
        return max(self.annotator_means - self.residual / self.n_items, 0.0)


def variance_components(matrix) -> Components:
    m = _matrix(matrix)
    n_a, n_i = m.shape
    grand = m.mean()
    row, col = m.mean(axis=1), m.mean(axis=0)
    ms_i = n_a * ((col - grand) ** 2).sum() / (n_i - 1)
    resid = m - row[:, None] - col[None, :] + grand
    ms_e = (resid ** 2).sum() / ((n_a - 1) * (n_i - 1))
    return Components(annotator_means=float(row.var(ddof=1)), items=max((ms_i - ms_e) / n_a, 0.0),
                      residual=float(ms_e), n_annotators=n_a, n_items=n_i)


def expected_width(components: Components, annotators: int, *, confidence: float = 0.95,
                   assurance: float = 0.5) -> float:
    """Full width of the 95% interval of a cell of ``annotators`` on as many items (t with A-1 df).

    ``assurance`` > 0.5 takes an upper confidence bound of the annotators' spread (chi-square
    with the pilot's A-1 degrees of freedom) instead of its estimate.
    """
    if annotators < 2:
        return float("inf")
    c = components
    df = c.n_annotators - 1
    spread = c.annotator_means * (df / float(stats.chi2.ppf(1 - assurance, df)) if assurance > 0.5 else 1.0)
    variance = spread / annotators + c.items / c.n_items
    return 2 * float(stats.t.ppf(0.5 + confidence / 2, annotators - 1)) * float(np.sqrt(variance))


def annotators_needed(pilot, width: float, *, confidence: float = 0.95, assurance: float = 0.8) -> int | None:
    """The fewest annotators giving a 95% interval no wider than ``width`` (0-1 S1 units)."""
    if not 0 < width:
        raise ValueError("the target width must be positive (S1 in 0-1 units: 0.05 is 5 points)")
    if not 0.5 <= assurance < 1:
        raise ValueError("assurance must be in [0.5, 1)")
    components = variance_components(pilot)
    for n in range(2, MAX_ANNOTATORS + 1):
        if expected_width(components, n, confidence=confidence, assurance=assurance) <= width:
            return n
    return None
