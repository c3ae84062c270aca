"""Items: where humans and models differ, test item by test item (the export kind ``items`` and its page).

For each cohort (task, shots) and each of its test items (CLUES id):

* ``human_share_correct``: the share (0-1) of the cohort's annotators whose answer is fully right
  (item S1 = 1);
* ``human_s1_percent``: the annotators' item S1, averaged; ``majority_s1_percent``: the item S1 of the
  cohort's majority answer (``results.majority``);
* ``s1_percent <method> <model>``: each model row's item S1 (averaged over its splits), for the model
  rows of the same task and shots;
* flags, where an item is *solved* when its S1 is at least ``SOLVED_PERCENT`` (for labels: right):
  ``humans_solve_models_miss`` (the majority answer solves it, every model row misses it) and
  ``models_solve_humans_miss`` (the reverse); empty without model rows.

Per cohort and model row, ``correlations`` gives Spearman's correlation between the humans' and the
model's item difficulty (1 - item S1) over the items, with a 95% interval (Fisher's z with the
Bonett-Wright standard error, sqrt((1 + r^2 / 2) / (n - 3))). S1 read with ``mrc_gold`` as everywhere.
"""

from __future__ import annotations

import math

import numpy as np

from annotation.models import Answer, Study
from annotation.selectors import in_results, study_cohorts
from baselines.selectors import completed_runs, row_identity
from tasks_data.models import Example
from tasks_data.s1 import check_mrc_gold, item_s1

from .cache import VERSION, cached_many, keep_many
from .fits import CohortFit, is_fitted, stored_fits
from .runs import labels as row_labels
from .runs import model_item_means, runs_fingerprint
from .scores import study_scores

SOLVED_PERCENT = 50.0
BASE_COLUMNS = ("task", "shots", "clues_id", "human_share_correct", "human_s1_percent", "majority_s1_percent")
ABILITY_COLUMNS = ("irt_difficulty",)
FLAG_COLUMNS = ("humans_solve_models_miss", "models_solve_humans_miss")
MODEL_PREFIX = "s1_percent "
DEFINITIONS = {
    "human_share_correct": "share (0-1) of the cohort's annotators whose answer is fully right (item S1 = 1)",
    "irt_difficulty": "the item's difficulty on the joint ability scale of the cohort's annotators and model runs "
    "(item response model, stored by manage.py fit_results; empty when not fitted, fitted on older results, or "
    "for an item every respondent got fully right or wrong: such an item carries no information on the scale)",
    "human_s1_percent": "the annotators' item S1, averaged (percent)",
    "majority_s1_percent": "item S1 of the cohort's majority answer (percent)",
    MODEL_PREFIX + "<method> <model>": "the model row's item S1, averaged over its splits (percent)",
    "humans_solve_models_miss": f"the majority answer solves the item (S1 >= {SOLVED_PERCENT:g}%) and every "
    "model row misses it; empty without model rows",
    "models_solve_humans_miss": "every model row solves the item and the majority answer misses it",
    "correlations": "Spearman's correlation of human and model item difficulty (1 - item S1) per cohort and "
    "model row, with its 95% interval (Fisher z, Bonett-Wright standard error)",
}


RANK_DECIMALS = 9  # item means equal to this many decimals are equal: ranked as ties


def difficulty(item_s1: np.ndarray) -> np.ndarray:
    """1 - item S1, rounded so that means equal but for floating-point rounding (2/3 summed in another order)
    rank as the ties they are (S1 of a few annotators or splits has far fewer than 9 significant decimals)."""
    return np.round(1 - np.asarray(item_s1, dtype=float), RANK_DECIMALS)


def _correlation(human: np.ndarray, model: np.ndarray, confidence: float = 0.95) -> dict:
    """Spearman's rho of two item-difficulty vectors with its Fisher-z interval; None where undefined."""
    from scipy import stats

    out: dict[str, float | None] = {"items": int(len(human)), "spearman": None, "ci_low": None, "ci_high": None}
    human, model = difficulty(human), difficulty(model)
    if len(human) < 4 or np.ptp(human) == 0 or np.ptp(model) == 0:
        return out
    rho = float(stats.spearmanr(human, model).statistic)
    out["spearman"] = rho
    if abs(rho) < 1:
        se = math.sqrt((1 + rho**2 / 2) / (len(human) - 3))
        z, q = math.atanh(rho), float(stats.norm.ppf(0.5 + confidence / 2))
        out["ci_low"], out["ci_high"] = math.tanh(z - q * se), math.tanh(z + q * se)
    else:
        out["ci_low"] = out["ci_high"] = rho
    return out


def _cohort_items(cell, rows_of: dict[str, dict[str, float]], mrc_gold: str) -> tuple[list[dict], list[dict]]:
    """(rows, correlations) of one cohort's items against the model rows ``rows_of`` ({label: {item: S1}})."""
    m = cell.matrix(mrc_gold)
    answered = np.isfinite(m).sum(axis=0)
    share = (m == 1.0).sum(axis=0) / np.maximum(answered, 1)
    human = m.sum(axis=0, where=np.isfinite(m)) / np.maximum(answered, 1)
    majority = 100 * cell.majority_s1[mrc_gold]
    correlations = []
    for label, items in rows_of.items():
        model = np.array([items.get(x, np.nan) for x in cell.clues_ids])
        both = np.isfinite(model) & np.isfinite(human)
        correlations.append(
            {"task": cell.task, "shots": cell.shots, "model_row": label, **_correlation(human[both], model[both])}
        )
    rows = []
    for i, clues_id in enumerate(cell.clues_ids):
        model_s1 = {label: 100 * items[clues_id] for label, items in rows_of.items() if clues_id in items}
        row = {
            "task": cell.task,
            "shots": cell.shots,
            "clues_id": clues_id,
            "human_share_correct": float(share[i]),
            "human_s1_percent": 100 * float(human[i]),
            "majority_s1_percent": float(majority[i]),
            **{MODEL_PREFIX + label: v for label, v in model_s1.items()},
            "humans_solve_models_miss": None,
            "models_solve_humans_miss": None,
        }
        if model_s1:
            humans_solve = majority[i] >= SOLVED_PERCENT
            row["humans_solve_models_miss"] = bool(humans_solve and max(model_s1.values()) < SOLVED_PERCENT)
            row["models_solve_humans_miss"] = bool(not humans_solve and min(model_s1.values()) >= SOLVED_PERCENT)
        rows.append(row)
    return rows, correlations


