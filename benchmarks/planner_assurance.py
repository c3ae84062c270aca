"""Does the planner's promise hold per pilot? Assurance of ``results.uncertainty.annotators_needed`` by
simulation, for normal, skewed and guessing annotator populations.

The planner promises: a study of the planned size reaches a 95% t interval of ± h on this test set in at least
80% of studies, with 90% confidence over the pilot (the plan uses the spread's upper 90% confidence bound). For
each population and pilot size, pilots are drawn from a large pool of annotator S1, each is planned, and each
plan's own assurance is measured (4,000 studies of that size drawn from the pool). Printed per row:

* the range of plans (median [10th, 90th percentile]);
* kept: the share of pilots whose plan reaches ± h in at least 80% of studies (the promise: 90%);
* reached: the share of studies that reached ± h, over all pilots, and after the fifth of pilots with the
  lowest spread (where a plan from the pilot's spread, or from the F predictive averaged over pilots, fails);
* the former planner (F predictive: 80% on average over pilots and studies) beside it.

Populations (S1 on a 250-item test set, 0-1):

* normal: N(0.76, 0.09);
* skewed: left-skewed, 0.95 - Gamma(2, 0.06) (mean 0.83, sd 0.085, a long tail of weak annotators);
* guessing: 80% N(0.76, 0.09), 20% at chance 0.5 (binomial noise over the items);
* logistic: annotators of benchmarks/interval_coverage.py (theta ~ N(1.5, 0.6), b ~ N(0, 1.5), binary items).

    .venv/bin/python benchmarks/planner_assurance.py [--pilots 2000] [--seed 0]

Plain numpy/scipy; no database.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats
from scipy.special import expit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from results.uncertainty import (
    MAX_ANNOTATORS,
    PLAN_CONFIDENCE,
    annotators_needed,
    plan_assurance,
)

ITEMS = 250
PILOTS = (3, 5, 10)
POINTS = (5.0, 3.0)
ASSURANCE = 0.8
STUDIES = 4000


def pool(name: str, rng, size: int = 200_000) -> np.ndarray:
    if name == "normal":
        return np.clip(rng.normal(0.76, 0.09, size), 0, 1)
    if name == "skewed":
        return np.clip(0.95 - rng.gamma(2.0, 0.06, size), 0, 1)
    if name == "guessing":
        x = rng.normal(0.76, 0.09, size)
        guess = rng.random(size) < 0.2
        x[guess] = rng.binomial(ITEMS, 0.5, guess.sum()) / ITEMS
        return np.clip(x, 0, 1)
    if name == "logistic":
        b = rng.normal(0, 1.5, ITEMS)
        out = np.empty(size)
        for start in range(0, size, 5000):
            theta = rng.normal(1.5, 0.6, min(5000, size - start))
            p = expit(theta[:, None] - b[None, :])
            out[start : start + len(theta)] = (rng.random(p.shape) < p).mean(axis=1)
        return out
    raise ValueError(name)


POPULATIONS = ("normal", "skewed", "guessing", "logistic")


def former_plan(pilot: np.ndarray, h: float) -> int:
    """The former planner: the fewest n with P(F(n - 1, pilot - 1) <= n h^2 / (t^2 s^2)) >= 0.8."""
    variance, df = float(pilot.var(ddof=1)), len(pilot) - 1
    low, high = 2, MAX_ANNOTATORS
    if plan_assurance(variance, df, high, h) < ASSURANCE:
        return MAX_ANNOTATORS
    while low < high:
        mid = (low + high) // 2
        if plan_assurance(variance, df, mid, h) >= ASSURANCE:
            high = mid
        else:
            low = mid + 1
    return low


class Reach:
    """A plan's own assurance: the share of studies of n annotators from the pool whose t half-width <= h
    (memoised per n: plans repeat)."""

    def __init__(self, values: np.ndarray, h: float, rng):
        self.values, self.h, self.rng = values, h, rng
        self.memo: dict[int, float] = {}

    def __call__(self, n: int) -> float:
        if n not in self.memo:
            done, hits = 0, 0
            while done < STUDIES:  # in batches: a study of 1000 annotators x 4000 is 32 MB
                k = max(1, min(STUDIES - done, 2_000_000 // n))
                sample = self.values[self.rng.integers(0, len(self.values), size=(k, n))]
                half = stats.t.ppf(0.975, n - 1) * sample.std(axis=1, ddof=1) / np.sqrt(n)
                hits += int((half <= self.h).sum())
                done += k
            self.memo[n] = hits / STUDIES
        return self.memo[n]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pilots", type=int, default=2000, help="simulated pilots per row")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    began = time.perf_counter()
    print(
        f"planner: 95% t interval of ± h on this test set in {ASSURANCE:.0%} of studies, with {PLAN_CONFIDENCE:.0%} "
        f"confidence over the pilot; {args.pilots} pilots per row, {STUDIES} studies per plan"
    )
    print(
        f"{'population':10s} {'sd':>5s} {'± h':>4s} {'pilot':>5s} {'plans: median [p10, p90]':>25s} {'kept':>6s} "
        f"{'reached':>8s} {'lowest fifth':>12s} | {'former: plans':>20s} {'kept':>6s} {'reached':>8s} "
        f"{'lowest fifth':>12s}"
    )
    kept_all, low_all, former_low = [], [], []
    for name in POPULATIONS:
        rng = np.random.default_rng([args.seed, POPULATIONS.index(name)])
        values = pool(name, rng)
        for points in POINTS:
            h = points / 100
            reach = Reach(values, h, np.random.default_rng([args.seed, POPULATIONS.index(name), int(points)]))
            for size in PILOTS:
                pilots = values[rng.integers(0, len(values), size=(args.pilots, size))]
                spread = pilots.std(axis=1, ddof=1)
                lowest = spread <= np.quantile(spread, 0.2)
                row = [f"{name:10s} {100 * values.std():5.1f} {points:4.0f} {size:5d}"]
                for former in (False, True):
                    plans = np.array(
                        [former_plan(p, h) if former else annotators_needed(p, h) or MAX_ANNOTATORS for p in pilots]
                    )
                    assured = np.array([reach(int(n)) for n in plans])
                    p10, p50, p90 = np.percentile(plans, [10, 50, 90])
                    kept = float((assured >= ASSURANCE).mean())
                    reached, low = float(assured.mean()), float(assured[lowest].mean())
                    row.append(
                        f"{p50:8.0f} [{p10:4.0f}, {p90:5.0f}] {100 * kept:5.1f}% {100 * reached:7.1f}% "
                        f"{100 * low:11.1f}%"
                    )
                    if len(row) == 2:
                        kept_all.append(kept)
                        low_all.append(low)
                    else:
                        former_low.append(low)
                print(" ".join(row[:2]) + " | " + row[2])
    print(
        f"\nkept (plans reaching ± h in >= {ASSURANCE:.0%} of studies): {100 * min(kept_all):.1f}-"
        f"{100 * max(kept_all):.1f}% of pilots (promise: {PLAN_CONFIDENCE:.0%}); after the lowest fifth of pilots: "
        f"{100 * min(low_all):.1f}-{100 * max(low_all):.1f}% of studies reached (former planner "
        f"{100 * min(former_low):.1f}-{100 * max(former_low):.1f}%)"
    )
    print(f"took {time.perf_counter() - began:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
