"""The cells of every paper table: human cells from completed enrollments (Table 5), the model cells of
baseline runs (Tables 6-7, computed by ``baselines.selectors``) and the human-minus-model gap of each.

Units: percent (S1 x 100), not rounded; ``results.table`` lays the cells out and rounds them.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import NamedTuple

from django.db.models import Avg

from annotation.models import Answer, Study
from annotation.selectors import in_results, study_cohorts
from baselines.models import BaselineRun
from baselines.selectors import agreement_with, completed_runs, model_cells, model_item_means
from tasks_data.models import Example
from tasks_data.s1 import check_mrc_gold, corpus_s1, item_s1
from tasks_data.stats import mean_std

from .majority import majority_predictions, majority_s1
from .stats import paired_gap
from .uncertainty import annotators_needed, bootstrap_interval, cell_matrix


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


class _Given(NamedTuple):
    """One completed annotator's test answer, with what scoring it needs."""

    texts: list[str]
    s1: float  # as stored: the default MRC reading
    gold: list[str]
    clues_id: str


def _cohort_answers(study: Study) -> dict[int, dict[int, dict[int, _Given]]]:
    """{cohort id: {enrollment id: {example id: _Given}}} of the answers every result counts (one query):
    the one read of a study's test answers behind the table's cells, the rescored annotator S1 and the gap."""
    out: dict[int, dict[int, dict]] = defaultdict(lambda: defaultdict(dict))
    for cohort_id, enrollment_id, example_id, texts, s1, gold, clues_id in (
            Answer.objects.filter(in_results("enrollment__"), enrollment__cohort__study=study,
                                  step=Answer.Step.TEST).order_by()
            .values_list("enrollment__cohort_id", "enrollment_id", "example_id", "texts", "s1", "example__gold",
                         "example__clues_id")):
        out[cohort_id][enrollment_id][example_id] = _Given(texts, s1, gold, clues_id)
    return out


def _scores(per_item: dict[int, _Given], rescore: bool, mrc_gold: str) -> dict[int, float]:
    """Per-item S1 of one annotator: as stored (the default MRC reading), or rescored under ``mrc_gold``."""
    if not rescore:
        return {item: given.s1 for item, given in per_item.items()}
    return {item: item_s1(given.texts, given.gold, alternatives=True, mrc_gold=mrc_gold)
            for item, given in per_item.items()}


def _human_item_means(study, mrc_gold: str = "best") -> dict[tuple[str, int], dict[str, float]]:
    """Per (task, shots): per test item (CLUES id), S1 averaged over the cohort's annotators (MRC read by
    ``mrc_gold``: the stored answers rescored for "set")."""
    answers = _cohort_answers(study)
    out = {}
    for cohort in study_cohorts(study):
        by_annotator = answers.get(cohort.pk)
        if not by_annotator:
            continue
        rescore = mrc_gold != "best" and cohort.task.spec.answer_kind.gold_is_alternatives
        sums: dict[str, list[float]] = defaultdict(list)
        for per_item in by_annotator.values():
            for item, score in _scores(per_item, rescore, mrc_gold).items():
                sums[per_item[item].clues_id].append(score)
        out[(cohort.task.slug, cohort.shots)] = {i: statistics.fmean(v) for i, v in sums.items()}
    return out


def _rescored(runs: list[BaselineRun], mrc_gold: str) -> list[BaselineRun]:
    """MRC runs rescored from their stored predictions under ``mrc_gold`` (on the instances, never saved;
    runs store S1 under the default reading). One query for the gold, none when nothing is rescored."""
    mrc = [r for r in runs if mrc_gold != "best" and r.task.spec.answer_kind.gold_is_alternatives and r.predictions]
    if not mrc:
        return runs
    golds = {(task_id, clues_id): gold for task_id, clues_id, gold in
             Example.objects.filter(task_id__in={r.task_id for r in mrc}, role=Example.Role.TEST)
             .values_list("task_id", "clues_id", "gold")}
    for run in mrc:
        run.item_scores = [item_s1(p["prediction"], golds[(run.task_id, str(p["id"]))], alternatives=True,
                                   mrc_gold=mrc_gold) for p in run.predictions]
        run.s1 = corpus_s1(run.item_scores)
    return runs


def _human_majorities(study) -> dict[tuple[str, int], dict[str, list[str]]]:
    """Per (task, shots): per test item (CLUES id), the cohort's majority answer (``results.majority``)."""
    answers = _cohort_answers(study)
    out = {}
    for cohort in study_cohorts(study):
        by_annotator = answers.get(cohort.pk)
        if by_annotator:
            texts = {e: {given.clues_id: given.texts for given in per_item.values()}
                     for e, per_item in by_annotator.items()}
            out[(cohort.task.slug, cohort.shots)] = majority_predictions(texts, cohort.task.spec.answer_kind)
    return out


