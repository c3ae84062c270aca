"""The cells of every paper table, from the cohorts' scores (``results.scores``) and the runs
(``results.runs``): human cells from completed enrollments (Table 5) with their intervals, flags, majority
vote and planner, and the model cells of baseline runs (Tables 6-7) with the human-minus-model gap of each.

Units: percent (S1 x 100), not rounded; ``results.table`` lays the cells out and ``results.formats``
writes them.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
from django.db.models import Avg

from annotation.models import Answer, Cohort, Study
from annotation.selectors import cut_off_by_time, in_results, study_cohorts
from baselines.selectors import agreement_with, completed_runs
from tasks_data.s1 import check_mrc_gold, corpus_s1
from tasks_data.stats import mean_std

from . import runs
from .cache import VERSION, cached_many, keep_many
from .scores import CohortScores, study_scores
from .uncertainty import (
    MODEL_BASED_BELOW,
    ONE_RUN,
    PLAN_CONFIDENCE,
    TASK_ITEMS,
    TEST_SET,
    annotators_needed,
    gap_interval,
    interval_flags,
    plan_cost,
    plan_range,
    t_interval,
    two_level_interval,
)


def annotator_test_s1(study: Study) -> dict[int, tuple[int, float]]:
    """{enrollment id: (cohort id, test S1 0-1)} of every completed enrollment (one query, in the DB).

    An annotator's S1 is the mean of the per-item S1 stored with each test answer (computed
    by ``tasks_data.s1`` when the answer was submitted).
    """
    rows = (
        Answer.objects.filter(in_results("enrollment__"), enrollment__cohort__study=study, step=Answer.Step.TEST)
        .order_by()
        .values("enrollment_id", "enrollment__cohort_id")
        .annotate(s1=Avg("s1"))
        .values_list("enrollment_id", "enrollment__cohort_id", "s1")
    )
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


def fee_share(study: Study) -> float:
    """The crowd platform's service fee, as a share of what workers are paid (none for other platforms)."""
    return study.provider.service_fee()


def cohort_splits(study: Study) -> dict[int, int | None]:
    """{cohort id: the split of its training file} (None at 0 shots: no training step), 1 query."""
    return dict(Cohort.objects.filter(study=study).values_list("pk", "training_set__split"))


def model_rows(study: Study | None = None, *, mrc_gold: str = "best") -> list[dict]:
    """Model cells (mean ± std over splits, ``results.runs.model_rows``); with a study, the rows of its tasks,
    each with ``beside_humans``: whether the study has a cohort of the same task and shots with a completed
    annotator in results (else the row is listed apart: "no human cohort"). A row beside humans also carries
    the human-minus-model gap (``_gap``): ``diff`` (percent), ``items``, ``runs``, two 95% intervals each named
    by its target (``ci_low``/``ci_high``: this test set, annotators and the model's runs random;
    ``ci_two_level_low``/``ci_two_level_high``: the task's items, annotators, items and runs random;
    ``results.uncertainty.gap_interval``), ``gap_flags`` (the cohort's flags, and ``one_run``), the like-for-like
    gap against the row's runs on the cohort's own training split (``matched``: ``split``, ``runs``, ``diff`` and
    both intervals; None at 0 shots, without such a run, or when every run of the row is on it), and
    ``agreement``: the share (percent) of items where the model's answer is the cohort's majority answer. MRC
    cells read with ``mrc_gold``, the human and the model side alike. Kept per cohort until a run or the
    cohort's results change."""
    check_mrc_gold(mrc_gold)
    if study is None:
        return runs.model_rows(mrc_gold)
    scores = study_scores(study)
    runs_fp = runs.runs_fingerprint()
    rows = [dict(r) for r in runs.model_rows(mrc_gold, runs=runs_fp) if r["task"] in study.tasks]
    by_cell = {(s.task, s.shots): s for s in scores.values() if s.n}
    for row in rows:
        row["beside_humans"] = (row["task"], row["shots"]) in by_cell
    wanted = {(row["task"], row["shots"]) for row in rows} & set(by_cell)
    # Each cohort's gaps are kept under its own fingerprint: a new result computes that cohort's again only.
    keys = {
        cell: f"results:gaps:v{VERSION}:{study.pk}:{mrc_gold}:{by_cell[cell].cohort_id}:"
        f"{by_cell[cell].fingerprint}:{runs_fp}"
        for cell in wanted
    }
    gaps = cached_many(list(keys.values()))
    missing = [cell for cell in wanted if keys[cell] not in gaps]
    if missing:
        splits = cohort_splits(study)
        agreement = agreement_with(
            completed_runs().filter(task__slug__in={c[0] for c in missing}),
            {cell: by_cell[cell].majority for cell in missing},
        )
        for cell in missing:
            found = {}
            of_cell = runs.run_item_scores(cell[0], cell[1], mrc_gold)
            for row in rows:
                if (row["task"], row["shots"]) == cell:
                    identity = _identity(row)
                    members = [r for r in of_cell if r["key"][1:5] == identity]
                    found[identity] = {
                        **_gap(by_cell[cell], members, mrc_gold, split=splits.get(by_cell[cell].cohort_id)),
                        "agreement": agreement.get((row["task"], *identity, row["shots"])),
                    }
            gaps[keys[cell]] = found
        keep_many({keys[cell]: gaps[keys[cell]] for cell in missing})
    for row in rows:
        cell = (row["task"], row["shots"])
        if cell in keys:
            row.update(gaps[keys[cell]].get(_identity(row), {}))
    return rows


