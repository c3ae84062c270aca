"""The cells of every paper table: human cells from completed enrollments (Table 5), model cells
from baseline runs (Tables 6-7) and the human-minus-model gap of each model cell.

Units: percent (S1 x 100), not rounded; ``results.table`` lays the cells out and rounds them.
"""

from __future__ import annotations

import statistics
from collections import defaultdict

from django.db.models import Avg

from annotation.models import Answer, Study
from annotation.selectors import cohort_key, in_results, study_cohorts
from baselines.models import BaselineRun

from .stats import mean_std, paired_gap


def annotator_test_s1(study: Study) -> dict[int, tuple[int, float]]:
    """{enrollment id: (cohort id, test S1 0-1)} of every completed enrollment (one query, in the DB).

    An annotator's S1 is the mean of the per-item S1 stored with each test answer (computed
    by ``tasks_data.s1`` when the answer was submitted).
    """
    rows = (Answer.objects.filter(in_results("enrollment__"), enrollment__cohort__study=study,
                                  step=Answer.Step.TEST).order_by()
            .values("enrollment_id", "enrollment__cohort_id").annotate(s1=Avg("s1"))
            .values_list("enrollment_id", "enrollment__cohort_id", "s1"))
    return {enrollment_id: (cohort_id, s1) for enrollment_id, cohort_id, s1 in rows}


def human_cells(study: Study) -> list[dict]:
    """The human-performance cells of Table 5, one per cohort, in table order (2 queries).

    Each cell is ``{"task": slug, "shots": k, "mean": m, "std": s, "n": n}``: mean and
    sample standard deviation (ddof=1) of the test S1 of the cohort's ``n`` completed
    annotators, in percent (not rounded); ``std`` is None when n < 2, ``mean`` when n = 0.
    """
    by_cohort: dict[int, list[float]] = defaultdict(list)
    for cohort_id, s1 in annotator_test_s1(study).values():
        by_cohort[cohort_id].append(100 * s1)
    cells = []
    for cohort in study_cohorts(study):
        values = by_cohort.get(cohort.pk, [])
        mean, std = mean_std(values)
        cells.append({"task": cohort.task.slug, "shots": cohort.shots, "mean": mean, "std": std, "n": len(values)})
    return cells


def _completed_runs():
    return BaselineRun.objects.filter(status=BaselineRun.Status.COMPLETED).select_related("task")


def model_cells(runs) -> list[dict]:
    """Mean and sample std (ddof=1) of S1 over splits per (task, method, model, shots), percent."""
    groups: dict[tuple, list[BaselineRun]] = defaultdict(list)
    for run in runs:
        groups[(run.task.slug, run.method, run.model, run.shots)].append(run)
    rows = []
    for (task, method, model, shots), members in sorted(
            groups.items(), key=lambda kv: (cohort_key(kv[0][0], 0)[0], kv[0][1], kv[0][2], kv[0][3])):
        mean, std = mean_std(100 * r.s1 for r in members)
        rows.append({"task": task, "method": method, "model": model, "shots": shots, "mean": mean, "std": std,
                     "n": len(members), "splits": sorted(r.split for r in members)})
    return rows


def _human_item_means(study) -> dict[tuple[str, int], dict[str, float]]:
    """Per (task, shots): per test item (CLUES id), S1 averaged over the cohort's annotators."""
    answers = Answer.objects.filter(
        in_results("enrollment__"), step=Answer.Step.TEST, enrollment__cohort__study=study,
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


def model_rows(study: Study | None = None) -> list[dict]:
    """Model cells (mean ± std over splits); with a study, each also carries the human-minus-model
    gap on its (task, shots) cell: ``diff``, ``ci_low``, ``ci_high`` (percent) and ``items``."""
    runs = list(_completed_runs())
    rows = model_cells(runs)
    if study is None:
        return rows
    human = _human_item_means(study)
    model = _model_item_means(runs)
    for row in rows:
        cell = human.get((row["task"], row["shots"]))
        if cell:
            row.update(paired_gap(cell, model.get((row["task"], row["method"], row["model"], row["shots"]), {})))
    return rows
