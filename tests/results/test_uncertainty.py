"""Uncertainty of human cells: the two named intervals, their coverage on simulated annotators, the planner
and its price (the full coverage study is benchmarks/interval_coverage.py; these are small, fast versions).

Simulated cohort (logistic ability/difficulty): annotator a gets item i right with probability
logistic(theta_a - b_i), theta ~ N(1.5, 0.6), b ~ N(0, 1.5).
"""

from decimal import Decimal

import numpy as np
import pytest
from scipy import stats
from scipy.special import expit

from results.uncertainty import (
    AT_CHANCE,
    FEW_ANNOTATORS,
    TARGETS,
    TASK_ITEMS,
    TEST_SET,
    annotators_for,
    annotators_needed,
    cell_matrix,
    interval_flags,
    plan_assurance,
    plan_cost,
    reach_probability,
    t_interval,
    two_level_interval,
    variance_components,
)

NODES, WEIGHTS = np.polynomial.hermite_e.hermegauss(60)
WEIGHTS = WEIGHTS / WEIGHTS.sum()


def _cohort(rng, annotators, items, b=None):
    b = rng.normal(0, 1.5, items) if b is None else b
    theta = rng.normal(1.5, 0.6, annotators)
    return (rng.random((annotators, len(b))) < expit(theta[:, None] - b[None, :])).astype(float), b


def test_the_t_interval_is_students():
    values = [0.9, 0.75, 0.62]
    ours = t_interval(values)
    low, high = stats.t.interval(0.95, 2, loc=np.mean(values), scale=stats.sem(values))
    assert (ours.low, ours.high) == (pytest.approx(low), pytest.approx(high))
    assert ours.target == TEST_SET and ours.df == 2 and ours.confidence == 0.95
    assert t_interval([0.5, 0.5, 0.5]).width == 0.0
    assert t_interval([0.9, 1.0, 1.0]).clipped().high == 1.0
    with pytest.raises(ValueError, match="at least 2"):
        t_interval([0.5])


@pytest.mark.parametrize("annotators", [3, 10])
def test_this_test_set_interval_covers_its_target(annotators):
    """300 replicates (MC error ~1.3 points): the t interval covers the mean annotator on a fixed test set."""
    rng = np.random.default_rng(annotators)
    hits = 0
    for _ in range(300):
        m, b = _cohort(rng, annotators, 120)
        truth = (expit(1.5 + 0.6 * NODES[:, None] - b[None, :]) * WEIGHTS[:, None]).sum(axis=0).mean()
        interval = t_interval(m.mean(axis=1))
        hits += interval.low <= truth <= interval.high
    assert 0.91 <= hits / 300 <= 0.985


@pytest.mark.parametrize("annotators", [3, 10])
def test_task_items_interval_covers_the_population_mean(annotators):
    rng = np.random.default_rng(100 + annotators)
    truth = (expit(1.5 + np.hypot(0.6, 1.5) * NODES) * WEIGHTS).sum()
    hits = 0
    for _ in range(300):
        interval = two_level_interval(_cohort(rng, annotators, 120)[0])
        hits += interval.low <= truth <= interval.high
    assert 0.91 <= hits / 300 <= 0.985
    assert interval.target == TASK_ITEMS and set(TARGETS) == {TEST_SET, TASK_ITEMS}


def test_the_task_items_interval_is_wider_and_grows_with_item_spread():
    rng = np.random.default_rng(3)
    m, _ = _cohort(rng, 5, 80)
    assert two_level_interval(m).width > t_interval(m.mean(axis=1)).width
    flat = np.tile(rng.random(5)[:, None], (1, 80))  # items all alike: only annotators vary
    assert two_level_interval(flat).width == pytest.approx(t_interval(flat.mean(axis=1)).width)


def test_bad_matrices_refused():
    with pytest.raises(ValueError, match="at least 2 of each"):
        two_level_interval([[0.5, 0.6]])
    with pytest.raises(ValueError, match="non-finite"):
        variance_components([[0.5, np.nan], [0.1, 0.2]])
    with pytest.raises(ValueError, match="half-width must be positive"):
        annotators_needed([0.5, 0.6, 0.7], 0)
    with pytest.raises(ValueError, match="assurance"):
        annotators_needed([0.5, 0.6, 0.7], 0.1, assurance=1.0)


