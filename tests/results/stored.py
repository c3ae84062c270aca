"""What the stored-scores tests check after every change: each stored row that says it is current holds what the
cohort's answers give there and then (``results.scores._compute``, nothing stored read)."""

from __future__ import annotations

import dataclasses
import math
import pickle

import numpy as np

from annotation.models import Cohort
from results.cache import VERSION
from results.models import StoredScores
from results.scores import CohortScores, _compute


def _plain(value):
    """``value`` comparable with ==: arrays as lists, NaN as a string."""
    if isinstance(value, np.ndarray):
        return [_plain(x) for x in value.tolist()]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(x) for x in value]
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    return value


def comparable(scores: CohortScores) -> dict:
    fields = {f.name: getattr(scores, f.name) for f in dataclasses.fields(scores) if f.name != "fingerprint"}
    return _plain(fields)


def current_rows(study) -> dict[int, StoredScores]:
    """{cohort id: its stored row} of the rows that say they are current."""
    rows = StoredScores.objects.filter(cohort__study=study).select_related("cohort__task")
    current = (r for r in rows if r.basis == r.changes and r.task_data == r.cohort.task.fingerprint)
    return {r.cohort_id: r for r in current if r.version == VERSION}


def check_stored(study) -> set[int]:
    """Assert that every stored row of the study that says it is current holds the scores and prediction files the
    cohort's answers give now; returns those rows' cohort ids (a test says which must be among them)."""
    current = current_rows(study)
    fresh, files = _compute(study, list(Cohort.objects.filter(pk__in=current).select_related("task")))
    for cohort_id, row in current.items():
        stored = pickle.loads(row.scores)
        assert comparable(stored) == comparable(fresh[cohort_id]), f"cohort {cohort_id}: stored scores are stale"
        assert pickle.loads(row.predictions) == files[cohort_id], f"cohort {cohort_id}: stored predictions are stale"
        assert row.annotators == fresh[cohort_id].n
    return set(current)


def changes(cohort) -> int:
    row = StoredScores.objects.filter(cohort=cohort).first()
    return row.changes if row else 0