def item_rows(
    study: Study, *, mrc_gold: str = "best", cohort_id: int | None = None
) -> tuple[list[dict], tuple[str, ...], list[dict]]:
    """(rows, columns, correlations) of every cohort with annotators in results (or of one), in table order,
    items in test-file order. Each cohort's are kept until its results or the completed runs change."""
    check_mrc_gold(mrc_gold)
    scores = study_scores(study)
    runs = runs_fingerprint()
    cells = [
        scores[c.pk]
        for c in study_cohorts(study)
        if c.pk in scores and scores[c.pk].n and (cohort_id is None or c.pk == cohort_id)
    ]
    keys = {
        cell.cohort_id: f"results:items:v{VERSION}:{study.pk}:{mrc_gold}:{cell.cohort_id}:{cell.fingerprint}:{runs}"
        for cell in cells
    }
    found = cached_many(list(keys.values()))
    if len(found) < len(keys):
        models = model_item_means(mrc_gold)
        names = row_labels()
        for cell in cells:
            if keys[cell.cohort_id] not in found:
                rows_of = {
                    names[(method, model, backend, server)]: items
                    for (task, method, model, backend, server, shots), items in models.items()
                    if task == cell.task and shots == cell.shots
                }
                found[keys[cell.cohort_id]] = _cohort_items(cell, rows_of, mrc_gold)
                keep_many({keys[cell.cohort_id]: found[keys[cell.cohort_id]]})
    difficulty = _difficulties(study, [cell.cohort_id for cell in cells])
    rows, correlations, labels = [], [], []
    for cell in cells:
        cell_rows, cell_correlations = found[keys[cell.cohort_id]]
        of_cell = difficulty.get(cell.cohort_id, {})
        rows += [{**r, "irt_difficulty": of_cell.get(r["clues_id"])} for r in cell_rows]
        correlations += cell_correlations
        labels += [c["model_row"] for c in cell_correlations if c["model_row"] not in labels]
    columns = (*BASE_COLUMNS, *(MODEL_PREFIX + label for label in labels), *FLAG_COLUMNS, *ABILITY_COLUMNS)
    return rows, columns, correlations


def _difficulties(study: Study, cohorts: list[int]) -> dict[int, dict[str, float]]:
    """{cohort id: {CLUES id: difficulty}} of ``cohorts`` from their current stored ability fits (1-2 queries)."""
    return {
        cohort_id: {i["clues_id"]: i["difficulty"] for i in fit["result"]["items"]}
        for cohort_id, found in stored_fits(study, CohortFit.Kind.ABILITY, cohorts=cohorts).items()
        for fit in found
        if fit["current"] and is_fitted(fit["result"])
    }


def item_detail(study: Study, cohort_id: int, clues_id: str, *, mrc_gold: str = "best") -> dict | None:
    """One test item of one of the study's cohorts: its text, gold, every annotator's answer (those in
    results) and every model row's prediction per split; None when the study has no such cohort or item."""
    check_mrc_gold(mrc_gold)
    cohort = next((c for c in study_cohorts(study) if c.pk == cohort_id), None)
    if cohort is None:
        return None
    example = Example.objects.filter(task=cohort.task, role=Example.Role.TEST, clues_id=clues_id).first()
    if example is None:
        return None
    kind = cohort.task.spec.answer_kind
    answers = [
        {
            "worker": worker,
            "enrollment_id": enrollment_id,
            "answer": texts,
            "s1_percent": 100
            * (
                s1
                if mrc_gold == "best" or not kind.gold_is_alternatives
                else item_s1(texts, example.gold, alternatives=True, mrc_gold=mrc_gold)
            ),
        }
        for enrollment_id, worker, texts, s1 in Answer.objects.filter(
            in_results("enrollment__"), enrollment__cohort=cohort, example=example, step=Answer.Step.TEST
        )
        .order_by("enrollment__enrolled_at", "enrollment_id")
        .values_list("enrollment_id", "enrollment__worker__external_id", "texts", "s1")
    ]
    predictions = []
    names = row_labels()
    for run in completed_runs().filter(task=cohort.task, shots=cohort.shots).order_by("method", "model", "split"):
        found = next((p for p in run.predictions or () if str(p.get("id")) == str(clues_id)), None)
        if found is not None:
            predictions.append(
                {
                    "model_row": names[row_identity(run)],
                    "split": run.split,
                    "prediction": found["prediction"],
                    "s1_percent": 100
                    * item_s1(
                        found["prediction"], example.gold, alternatives=kind.gold_is_alternatives, mrc_gold=mrc_gold
                    ),
                }
            )
    return {"cohort": cohort, "example": example, "kind": kind, "answers": answers, "predictions": predictions}
