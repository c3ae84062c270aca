"""Fits that need the model set's libraries, computed by ``manage.py fit_results`` and stored
(``results.models.CohortFit``); the pages, exports and API only read them.

* **The joint ability scale** (``fit_ability``): an item-response model, the 1PL (Rasch) model of
  ``mirt`` fitted by marginal maximum likelihood (EM), over the respondents x items matrix of one cohort's
  test items: each annotator in results and each completed model run of the same task and shots is a
  respondent, its response to an item 1 when the item's S1 is 1 (fully right, as ``human_share_correct``
  counts it), else 0 (partial S1 on span tasks counts as wrong: the 1PL takes binary responses). Per
  respondent: ability (EAP) with a 95% interval (± 1.96 posterior SD); per item: difficulty with its
  standard error (items everyone got right, or wrong, sit at the bound, ±6). Humans and models are on one
  axis because they answered the same items. py-irt, the IRT package of the NLP papers that put models and
  items on one scale, pins pandas < 3 and cannot be installed beside this project's pandas 3.
* **Aggregated answers** (``aggregate``): crowd-kit's Dawid-Skene over the cohort's answers, scored with
  S1 like the majority answer: for label tasks on the labels; for span-set tasks (NER) on one yes/no
  decision per span an annotator marked ("is this span in the answer?"); not for MRC (SQuADv2, ReCoRD):
  an answer there is a span of the item's own text, and Dawid-Skene's per-annotator confusion matrix needs
  one label set shared by every item (``NOT_FITTED``).

A stored fit names what it was fitted on (``basis``: the cohort's results fingerprint, and the runs of
its task and shots); a fit of older results is shown as out of date, never as current.
"""

from __future__ import annotations

import hashlib
import warnings
from collections import defaultdict
from importlib import metadata
from typing import Final

import numpy as np

from annotation.models import Answer, Cohort, Study
from annotation.selectors import in_results
from baselines.selectors import completed_runs
from tasks_data.models import Example
from tasks_data.registry import AnswerKind, find_task
from tasks_data.s1 import MRC_GOLD, as_set, corpus_s1, item_s1

from .models import CohortFit
from .runs import run_item_scores
from .scores import CohortScores, study_scores

ABILITY_MODEL: Final = "1PL"
ABILITY_METHOD = "1PL IRT"
ABILITY_LIBRARY = "mirt"
AGGREGATE_LIBRARY = "crowd-kit"
DAWID_SKENE = "Dawid-Skene"
RESPONSE = "1 when the item's S1 is 1 (fully right), else 0"
Z95 = 1.959963984540054
NOT_FITTED = (
    "Dawid-Skene is not fitted for machine reading comprehension (SQuADv2, ReCoRD): an answer is a span of the "
    "item's own text, and its per-annotator confusion matrix needs one label set shared by every item."
)


def library_version(name: str) -> str:
    try:
        return f"{name} {metadata.version(name)}"
    except metadata.PackageNotFoundError:
        return name


# ---------------------------------------------------------------- what was fitted on


def runs_basis() -> dict[tuple[str, int], str]:
    """{(task, shots): fingerprint of its completed runs} (1 query)."""
    per_cell: dict[tuple[str, int], list] = defaultdict(list)
    for pk, task, shots, finished, s1 in (
        completed_runs().order_by("pk").values_list("pk", "task__slug", "shots", "finished_at", "s1")
    ):
        per_cell[(task, shots)].append((pk, finished, s1))
    return {cell: hashlib.sha1(repr(rows).encode()).hexdigest() for cell, rows in per_cell.items()}


def basis(kind: str, scores: CohortScores, runs: dict[tuple[str, int], str]) -> str:
    parts = (scores.fingerprint, runs.get((scores.task, scores.shots), "") if kind == CohortFit.Kind.ABILITY else "")
    return hashlib.sha1(repr(parts).encode()).hexdigest()


# ---------------------------------------------------------------- the joint ability scale


def ability_matrix(scores: CohortScores, runs: list[dict]) -> tuple[np.ndarray, list[dict]]:
    """(respondents x items responses, 1 / 0 / NaN for unanswered; the respondents) of one cohort: its
    annotators in results (ascending enrollment id), then the model runs (``results.runs.run_item_scores``)."""
    s1 = scores.matrix()
    human_s1 = scores.annotator_s1()
    rows = [np.where(np.isfinite(row), (row == 1.0).astype(float), np.nan) for row in s1]
    respondents = [
        {"kind": "human", "id": e, "label": f"annotator {e}", "s1_percent": 100 * human_s1[e]}
        for e in scores.annotators
    ]
    for run in runs:
        rows.append(
            np.array([float(run["items"][x] == 1.0) if x in run["items"] else np.nan for x in scores.clues_ids])
        )
        respondents.append(
            {
                "kind": "model",
                "id": run["run"],
                "label": f"{run['label']} split {run['split']}",
                "row": run["label"],
                "s1_percent": None if run["s1"] is None else 100 * run["s1"],
            }
        )
    return np.array(rows, dtype=float).reshape(len(rows), len(scores.clues_ids)), respondents


