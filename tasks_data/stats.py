"""Mean ± sample standard deviation: the one statistic every table reports (human cells across annotators,
model rows across runs). Plain Python, no Django import."""

from __future__ import annotations

import statistics
from collections.abc import Iterable

STD_DDOF = 1  # the tables' std is the sample standard deviation (across annotators, or across runs)


def mean_std(values: Iterable[float]) -> tuple[float | None, float | None]:
    """(mean, sample std with ddof=1) of ``values``; std is None below 2 values, mean below 1."""
    values = [float(v) for v in values]
    if not values:
        return None, None
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > STD_DDOF else None)