def _identity(row: dict) -> tuple[str, str, str, str]:
    return row["method"], row["model"], row.get("backend", ""), row["server"]


GAP_KEYS = ("diff", "items", "runs", "ci_low", "ci_high", "ci_two_level_low", "ci_two_level_high")


def _gap_of(human: np.ndarray, model: np.ndarray, *, model_random: bool) -> dict:
    """The gap (percent) of a complete annotators x items matrix against a runs x items one, both intervals."""
    out: dict = dict.fromkeys(GAP_KEYS)
    out["items"], out["runs"] = int(human.shape[1]), int(model.shape[0])
    if human.shape[1] == 0 or model.shape[0] == 0:
        return out
    out["diff"] = 100 * float(human.mean() - model.mean())
    if human.shape[0] >= 2 and human.shape[1] >= 2:
        for prefix, target in (("ci", TEST_SET), ("ci_two_level", TASK_ITEMS)):
            interval = gap_interval(human, model, target=target, model_random=model_random)
            out[f"{prefix}_low"], out[f"{prefix}_high"] = 100 * interval.low, 100 * interval.high
    return out


def _gap(cell: CohortScores, members: list[dict], mrc_gold: str, *, split: int | None) -> dict:
    """The gap of one model row (its runs, ``results.runs.run_item_scores``) on one cohort: against every run
    (the training splits random), and like for like against the runs on the cohort's own split."""
    human = cell.matrix(mrc_gold)
    # The items every annotator answered and every run scored (a cohort's annotators answer the same test set).
    cols = [
        j
        for j, x in enumerate(cell.clues_ids)
        if np.isfinite(human[:, j]).all() and all(x in r["items"] for r in members)
    ]
    h = human[:, cols]
    ids = [cell.clues_ids[j] for j in cols]

    def model(of: list[dict]) -> np.ndarray:
        return np.array([[r["items"][x] for x in ids] for r in of], dtype=float).reshape(len(of), len(ids))

    out = _gap_of(h, model(members), model_random=True)
    out["gap_flags"] = [f for f in interval_flags_of(cell, mrc_gold)] + ([ONE_RUN] if len(members) == 1 else [])
    same = [r for r in members if split is not None and r["split"] == split]
    out["matched"] = None
    if split is not None and same and len(same) < len(members):  # all of them on it: the gap row says it already
        # The humans' own training split: the split is fixed, only the run's seeds (if several) vary.
        out["matched"] = {"split": split, **_gap_of(h, model(same), model_random=True)}
    return out


def interval_flags_of(cell: CohortScores, mrc_gold: str) -> list[str]:
    """The cohort's interval flags (``results.uncertainty.interval_flags``), as its cell in the table has them."""
    s1 = list(cell.annotator_s1(mrc_gold).values())
    if len(s1) < 2:
        return []
    return interval_flags(
        s1,
        chance=cell.chance_s1,
        items=len(cell.example_ids),
        matrix=cell.matrix(mrc_gold) if cell.complete else None,
    )


def annotator_test_s1_read(study: Study, mrc_gold: str) -> dict[int, float]:
    """{enrollment id: test S1 0-1} of the annotators in results, rescored under ``mrc_gold`` from their
    stored answers (empty for the default reading, which is what is stored)."""
    if check_mrc_gold(mrc_gold) == "best":
        return {}
    out = {}
    for scores in study_scores(study).values():
        out.update(scores.annotator_s1(mrc_gold))
    return out


# ---------------------------------------------------------------- the table's cells, with their extras

DEFAULT_TARGET_POINTS = 5.0  # the planner's default target: a 95% interval of ± 5 S1 points
DEFAULT_ASSURANCE = 0.8  # the planner's: the share of studies of the planned size that reach the target