def fit_ability(responses: np.ndarray) -> dict:
    """mirt's 1PL fit of a respondents x items matrix (1/0, NaN missing): ``theta``, ``theta_se`` per
    respondent (EAP, posterior SD), ``difficulty``, ``difficulty_se`` per item, ``converged``."""
    import mirt  # the model set (requirements/baselines.txt): never imported by the web app

    fit = mirt.fit_mirt(responses, model=ABILITY_MODEL, verbose=False)
    scored = mirt.fscores(fit, responses, method="EAP")
    coef = fit.coef_with_se()
    return {
        "theta": np.asarray(scored.theta, dtype=float).ravel().tolist(),
        "theta_se": np.asarray(scored.standard_error, dtype=float).ravel().tolist(),
        "difficulty": coef["difficulty"].astype(float).tolist(),
        "difficulty_se": [None if not np.isfinite(v) else float(v) for v in coef["difficulty_se"].astype(float)],
        "converged": bool(fit.converged),
    }


def ability_result(scores: CohortScores, runs: list[dict]) -> dict | None:
    """The stored shape of one cohort's joint ability scale; None with fewer than 2 respondents or 2 items
    that any respondent answered."""
    responses, respondents = ability_matrix(scores, runs)
    answered = np.isfinite(responses).any(axis=0)
    keep = np.isfinite(responses).any(axis=1)
    if keep.sum() < 2 or answered.sum() < 2:
        return None
    responses = responses[keep][:, answered]
    respondents = [r for r, k in zip(respondents, keep, strict=True) if k]
    fit = fit_ability(responses)
    for r, theta, se in zip(respondents, fit["theta"], fit["theta_se"], strict=True):
        r.update(theta=theta, theta_se=se, low=theta - Z95 * se, high=theta + Z95 * se)
    ids = [x for x, a in zip(scores.clues_ids, answered, strict=True) if a]
    right = np.nansum(responses, axis=0) / np.maximum(np.isfinite(responses).sum(axis=0), 1)
    return {
        "model": ABILITY_MODEL,
        "response": RESPONSE,
        "converged": fit["converged"],
        "respondents": respondents,
        "items": [
            {"clues_id": x, "difficulty": b, "difficulty_se": se, "share_right": float(p)}
            for x, b, se, p in zip(ids, fit["difficulty"], fit["difficulty_se"], right, strict=True)
        ],
    }


# ---------------------------------------------------------------- aggregated answers (crowd-kit)


def crowd_representation(kind: AnswerKind) -> str | None:
    """How a task's answers enter Dawid-Skene: ``labels``, ``span decisions`` (one yes/no per marked span), or
    None where it does not fit (the kind says)."""
    return kind.crowd_aggregation


def dawid_skene(answers: dict, representation: str) -> dict[str, list[str]]:
    """{annotator: {item: answer}} -> {item: aggregated answer} by crowd-kit's Dawid-Skene."""
    import pandas as pd
    from crowdkit.aggregation import DawidSkene  # the model set: never imported by the web app

    records: list[tuple[str, str, str | int]] = []  # (worker, task, label), or a 0/1 decision per span
    items = sorted({str(x) for per in answers.values() for x in per})
    if representation == "labels":
        for worker, per in answers.items():
            for item, answer in per.items():
                records.append((str(worker), str(item), sorted(as_set(answer))[0] if as_set(answer) else ""))
    else:
        spans: dict[str, set[str]] = defaultdict(set)
        for per in answers.values():
            for item, answer in per.items():
                spans[str(item)] |= as_set(answer)
        for worker, per in answers.items():
            for item, answer in per.items():
                chosen = as_set(answer)
                for span in sorted(spans[str(item)]):
                    records.append((str(worker), f"{item}\x1f{span}", int(span in chosen)))
    if not records:
        return {}
    frame = pd.DataFrame(records, columns=["worker", "task", "label"])
    with warnings.catch_warnings():  # the library's own pandas deprecation notices, dozens per fit
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", FutureWarning)
        predicted = DawidSkene(n_iter=100).fit_predict(frame)
    if representation == "labels":
        return {item: [str(predicted[item])] if predicted[item] != "" else [] for item in items}
    out: dict[str, list[str]] = {item: [] for item in items}
    for task, label in predicted.items():
        item, span = str(task).split("\x1f", 1)
        if int(label) == 1:
            out[item].append(span)
    return {item: sorted(v) for item, v in out.items()}


