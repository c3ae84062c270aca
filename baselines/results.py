"""Model rows beside the human rows (paper Tables 6 and 7) and the human-minus-model gap.

``model_rows(study)`` is the provider the results pages and ``export_results --with-baselines``
load through ``settings.CLUES_MODEL_ROWS_PROVIDER`` (annotation never imports baselines).
"""

from __future__ import annotations

import statistics
from collections import defaultdict

import numpy as np
from scipy.stats import bootstrap

from annotation.models import Answer, Enrollment
from tasks_data.registry import TASKS

from .models import BaselineRun

BOOTSTRAP_RESAMPLES = 10_000
CONFIDENCE = 0.95


def _completed_runs():
    return BaselineRun.objects.filter(status=BaselineRun.Status.COMPLETED).select_related("task")


def summarise_runs(runs) -> list[dict]:
    """Mean and sample std (ddof=1) of S1 over splits per (task, method, model, shots), percent."""
    groups: dict[tuple, list[BaselineRun]] = defaultdict(list)
    for run in runs:
        groups[(run.task.slug, run.method, run.model, run.shots)].append(run)
    order = {slug: i for i, slug in enumerate(TASKS)}
    rows = []
    for (task, method, model, shots), members in sorted(groups.items(), key=lambda kv: (
            order.get(kv[0][0], 99), kv[0][1], kv[0][2], kv[0][3])):
        values = [100 * r.s1 for r in members]
        rows.append({
            "task": task, "method": method, "model": model, "shots": shots,
            "mean": statistics.fmean(values),
            "std": statistics.stdev(values) if len(values) > 1 else None,
            "n": len(values), "splits": sorted(r.split for r in members),
        })
    return rows


def _human_item_means(study) -> dict[tuple[str, int], dict[str, float]]:
    """Per (task, shots): per test item (CLUES id), S1 averaged over the cohort's annotators."""
    answers = Answer.objects.filter(
        step=Answer.Step.TEST, enrollment__state=Enrollment.State.COMPLETED, enrollment__cohort__study=study,
    ).values_list("enrollment__cohort__task__slug", "enrollment__cohort__shots", "example__clues_id", "s1")
    sums: dict[tuple[str, int], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for task, shots, clues_id, s1 in answers:
        sums[(task, shots)][clues_id].append(s1)
    return {cell: {i: statistics.fmean(v) for i, v in items.items()} for cell, items in sums.items()}


def _model_item_means(runs) -> dict[tuple, dict[str, float]]:
    """Per (task, method, model, shots): per test item, S1 averaged over the splits."""
    sums: dict[tuple, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for run in runs:
        for pred, score in zip(run.predictions or [], run.item_scores or [], strict=True):
            sums[(run.task.slug, run.method, run.model, run.shots)][pred["id"]].append(score)
    return {key: {i: statistics.fmean(v) for i, v in items.items()} for key, items in sums.items()}


def paired_gap(human: dict[str, float], model: dict[str, float], *, seed: int = 0) -> dict:
    """Human minus model S1 (percent) over the items both have, with a 95% paired bootstrap CI."""
    ids = sorted(set(human) & set(model))
    diffs = np.array([human[i] - model[i] for i in ids]) * 100
    gap = {"diff": float(diffs.mean()) if len(ids) else None, "ci_low": None, "ci_high": None, "items": len(ids)}
    if len(ids) >= 2 and np.ptp(diffs) > 0:
        # Resampling items keeps each item's human and model scores together: a paired bootstrap.
        ci = bootstrap((diffs,), np.mean, confidence_level=CONFIDENCE, n_resamples=BOOTSTRAP_RESAMPLES,
                       method="percentile", rng=np.random.default_rng(seed)).confidence_interval
        gap["ci_low"], gap["ci_high"] = float(ci.low), float(ci.high)
    elif len(ids):
        gap["ci_low"] = gap["ci_high"] = gap["diff"]  # every item differs by the same amount
    return gap


def model_rows(study=None) -> list[dict]:
    """Model rows (mean ± std over splits); with a study, each row also carries the human-minus-model
    gap on its (task, shots) cell: ``diff``, ``ci_low``, ``ci_high`` (percent) and ``items``."""
    runs = list(_completed_runs())
    rows = summarise_runs(runs)
    if study is None:
        return rows
    human = _human_item_means(study)
    model = _model_item_means(runs)
    for row in rows:
        cell = human.get((row["task"], row["shots"]))
        if cell:
            row.update(paired_gap(cell, model[(row["task"], row["method"], row["model"], row["shots"])]))
    return rows