def model_rows(study: Study | None = None, *, mrc_gold: str = "best") -> list[dict]:
    """Model cells (mean ± std over runs); with a study, each also carries the human-minus-model
    gap on its (task, shots) cell: ``diff``, ``ci_low``, ``ci_high`` (percent) and ``items``, and
    ``agreement``: the share (percent) of items where the model's answer is the cohort's majority answer.
    MRC cells read with ``mrc_gold``, the human and the model side alike."""
    runs = _rescored(list(completed_runs()), check_mrc_gold(mrc_gold))
    rows = model_cells(runs)
    if study is None:
        return rows
    human = _human_item_means(study, mrc_gold)
    model = model_item_means(runs)
    agreement = agreement_with(runs, _human_majorities(study))
    for row in rows:
        key = (row["task"], row["method"], row["model"], row["server"], row["shots"])
        cell = human.get((row["task"], row["shots"]))
        if cell:
            row.update(paired_gap(cell, model.get(key, {})))
            row["agreement"] = agreement.get(key)
    return rows


def annotator_test_s1_read(study: Study, mrc_gold: str) -> dict[int, float]:
    """{enrollment id: test S1 0-1} of completed annotators of MRC cohorts, rescored under ``mrc_gold``
    from their stored answers (1 query; empty for the default reading, which is what is stored)."""
    if check_mrc_gold(mrc_gold) == "best":
        return {}
    out = {}
    # The "set" reading of a non-MRC gold is the plain set S1 that is stored: rescoring every cohort is exact.
    for by_annotator in _cohort_answers(study).values():
        for enrollment_id, per_item in by_annotator.items():
            out[enrollment_id] = statistics.fmean(_scores(per_item, True, mrc_gold).values())
    return out


# ---------------------------------------------------------------- the table's cells, with their extras

DEFAULT_TARGET_POINTS = 5.0  # the planner's default target: a 95% interval of ± 5 S1 points


def _interval(scores: dict) -> tuple[float, float] | None:
    try:
        interval = bootstrap_interval(cell_matrix(scores))
    except ValueError:  # fewer than 2 annotators or items, or annotators who answered different items
        return None
    # S1 lies in [0, 1]: so does its mean (the small-sample widening can push a bound past it).
    return 100 * max(interval.low, 0.0), 100 * min(interval.high, 1.0)


def _planned(scores: dict, target_points: float) -> int | None:
    try:
        return annotators_needed(cell_matrix(scores), 2 * target_points / 100)
    except ValueError:
        return None


def table_cells(study: Study, *, mrc_gold: str = "best", target_points: float = DEFAULT_TARGET_POINTS) -> list[dict]:
    """Table 5's human cells with their extras, one per cohort, in table order (2 queries).

    Each cell has ``human_cells``' keys, S1 read with ``mrc_gold`` (the stored answers rescored
    for "set"), plus ``ci_low``/``ci_high`` (percent: the 95% two-level bootstrap interval of
    ``results.uncertainty``; None below 2 annotators), ``majority`` (percent: S1 of the cohort's
    majority answer, ``results.majority``; None without annotators), ``planned`` (annotators a
    cell needs for a 95% interval of ± ``target_points``, from this cohort's variance; None when
    it cannot be estimated or 1000 are not enough) and ``target_points``.
    """
    check_mrc_gold(mrc_gold)
    answers = _cohort_answers(study)
    out = []
    for cohort in study_cohorts(study):
        kind = cohort.task.spec.answer_kind
        by_annotator = answers.get(cohort.pk, {})
        rescore = mrc_gold != "best" and kind.gold_is_alternatives
        scores = {e: _scores(per_item, rescore, mrc_gold) for e, per_item in by_annotator.items()}
        mean, std = mean_std(100 * statistics.fmean(s.values()) for s in scores.values() if s)
        cell = {"task": cohort.task.slug, "shots": cohort.shots, "mean": mean, "std": std, "n": len(scores),
                "ci_low": None, "ci_high": None, "majority": None, "planned": None, "target_points": target_points}
        if len(scores) >= 2:
            cell["ci_low"], cell["ci_high"] = _interval(scores) or (None, None)
            cell["planned"] = _planned(scores, target_points)
        if scores:
            golds = {item: given.gold for per_item in by_annotator.values() for item, given in per_item.items()}
            texts = {e: {item: given.texts for item, given in per_item.items()} for e, per_item in by_annotator.items()}
            cell["majority"] = 100 * majority_s1(texts, golds, kind, mrc_gold=mrc_gold)
        out.append(cell)
    return out