def aggregate_result(cohort: Cohort, scores: CohortScores) -> dict | None:
    """The stored shape of one cohort's Dawid-Skene answers with their S1 (percent, both MRC readings)."""
    kind = cohort.task.spec.answer_kind
    representation = crowd_representation(kind)
    if representation is None or scores.n < 2:
        return None
    answers: dict[int, dict[str, list[str]]] = defaultdict(dict)
    for enrollment_id, clues_id, texts in Answer.objects.filter(
        in_results("enrollment__"), enrollment__cohort=cohort, step=Answer.Step.TEST
    ).values_list("enrollment_id", "example__clues_id", "texts"):
        answers[enrollment_id][str(clues_id)] = texts
    aggregated = dawid_skene(answers, representation)
    golds = dict(
        Example.objects.filter(task=cohort.task, role=Example.Role.TEST, clues_id__in=list(aggregated)).values_list(
            "clues_id", "gold"
        )
    )
    s1 = {
        reading: 100
        * corpus_s1(
            item_s1(aggregated[x], golds[x], alternatives=kind.gold_is_alternatives, mrc_gold=reading)
            for x in scores.clues_ids
            if x in aggregated and x in golds
        )
        for reading in MRC_GOLD
    }
    return {"representation": representation, "answers": aggregated, "s1_percent": s1}


# ---------------------------------------------------------------- fitting and storing a study's fits


def fit_study(study: Study, *, kinds=tuple(CohortFit.Kind)) -> list[CohortFit]:
    """Fit and store every cohort of ``study`` with annotators in results (one row per cohort and method,
    replaced when fitted again); returns the rows stored."""
    scores = study_scores(study)
    runs = runs_basis()
    stored = []
    for cohort in Cohort.objects.filter(pk__in=[c for c, s in scores.items() if s.n]).select_related("task"):
        cell = scores[cohort.pk]
        fits = []
        if CohortFit.Kind.ABILITY in kinds:
            result = ability_result(cell, run_item_scores(cell.task, cell.shots))
            fits.append((CohortFit.Kind.ABILITY, ABILITY_METHOD, library_version(ABILITY_LIBRARY), result))
        if CohortFit.Kind.AGGREGATE in kinds:
            result = aggregate_result(cohort, cell)
            fits.append((CohortFit.Kind.AGGREGATE, DAWID_SKENE, library_version(AGGREGATE_LIBRARY), result))
        for kind, method, library, result in fits:
            if result is None:
                CohortFit.objects.filter(cohort=cohort, kind=kind, method=method).delete()
                continue
            row, _ = CohortFit.objects.update_or_create(
                cohort=cohort,
                kind=kind,
                method=method,
                defaults={"library": library, "basis": basis(kind, cell, runs), "result": result},
            )
            stored.append(row)
    return stored


# ---------------------------------------------------------------- reading the stored fits


def stored_fits(study: Study, kind: str, *, cohorts=None) -> dict[int, list[dict]]:
    """{cohort id: [{"method", "library", "fitted_at", "current", "result"}]} of the study's stored fits of
    ``kind`` (of ``cohorts``, ids, when given); ``current`` is False when the cohort's results (or, for
    abilities, its runs) changed since."""
    scores = study_scores(study)
    found = CohortFit.objects.filter(cohort__study=study, kind=kind)
    if cohorts is not None:
        found = found.filter(cohort_id__in=list(cohorts))
    rows = list(
        found.order_by("cohort_id", "method").values_list(
            "cohort_id", "method", "library", "basis", "fitted_at", "result"
        )
    )
    runs = runs_basis() if rows and kind == CohortFit.Kind.ABILITY else {}
    out: dict[int, list[dict]] = defaultdict(list)
    for cohort_id, method, library, fitted_on, fitted_at, result in rows:
        cell = scores.get(cohort_id)
        out[cohort_id].append(
            {
                "method": method,
                "library": library,
                "fitted_at": fitted_at,
                "current": cell is not None and fitted_on == basis(kind, cell, runs),
                "result": result,
            }
        )
    return dict(out)


def fits_version(study: Study) -> str:
    """What the study's stored fits are (1 query): part of the key of every page that shows them."""
    rows = CohortFit.objects.filter(cohort__study=study).order_by("pk").values_list("pk", "basis", "fitted_at")
    return hashlib.sha1(repr(list(rows)).encode()).hexdigest()


def aggregate_cells(study: Study, *, mrc_gold: str = "best") -> list[dict]:
    """The aggregated human rows' cells: ``{"task", "shots", "method", "s1", "n", "current"}`` (percent) per
    cohort and stored method (only fits of the cohort's current results)."""
    scores = study_scores(study)
    out = []
    for cohort_id, fits in stored_fits(study, CohortFit.Kind.AGGREGATE).items():
        cell = scores.get(cohort_id)
        for fit in fits:
            if cell is not None and fit["current"]:
                out.append(
                    {
                        "task": cell.task,
                        "shots": cell.shots,
                        "method": f"{fit['method']} ({fit['library'].split(' ')[0]})",
                        "s1": fit["result"]["s1_percent"][mrc_gold],
                        "n": cell.n,
                    }
                )
    return out


def not_fitted_note(tasks) -> str | None:
    """Why a task of the study has no Dawid-Skene row, when one has none by design."""
    if any((spec := find_task(t)) and crowd_representation(spec.answer_kind) is None for t in tasks):
        return NOT_FITTED
    return None