def test_planner_matches_simulated_studies():
    """The planner's n against simulation: the share of simulated studies (normal annotator S1, spread
    sigma) whose t half-width reaches the target crosses 80% between n - 1 and n."""
    rng = np.random.default_rng(11)
    sigma, h = 0.1, 0.05
    n = annotators_for(sigma, h, assurance=0.8)

    def share(k):
        s = rng.normal(0.7, sigma, (20000, k))
        return np.mean(stats.t.ppf(0.975, k - 1) * s.std(axis=1, ddof=1) / np.sqrt(k) <= h)

    assert share(n) >= 0.79 and share(n - 1) < 0.81
    assert reach_probability(sigma, n, h) >= 0.8 > reach_probability(sigma, n - 1, h)
    assert annotators_for(sigma, h / 2) > n and annotators_for(sigma, 2 * h) < n
    assert annotators_for(0.5, 0.001) is None  # 1000 annotators are not enough


@pytest.mark.parametrize("pilot", [3, 5, 10])
def test_plans_from_a_pilot_reach_the_target_in_80_percent_of_studies(pilot):
    """The assurance holds over the pilot's noise and the study's: pilots drawn, each planned, each plan's study
    drawn; the share of studies that reached ± h is 80% within Monte-Carlo error (a plan from the pilot's
    spread taken as the truth reached it in ~55-75% of studies)."""
    rng = np.random.default_rng([12, pilot])
    sigma, h = 0.1, 0.05
    reached = []
    for _ in range(1500):
        n = annotators_needed(rng.normal(0.7, sigma, pilot), h)
        study = rng.normal(0.7, sigma, n)
        reached.append(stats.t.ppf(0.975, n - 1) * study.std(ddof=1) / np.sqrt(n) <= h)
    assert 0.76 <= np.mean(reached) <= 0.84
    assert annotators_needed([0.7], h) is None


def test_the_assurance_is_the_f_distribution_of_the_two_variances():
    """P(reach) = P(F(n - 1, df) <= n h^2 / (t^2 s_pilot^2)), re-derived with scipy.stats."""
    n, df, var, h = 20, 2, 0.01, 0.05
    bound = n * h**2 / (stats.t.ppf(0.975, n - 1) ** 2 * var)
    assert plan_assurance(var, df, n, h) == pytest.approx(stats.f.cdf(bound, n - 1, df))
    plan = annotators_needed([0.6, 0.7, 0.8], h)
    assert plan_assurance(0.01, 2, plan, h) >= 0.8 > plan_assurance(0.01, 2, plan - 1, h)


def test_plan_cost():
    cost = plan_cost(annotators=25, pay_each=Decimal("4.10"), fee_share=1 / 3)
    assert cost.pay == Decimal("102.50") and cost.fee == Decimal("34.17") and cost.total == Decimal("136.67")
    assert plan_cost(annotators=3, pay_each=Decimal("2.00"), fee_share=0).total == Decimal("6.00")
    with pytest.raises(ValueError, match="negative"):
        plan_cost(annotators=-1, pay_each=Decimal(1), fee_share=0.3)


def test_cell_matrix_aligns_items_and_refuses_gaps():
    m = cell_matrix({"A": {2: 0.5, 1: 1.0}, "B": {1: 0.0, 2: 0.25}})
    assert m.tolist() == [[1.0, 0.5], [0.0, 0.25]]
    with pytest.raises(ValueError, match="1 \\(annotator, item\\) score\\(s\\) missing"):
        cell_matrix({"A": {1: 1.0, 2: 0.5}, "B": {1: 0.0}})


def test_flags_say_when_a_population_of_guessers_could_go_unseen():
    rng = np.random.default_rng(3)
    earnest = list(0.75 + 0.05 * rng.standard_normal(20))
    # A cohort of 3 to 13 with no one at chance: only the size flag; from 14 on a share of one in five guessers
    # in the population shows (at chance) in 95% of cohorts.
    assert 1 - 0.8**13 < 0.95 <= 1 - 0.8**14
    assert interval_flags(earnest[:3], chance=0.5, items=200) == [FEW_ANNOTATORS]
    assert interval_flags(earnest[:13], chance=0.5, items=200) == [FEW_ANNOTATORS]
    assert interval_flags(earnest[:14], chance=0.5, items=200) == []
    # An annotator within binomial noise of chance (0.5 + 1.96 * sqrt(0.25 / 200) = 0.569) is named too.
    assert interval_flags([*earnest[:14], 0.56], chance=0.5, items=200) == [AT_CHANCE]
    assert interval_flags([*earnest[:14], 0.58], chance=0.5, items=200) == []
