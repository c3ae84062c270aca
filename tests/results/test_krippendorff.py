"""Krippendorff's alpha (results.measures) against the `krippendorff` package: nominal on label data, the set
(Jaccard) distance through the package's custom-distance hook; and in the agreement export of real cohorts."""

from __future__ import annotations

import json
import random

import krippendorff
import numpy as np
import pytest
from django.test import Client

from results.measures import krippendorff_alpha
from tests.annotation.factories import cohort, complete, make_study, trim_test_set


def _matrix(units_by_rater, values):
    """Raters x units reliability data of value indices (NaN: not answered), for the package."""
    index = {v: i for i, v in enumerate(values)}
    return np.array([[np.nan if v is None else index[v] for v in row] for row in units_by_rater], dtype=float)


@pytest.mark.parametrize("seed", range(40))
def test_nominal_alpha_equals_the_package(seed):
    rng = random.Random(seed)
    raters, units = rng.randint(2, 6), rng.randint(2, 40)
    labels = ["entailment", "neutral", "contradiction"][: rng.randint(2, 3)]
    data = [[rng.choice(labels) if rng.random() > 0.25 else None for _ in range(units)] for _ in range(raters)]
    ours = krippendorff_alpha([[row[u] for row in data if row[u] is not None] for u in range(units)])
    try:
        # a sample whose units never disagree has no expected disagreement: the package divides 0 by 0 (nan)
        with np.errstate(invalid="ignore"):
            theirs = krippendorff.alpha(reliability_data=_matrix(data, labels), level_of_measurement="nominal")
    except ValueError:  # the package refuses data with one value only
        theirs = float("nan")
    if np.isnan(theirs):
        assert ours is None
    else:
        assert ours == pytest.approx(theirs, abs=1e-12)


@pytest.mark.parametrize("seed", range(20))
def test_set_alpha_equals_the_package_with_the_jaccard_distance(seed):
    rng = random.Random(100 + seed)
    spans = ["Paris", "EU", "Obama", "Berlin", "UN"]
    raters, units = rng.randint(2, 5), rng.randint(3, 25)
    data = [
        [frozenset(rng.sample(spans, rng.randint(0, 2))) if rng.random() > 0.2 else None for _ in range(units)]
        for _ in range(raters)
    ]
    values = sorted({v for row in data for v in row if v is not None}, key=sorted)
    distance = np.array([[0.0 if not a and not b else 1 - len(a & b) / len(a | b) for b in values] for a in values])
    ours = krippendorff_alpha(
        [[sorted(row[u]) for row in data if row[u] is not None] for u in range(units)], distance="jaccard"
    )
    theirs = krippendorff.alpha(
        reliability_data=_matrix(data, values),
        value_domain=list(range(len(values))),
        level_of_measurement=lambda v1, v2, i1, i2, n_v, dtype: distance[i1, i2],
    )
    assert ours == pytest.approx(theirs, abs=1e-12)


def test_jaccard_on_single_answers_is_nominal_and_bad_distances_are_refused():
    units = [["x", "x", "y"], ["y", "y"], ["x", "z", "x"], ["q"]]
    assert krippendorff_alpha([[[v] for v in u] for u in units], distance="jaccard") == pytest.approx(
        krippendorff_alpha(units)
    )
    assert krippendorff_alpha([["a", "a"], ["a", "a"]]) is None  # one value only: undefined
    assert krippendorff_alpha([["a"], ["b"]]) is None  # nothing pairable
    with pytest.raises(ValueError, match="nominal or jaccard"):
        krippendorff_alpha(units, distance="ordinal")


@pytest.mark.django_db
@pytest.mark.usefixtures("clues")
@pytest.mark.parametrize("task", ["sst2", "mnli"])
def test_agreement_export_gives_the_package_alpha_for_label_tasks(task, researcher):
    trim_test_set(task, 6)
    study = make_study(tasks=[task], shots=[0], created_by=researcher, filter_floor=None, filter_fraction=None)
    zero = cohort(study, task, 0)
    complete(zero, "A")
    complete(zero, "B", wrong_test={1, 4})
    complete(zero, "C", wrong_test={1, 2})
    client = Client()
    client.force_login(researcher)
    (row,) = json.loads(client.get(f"/api/studies/{study.pk}/export/agreement/", {"fmt": "json"}).content)["rows"]
    answers = [
        dict(e.answers.filter(step="test").values_list("example_id", "texts")) for e in zero.enrollments.order_by("pk")
    ]
    items = sorted(answers[0])
    labels = sorted({t[0] for a in answers for t in a.values()})
    data = [[labels.index(a[i][0]) for i in items] for a in answers]
    expected = krippendorff.alpha(reliability_data=np.array(data, dtype=float), level_of_measurement="nominal")
    assert row["alpha_distance"] == "nominal" and row["krippendorff_alpha"] == pytest.approx(expected, abs=1e-12)
    assert row["fleiss_kappa"] is not None
