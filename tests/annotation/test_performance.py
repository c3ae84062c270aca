"""Aggregating results takes a fixed number of queries, whatever the number of cohorts and answers."""

import time
from functools import partial

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation import selectors
from benchmarks.aggregate_study import build_study, measure
from results import agreement, formats
from results.cells import human_cells
from results.table import build_table
from tasks_data.registry import CLUES_TASKS

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clues")]

SELECTORS = {
    "human_cells": human_cells,
    "study_grid": selectors.study_grid,
    "annotator_rows": selectors.annotator_rows,
    "learning_curves": agreement.learning_curves,
    "cohort_agreement": agreement.cohort_agreement,
    "table render": lambda study: formats.render(build_table(human_cells(study)), "json"),
}


def count_queries(fn) -> int:
    with CaptureQueriesContext(connection) as queries:
        fn()
    return len(queries)


def test_the_query_count_does_not_grow_with_cohorts_or_answers(django_assert_max_num_queries):
    small = build_study(["sst2"], [0], workers=1, name="small")
    big = build_study(["sst2", "mnli", "conll03"], [0, 10, 20], workers=3, name="big")
    assert big.cohorts.count() == 9
    for name, selector in SELECTORS.items():
        assert count_queries(partial(selector, small)) == count_queries(partial(selector, big)), name
    with django_assert_max_num_queries(2):
        human_cells(big)
    with django_assert_max_num_queries(3):
        selectors.annotator_rows(big)
    with django_assert_max_num_queries(2):
        agreement.cohort_agreement(big)


@pytest.mark.slow
def test_a_full_study_aggregates_in_under_a_second():
    study = build_study(list(CLUES_TASKS), [0, 10, 20, 30], workers=3, name="full")
    cells = human_cells(study)
    assert len(cells) == 24 and all(c["n"] == 3 for c in cells)
    began = time.perf_counter()
    human_cells(study)
    assert time.perf_counter() - began < 1.0
    for name, _first, _again, queries in measure(study):
        assert queries <= 4, name
