"""Uncertainty of human cells (issue 12, item 5): the two-level bootstrap interval's coverage on
simulated annotators, and the annotator planner.

Simulated cohort: S1[a, i] = mu + annotator effect + item effect + noise, with annotators and
items drawn afresh for every simulation, so the target is the population mean mu.
"""

import numpy as np
import pytest

from results.uncertainty import (
    annotators_needed,
    bootstrap_interval,
    cell_matrix,
    expected_width,
    variance_components,
)

MU = 0.7


def cohort(rng, annotators, items, *, sa=0.08, si=0.25, se=0.2):
    a = rng.normal(0, sa, annotators)[:, None]
    i = rng.normal(0, si, items)[None, :]
    return MU + a + i + rng.normal(0, se, (annotators, items))


@pytest.mark.parametrize("annotators", [3, 5])
def test_coverage_of_the_95_interval_on_simulated_annotators(annotators):
    rng = np.random.default_rng(12)
    simulations, hits, widths = 200, 0, []
    for seed in range(simulations):
        interval = bootstrap_interval(cohort(rng, annotators, 60), seed=seed, resamples=1000)
        hits += interval.low <= MU <= interval.high
        widths.append(interval.width)
    assert hits / simulations >= 0.90
    assert hits / simulations < 1.0  # an interval that always covers would be too wide to be of use
    assert 0.05 < np.median(widths) < 0.5


def test_interval_is_seeded_and_sensible():
    m = cohort(np.random.default_rng(0), 3, 40)
    first, again = bootstrap_interval(m), bootstrap_interval(m)
    assert first == again
    assert first.low < m.mean() < first.high and first.mean == pytest.approx(m.mean())
    assert bootstrap_interval(m, seed=1) != first
    assert bootstrap_interval(m, confidence=0.5).width < first.width
    same = np.full((3, 10), 0.5)
    assert bootstrap_interval(same).width == pytest.approx(0.0)


def test_only_item_noise_or_only_annotator_noise_each_widen_it():
    rng = np.random.default_rng(3)
    base = bootstrap_interval(cohort(rng, 4, 50, sa=0.0, si=0.0, se=0.01)).width
    assert bootstrap_interval(cohort(rng, 4, 50, sa=0.2, si=0.0, se=0.01)).width > 5 * base
    assert bootstrap_interval(cohort(rng, 4, 50, sa=0.0, si=0.3, se=0.01)).width > 5 * base


def test_bad_matrices_refused():
    with pytest.raises(ValueError, match="at least 2 of each"):
        bootstrap_interval([[0.5, 0.6]])
    with pytest.raises(ValueError, match="non-finite"):
        bootstrap_interval([[0.5, np.nan], [0.1, 0.2]])
    with pytest.raises(ValueError, match="width must be positive"):
        annotators_needed(np.zeros((3, 3)), 0)


def test_variance_components_recover_the_simulation():
    c = variance_components(cohort(np.random.default_rng(5), 40, 400, sa=0.1, si=0.2, se=0.15))
    assert c.annotators == pytest.approx(0.1 ** 2, rel=0.5)
    assert c.annotator_means == pytest.approx(0.1 ** 2 + 0.15 ** 2 / 400, rel=0.5)
    assert c.items == pytest.approx(0.2 ** 2, rel=0.25)
    assert c.residual == pytest.approx(0.15 ** 2, rel=0.1)


TRUE = dict(sa=0.1, si=0.2, se=0.2)


def test_planner_reaches_the_width_in_most_pilots():
    """Over 100 three-annotator pilots, the planned cohort's true interval width meets the target
    in at least ~4 of 5 (assurance 0.8); planning on the point estimate falls short far more often."""
    rng = np.random.default_rng(7)
    truth = variance_components(cohort(rng, 400, 200, **TRUE))  # the population, estimated closely
    target = 0.12
    met = {0.8: 0, 0.5: 0}
    for _ in range(100):
        pilot = cohort(rng, 3, 200, **TRUE)
        for assurance in met:
            n = annotators_needed(pilot, target, assurance=assurance)
            met[assurance] += n is not None and expected_width(truth, n) <= target
    assert met[0.8] >= 70
    assert met[0.5] < met[0.8]


def test_planner_monotonic_floor_and_bootstrap_agreement():
    rng = np.random.default_rng(8)
    pilot = cohort(rng, 3, 200, **TRUE)
    components = variance_components(pilot)
    floor = expected_width(components, 10 ** 6, assurance=0.8)
    n = annotators_needed(pilot, floor + 0.06)
    assert n is not None and n > 3
    assert expected_width(components, n, assurance=0.8) <= floor + 0.06 < expected_width(components, n - 1,
                                                                                         assurance=0.8)
    assert annotators_needed(pilot, floor + 0.03) > n  # narrower asks for more
    assert annotators_needed(pilot, floor * 0.9) is None  # the items' own variance sets a floor
    with pytest.raises(ValueError, match="assurance"):
        annotators_needed(pilot, 0.1, assurance=1.0)
    # The analytic width the planner uses agrees with the bootstrap interval on cohorts of that size.
    truth = variance_components(cohort(rng, 400, 200, **TRUE))
    widths = [bootstrap_interval(cohort(rng, 12, 200, **TRUE), seed=s, resamples=500).width for s in range(40)]
    assert 0.75 < np.median(widths) / expected_width(truth, 12) < 1.3


def test_cell_matrix_aligns_items_and_refuses_gaps():
    m = cell_matrix({"A": {2: 0.5, 1: 1.0}, "B": {1: 0.0, 2: 0.25}})
    assert m.tolist() == [[1.0, 0.5], [0.0, 0.25]]
    with pytest.raises(ValueError, match="1 \\(annotator, item\\) score\\(s\\) missing"):
        cell_matrix({"A": {1: 1.0, 2: 0.5}, "B": {1: 0.0}})