def _plan(study: Study, cohort, scores: CohortScores, s1: list[float], target_points: float) -> dict:
    """The planner's annotators for ± ``target_points`` ("this test set": 80% of studies reach it, with 90%
    confidence over this pilot, ``results.uncertainty.annotators_needed``), the range of plans another pilot of
    this size could give (``plan_low``, ``plan_high``) and their price: each paid the cohort's estimate
    (``annotation.estimates``: the figure the
    workers and the platform are shown, measured once the cohort's first workers finished) at the study's rate,
    every part, plus the platform's service fee."""
    planned = annotators_needed(s1, target_points / 100, assurance=DEFAULT_ASSURANCE)
    low, high = plan_range(s1, target_points / 100, assurance=DEFAULT_ASSURANCE)
    out: dict[str, object] = {
        "planned": planned,
        "plan_low": low,
        "plan_high": high,
        "assurance": DEFAULT_ASSURANCE,
        "plan_confidence": PLAN_CONFIDENCE,
        "expected_minutes": None,
        "planned_cost": None,
        "planned_fee": None,
        "currency": study.pay_currency,
    }
    estimate = scores.estimate  # kept with the cached scores; a cohort without annotators has no plan to price
    if estimate is None:
        return out
    out["expected_minutes"] = estimate.listed_minutes  # the minutes the workers are shown and paid, every part
    out["parts"] = len(estimate.parts)
    if planned is not None:
        share = fee_share(study)
        cost = plan_cost(annotators=planned, pay_each=estimate.total_pay, fee_share=share)
        out["planned_cost"], out["planned_fee"], out["fee_share"] = cost.total, cost.fee, share
    return out


def table_cells(study: Study, *, mrc_gold: str = "best", target_points: float = DEFAULT_TARGET_POINTS) -> list[dict]:
    """Table 5's human cells with their extras, one per cohort, in table order (3 queries when the
    cohorts' scores are cached, ``results.scores``).

    Each cell has ``human_cells``' keys, S1 read with ``mrc_gold`` (the stored answers rescored
    for "set"), plus two 95% intervals (percent; None below 2 annotators), each named by its target
    (``results.uncertainty.TARGETS``): ``ci_low``/``ci_high`` for "this test set" (t interval over the
    annotators' S1) and ``ci_task_low``/``ci_task_high`` for "the task's items" (two-level, annotators
    and items); ``majority`` (percent: S1 of the cohort's majority answer, ``results.majority``; None
    without annotators); ``flags``: what makes the intervals doubtful (keys of ``results.uncertainty.FLAGS``:
    an annotator at chance, near-ceiling items); the planner: ``planned`` (annotators a cell needs for a 95%
    interval on this test set of ± ``target_points``, with probability ``assurance``; None when it cannot be estimated
    or 1000 are not enough), ``expected_minutes`` (the cohort's estimate, ``annotation.estimates``), ``planned_cost``
    and ``planned_fee`` (Decimal, in ``currency``: planned annotators x the estimate's pay at the study's
    rate, plus the platform's service fee, ``study.provider.service_fee()``) and ``target_points``; ``cut_off``: the
    cohort's workers cut off by a part's time limit, whom no cell counts (``annotation.selectors.cut_off_by_time``).
    """
    check_mrc_gold(mrc_gold)
    scores = study_scores(study)
    cut_off = cut_off_by_time(study)
    out = []
    for cohort in study_cohorts(study):
        cell_scores = scores.get(cohort.pk) or CohortScores(cohort.pk, cohort.task.slug, cohort.shots)
        s1 = list(cell_scores.annotator_s1(mrc_gold).values())
        mean, std = mean_std(100 * v for v in s1)
        cell = {
            "task": cohort.task.slug,
            "shots": cohort.shots,
            "mean": mean,
            "std": std,
            "n": len(s1),
            "ci_low": None,
            "ci_high": None,
            "ci_task_low": None,
            "ci_task_high": None,
            "majority": None,
            "flags": [],
            "planned": None,
            "target_points": target_points,
            "cut_off": cut_off.get(cohort.pk, 0),
        }
        if len(s1) >= 2:
            test_set = t_interval(s1).clipped()
            cell["ci_low"], cell["ci_high"] = 100 * test_set.low, 100 * test_set.high
            if cell_scores.complete and len(cell_scores.example_ids) >= 2:
                task = two_level_interval(cell_scores.matrix(mrc_gold)).clipped()
                cell["ci_task_low"], cell["ci_task_high"] = 100 * task.low, 100 * task.high
            cell["flags"] = interval_flags_of(cell_scores, mrc_gold)
            # A handful of values cannot check the normal model the interval rests on: show them beside it.
            cell["model_based"] = len(s1) < MODEL_BASED_BELOW
            if cell["model_based"]:
                cell["values"] = sorted(100 * v for v in s1)
        cell.update(_plan(study, cohort, cell_scores, s1, target_points))
        if s1:
            majority = cell_scores.majority_s1[mrc_gold]
            cell["majority"] = 100 * corpus_s1(majority[np.isfinite(majority)])
        out.append(cell)
    return out
