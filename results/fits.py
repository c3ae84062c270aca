"""Fits that need the model set's libraries, computed by ``manage.py fit_results`` and stored
(``results.models.CohortFit``); the pages, exports and API only read them.

* **The joint ability scale** (``fit_ability``): an item-response model of ``mirt`` fitted by marginal maximum
  likelihood (EM) over the respondents x items matrix of one cohort's test items: each annotator in results and
  each completed model run of the same task and shots is a respondent. Where S1 can be partial (span sets),
  the partial credit model (0 wrong, 1 partly right, 2 fully right); where every S1 is 0 or 1 (labels), the 1PL
  (``RESPONSES``, stated beside the scale). Per respondent: ability (EAP) with a 95% interval (± 1.96 posterior
  SD), both summed on a 2,001-point grid (``posterior``); per item: its difficulty. A Rasch scale is set by its
  respondents: the pool it was fitted on is named beside every ability (``pool``), and no scale is fitted for a
  cell without both groups (2 annotators and 2 model runs at least, 6 respondents in all): one group alone has
  nothing to be compared with, and 3 annotators alone give a scale of nothing. Items everyone got fully right
  (or wrong) carry no information: they are left out and counted, as are difficulties at mirt's bound. py-irt,
  the IRT package of the NLP papers that put models and items on one scale, pins pandas < 3 and cannot be
  installed beside this project's pandas 3.
* **Aggregated answers** (``aggregate``): crowd-kit's Dawid-Skene over the cohort's answers, scored with
  S1 like the majority answer: for label tasks on the labels; for span-set tasks (NER) on tokens: every
  whitespace token an annotator saw gets a BIO label from each annotator of the item (unmarked: O, so an
  unmarked token is evidence against a span), crowd-kit aggregates the labels and they are decoded back to
  spans; beside it the whole answer as one category (``answers``). Not for MRC (SQuADv2, ReCoRD): an answer
  there is a span of the item's own text, and Dawid-Skene's per-annotator confusion matrix needs one label
  set shared by every item (``NOT_FITTED``). With fewer than 3 annotators better than chance the aggregate
  cannot be identified (which annotators to trust is then a guess), and the row says so instead of a number.

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
from tasks_data.text_spans import find_occurrences, tokenize

from .models import CohortFit
from .runs import run_item_scores
from .scores import CohortScores, study_scores

ABILITY_MODEL: Final = "1PL"
ABILITY_METHOD = "1PL IRT"
ABILITY_LIBRARY = "mirt"
AGGREGATE_LIBRARY = "crowd-kit"
DAWID_SKENE = "Dawid-Skene"
RESPONSES = {
    "1PL": "right (1) when the item's S1 is 1, else wrong (0): every S1 here is 0 or 1",
    "PCM": "partial credit: 0 when the item's S1 is 0, 1 when it is partly right (0 < S1 < 1), 2 when it is 1",
}
MIN_PER_GROUP = 2  # annotators, and model runs, a joint ability scale needs at least
MIN_RESPONDENTS = 6  # respondents in all
DIFFICULTY_BOUND = 6.0  # mirt's bound on a difficulty
POSTERIOR_GRID = 2001  # points of the grid on which abilities' posterior mean and SD are summed
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
    """(respondents x items S1, 0-1 / NaN for unanswered; the respondents) of one cohort: its annotators in results
    (ascending enrollment id), then the model runs (``results.runs.run_item_scores``)."""
    s1 = scores.matrix()
    human_s1 = scores.annotator_s1()
    rows = [np.where(np.isfinite(row), row, np.nan) for row in s1]
    respondents = [
        {"kind": "human", "id": e, "label": f"annotator {e}", "s1_percent": 100 * human_s1[e]}
        for e in scores.annotators
    ]
    for run in runs:
        rows.append(np.array([float(run["items"][x]) if x in run["items"] else np.nan for x in scores.clues_ids]))
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


def responses_of(s1: np.ndarray) -> tuple[np.ndarray, str]:
    """(responses, model) from a respondents x items S1 matrix: partial credit where any S1 is partial (0 wrong,
    1 partly right, 2 fully right: mirt's partial credit model, ``PCM``), else right (S1 = 1) or wrong (``1PL``)."""
    finite = np.isfinite(s1)
    partial = bool(((s1 > 0) & (s1 < 1) & finite).any())
    if partial:
        out = np.where(s1 >= 1, 2.0, np.where(s1 > 0, 1.0, 0.0))
        return np.where(finite, out, np.nan), "PCM"
    return np.where(finite, (s1 >= 1).astype(float), np.nan), ABILITY_MODEL


def posterior(responses: np.ndarray, steps: np.ndarray, *, grid: int = POSTERIOR_GRID) -> tuple[np.ndarray, ...]:
    """(EAP, posterior SD) per respondent under a standard normal prior, by summing over ``grid`` points on
    [-8, 8] (a 49-point grid snapped abilities to its nodes and under-stated the SD on 600-item tasks). ``steps``:
    items x categories-1 step difficulties (one column for the 1PL); responses 0..K, NaN unanswered."""
    theta = np.linspace(-8.0, 8.0, grid)
    log_like = np.zeros((responses.shape[0], grid))
    categories = steps.shape[1] + 1
    # Partial credit: P(k | theta) proportional to exp(sum_{j <= k} (theta - step_j)); k = 0 has the empty sum.
    cumulative = np.concatenate(
        [np.zeros((steps.shape[0], 1, grid)), np.cumsum(theta[None, None, :] - steps[:, :, None], axis=1)], axis=1
    )
    log_p = cumulative - np.logaddexp.reduce(cumulative, axis=1, keepdims=True)  # items x categories x grid
    for k in range(categories):
        hit = responses == k  # respondents x items
        log_like += hit.astype(float) @ log_p[:, k, :]
    log_post = log_like - theta[None, :] ** 2 / 2
    w = np.exp(log_post - log_post.max(axis=1, keepdims=True))
    w /= w.sum(axis=1, keepdims=True)
    mean = w @ theta
    sd = np.sqrt(np.maximum(w @ theta**2 - mean**2, 0.0))
    return mean, sd


def fit_ability(responses: np.ndarray, model: str = ABILITY_MODEL) -> dict:
    """mirt's fit (1PL, or the partial credit model ``PCM``) of a respondents x items matrix (0..K, NaN missing):
    ``theta``, ``theta_se`` per respondent (EAP and posterior SD on a 2,001-point grid, ``posterior``; mirt's own
    EAP on 401 points beside them, ``theta_mirt``), ``difficulty`` (the item's location: its mean step),
    ``difficulty_se`` per item, ``converged``."""
    import mirt  # the model set (requirements/baselines.txt): never imported by the web app

    if model == "PCM":
        fit = mirt.fit_mirt(responses, model="PCM", n_categories=3, verbose=False)
    else:
        fit = mirt.fit_mirt(responses, model="1PL", verbose=False)
    coef = fit.coef_with_se()
    difficulty_se: list[float | None]
    if model == "PCM":
        steps = coef[["steps_1", "steps_2"]].to_numpy(dtype=float)
        difficulty, difficulty_se = steps.mean(axis=1), [None] * len(steps)
    else:
        steps = coef[["difficulty"]].to_numpy(dtype=float)
        difficulty = steps[:, 0]
        difficulty_se = [None if not np.isfinite(v) else float(v) for v in coef["difficulty_se"].astype(float)]
    theta, sd = posterior(responses, steps)
    scored = mirt.fscores(fit, responses, method="EAP", n_quadpts=401)
    return {
        "theta": theta.tolist(),
        "theta_se": sd.tolist(),
        "theta_mirt": np.asarray(scored.theta, dtype=float).ravel().tolist(),
        "difficulty": [float(v) for v in difficulty],
        "difficulty_se": difficulty_se,
        "converged": bool(fit.converged),
    }


def pool_text(respondents: list[dict]) -> str:
    """ "3 annotators and 5 model runs (1 model row: ft bert)": who the scale was fitted on (it moves with them)."""
    humans = sum(1 for r in respondents if r["kind"] == "human")
    rows = sorted({r["row"] for r in respondents if r["kind"] == "model"})
    runs = sum(1 for r in respondents if r["kind"] == "model")
    text = f"{humans} annotator{'s' * (humans != 1)} and {runs} model run{'s' * (runs != 1)}"
    return text + (f" ({len(rows)} model row{'s' * (len(rows) != 1)}: {'; '.join(rows)})" if rows else "")


def ability_result(scores: CohortScores, runs: list[dict]) -> dict:
    """The stored shape of one cohort's joint ability scale, or, for a cell where the scale would mean nothing,
    ``{"fitted": False, "reason", "pool"}``: it needs both respondent groups (at least ``MIN_PER_GROUP``
    annotators and as many model runs: one group alone has no other to be compared with) and
    ``MIN_RESPONDENTS`` in all. Items every respondent got fully right (or wrong) carry no information on a
    Rasch scale: they are left out of the fit and counted (``items_all_right``, ``items_all_wrong``), and
    fitted difficulties at mirt's bound (±6) are counted (``items_at_bound``)."""
    s1, respondents = ability_matrix(scores, runs)
    keep = np.isfinite(s1).any(axis=1)
    s1 = s1[keep]
    respondents = [r for r, k in zip(respondents, keep, strict=True) if k]
    pool = pool_text(respondents)
    humans = sum(1 for r in respondents if r["kind"] == "human")
    models = len(respondents) - humans
    if humans < MIN_PER_GROUP or models < MIN_PER_GROUP or len(respondents) < MIN_RESPONDENTS:
        return {
            "fitted": False,
            "pool": pool,
            "reason": f"{pool}: a joint scale needs at least {MIN_PER_GROUP} annotators and {MIN_PER_GROUP} model "
            f"runs, {MIN_RESPONDENTS} respondents in all",
        }
    responses, model = responses_of(s1)
    top = 2.0 if model == "PCM" else 1.0
    answered = np.isfinite(responses).any(axis=0)
    all_right = answered & np.all((responses == top) | ~np.isfinite(responses), axis=0)
    all_wrong = answered & np.all((responses == 0) | ~np.isfinite(responses), axis=0)
    informative = answered & ~all_right & ~all_wrong
    ids = [x for x, a in zip(scores.clues_ids, informative, strict=True) if a]
    if len(ids) < 2:
        return {"fitted": False, "pool": pool, "reason": f"{pool}: fewer than 2 items on which the respondents differ"}
    responses = responses[:, informative]
    fit = fit_ability(responses, model)
    for r, theta, se in zip(respondents, fit["theta"], fit["theta_se"], strict=True):
        r.update(theta=theta, theta_se=se, low=theta - Z95 * se, high=theta + Z95 * se, pool=pool)
    share = np.nansum(responses == top, axis=0) / np.maximum(np.isfinite(responses).sum(axis=0), 1)
    at_bound = sum(1 for b in fit["difficulty"] if abs(b) >= DIFFICULTY_BOUND - 0.01)
    return {
        "fitted": True,
        "model": model,
        "response": RESPONSES[model],
        "pool": pool,
        "converged": fit["converged"],
        "respondents": respondents,
        "items": [
            {"clues_id": x, "difficulty": b, "difficulty_se": se, "share_right": float(p)}
            for x, b, se, p in zip(ids, fit["difficulty"], fit["difficulty_se"], share, strict=True)
        ],
        "items_all_right": int(all_right.sum()),
        "items_all_wrong": int(all_wrong.sum()),
        "items_at_bound": at_bound,
    }


def is_fitted(result: dict | None) -> bool:
    """A stored ability result with a scale (older rows, stored before the checks, have no ``fitted`` key)."""
    return result is not None and bool(result.get("fitted", True)) and "respondents" in result


# ---------------------------------------------------------------- aggregated answers (crowd-kit)

# How a reading names its rows: the method stored, and what the table calls it.
READING_METHODS = {
    "labels": DAWID_SKENE,
    "tokens": f"{DAWID_SKENE} on tokens",
    "answers": f"{DAWID_SKENE} on whole answers",
}
NOT_IDENTIFIABLE = "not identifiable"
MIN_INFORMATIVE = 3  # Dawid-Skene needs 3 annotators better than chance to tell whose answers to trust
OUTSIDE = "O"


def crowd_representation(kind: AnswerKind) -> str | None:
    """How a task's answers enter Dawid-Skene first: ``labels``, ``tokens`` (token-level BIO), or None where it
    does not fit (the kind says)."""
    return kind.crowd_aggregation


def crowd_readings(kind: AnswerKind) -> list[str]:
    """Every reading fitted for a kind: labels alone; for span sets, the tokens and, beside them, the whole
    answer as one category (``answers``); none for MRC."""
    first = crowd_representation(kind)
    if first is None:
        return []
    return [first] if first == "labels" else [first, "answers"]


def bio_labels(context: str, answer) -> list[str]:
    """The BIO label of every whitespace token of ``context`` (the words a worker marks) for an answer (a set of
    span strings): B on a span's first token, I on the next ones, O elsewhere. A span is marked wherever it stands
    on token boundaries (S1 reads an answer as a set of strings, not of places)."""
    tokens = tokenize(context)
    starts = {a: i for i, (a, _b) in enumerate(tokens)}
    ends = {b: i for i, (_a, b) in enumerate(tokens)}
    labels = [OUTSIDE] * len(tokens)
    for span in sorted(as_set(answer), key=len, reverse=True):  # a longer span wins a token it shares
        for start, end in find_occurrences(context, span):
            if start in starts and end in ends:
                first, last = starts[start], ends[end]
                if all(label == OUTSIDE for label in labels[first : last + 1]):
                    labels[first] = "B"
                    labels[first + 1 : last + 1] = ["I"] * (last - first)
    return labels


def decode_bio(context: str, labels) -> list[str]:
    """The span strings of a BIO sequence over ``context``'s whitespace tokens (an I after O starts a span)."""
    tokens = tokenize(context)
    spans, current = [], None
    for (start, end), label in zip(tokens, labels, strict=True):
        if label == "B" or (label == "I" and current is None):
            if current:
                spans.append(current)
            current = [start, end]
        elif label == "I" and current is not None:
            current[1] = end
        else:
            if current:
                spans.append(current)
            current = None
    if current:
        spans.append(current)
    return sorted({context[a:b] for a, b in spans})


def crowd_records(answers: dict, representation: str, contexts: dict[str, str] | None = None) -> list[tuple]:
    """The (worker, task, label) rows crowd-kit reads, for ``{annotator: {item: answer}}``. ``labels``: one row
    per answer; ``answers``: the whole answer as one category (its sorted strings); ``tokens``: one row per token
    of the item's context (``contexts``) per annotator who answered the item, unmarked tokens included as O, so
    that an annotator who did not mark a token is evidence against it."""
    records: list[tuple] = []
    for worker, per in answers.items():
        for item, answer in per.items():
            if representation == "labels":
                chosen = as_set(answer)
                records.append((str(worker), str(item), sorted(chosen)[0] if chosen else ""))
            elif representation == "answers":
                records.append((str(worker), str(item), "\x1f".join(sorted(as_set(answer)))))
            elif representation == "tokens":
                assert contexts is not None, "token labels need each item's context"
                for j, label in enumerate(bio_labels(contexts[str(item)], answer)):
                    records.append((str(worker), f"{item}\x1f{j}", label))
            else:
                raise ValueError(f"unknown reading {representation!r}")
    return records


def crowdkit_dawid_skene(records: list[tuple]):
    """crowd-kit's Dawid-Skene on (worker, task, label) rows: {task: label} (a pandas Series)."""
    import pandas as pd
    from crowdkit.aggregation import DawidSkene  # the model set: never imported by the web app

    frame = pd.DataFrame(records, columns=["worker", "task", "label"])
    with warnings.catch_warnings():  # the library's own pandas deprecation notices, dozens per fit
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", FutureWarning)
        return DawidSkene(n_iter=100).fit_predict(frame)


def dawid_skene(answers: dict, representation: str, contexts: dict[str, str] | None = None) -> dict[str, list[str]]:
    """{annotator: {item: answer}} -> {item: aggregated answer} by crowd-kit's Dawid-Skene, in one reading
    (``crowd_records``); token labels are decoded back to spans."""
    items = sorted({str(x) for per in answers.values() for x in per})
    records = crowd_records(answers, representation, contexts)
    if not records:
        return {}
    predicted = crowdkit_dawid_skene(records)
    if representation == "labels":
        return {item: [str(predicted[item])] if predicted[item] != "" else [] for item in items}
    if representation == "answers":
        return {item: [x for x in str(predicted[item]).split("\x1f") if x] for item in items}
    assert contexts is not None
    out = {}
    for item in items:
        n = len(tokenize(contexts[item]))
        out[item] = decode_bio(contexts[item], [predicted.get(f"{item}\x1f{j}", OUTSIDE) for j in range(n)])
    return out


def informative(scores: CohortScores) -> tuple[int, int]:
    """(annotators better than chance, annotators): better than chance by more than binomial noise over the items,
    as the at-chance flag reads it (``results.uncertainty``)."""
    s1 = list(scores.annotator_s1().values())
    chance = scores.chance_s1
    if chance is None or not scores.example_ids:
        return len(s1), len(s1)
    margin = 1.96 * np.sqrt(max(chance * (1 - chance), 0.0) / len(scores.example_ids))
    return sum(1 for v in s1 if v > chance + margin), len(s1)


def aggregate_result(cohort: Cohort, scores: CohortScores, representation: str | None = None) -> dict | None:
    """The stored shape of one cohort's Dawid-Skene answers in one reading (the kind's first by default), with
    their S1 (percent, both MRC readings), and whether the aggregate is identifiable: with fewer than 3
    annotators better than chance Dawid-Skene cannot tell whose answers to trust, and the row says so instead of
    a number."""
    kind = cohort.task.spec.answer_kind
    representation = representation or crowd_representation(kind)
    if representation is None or scores.n < 2:
        return None
    answers: dict[int, dict[str, list[str]]] = defaultdict(dict)
    for enrollment_id, clues_id, texts in Answer.objects.filter(
        in_results("enrollment__"), enrollment__cohort=cohort, step=Answer.Step.TEST
    ).values_list("enrollment_id", "example__clues_id", "texts"):
        answers[enrollment_id][str(clues_id)] = texts
    examples = Example.objects.filter(task=cohort.task, role=Example.Role.TEST, clues_id__in=scores.clues_ids)
    golds, contexts = {}, {}
    for clues_id, gold, context in examples.values_list("clues_id", "gold", "context"):
        golds[str(clues_id)], contexts[str(clues_id)] = gold, context
    aggregated = dawid_skene(answers, representation, contexts)
    s1 = {
        reading: 100
        * corpus_s1(
            item_s1(aggregated[x], golds[x], alternatives=kind.gold_is_alternatives, mrc_gold=reading)
            for x in scores.clues_ids
            if x in aggregated and x in golds
        )
        for reading in MRC_GOLD
    }
    better, n = informative(scores)
    identifiable = better >= MIN_INFORMATIVE
    return {
        "representation": representation,
        "answers": aggregated,
        "s1_percent": s1,
        "identifiable": identifiable,
        "reason": None
        if identifiable
        else f"{better} of {n} annotators better than chance: Dawid-Skene needs {MIN_INFORMATIVE} to tell whose "
        "answers to trust",
    }


# ---------------------------------------------------------------- fitting and storing a study's fits


def fit_study(study: Study, *, kinds=tuple(CohortFit.Kind)) -> list[CohortFit]:
    """Fit and store every cohort of ``study`` with annotators in results (one row per cohort and method,
    replaced when fitted again); returns the rows stored."""
    scores = study_scores(study)
    runs = runs_basis()
    stored = []
    for cohort in Cohort.objects.filter(pk__in=[c for c, s in scores.items() if s.n]).select_related("task"):
        cell = scores[cohort.pk]
        fits: list[tuple[str, str, str, dict | None]] = []
        if CohortFit.Kind.ABILITY in kinds:
            ability = ability_result(cell, run_item_scores(cell.task, cell.shots))
            fits.append((CohortFit.Kind.ABILITY, ABILITY_METHOD, library_version(ABILITY_LIBRARY), ability))
        if CohortFit.Kind.AGGREGATE in kinds:
            readings = crowd_readings(cohort.task.spec.answer_kind)
            # A fit of a reading no longer made (an older encoding) is not kept beside the current ones.
            CohortFit.objects.filter(cohort=cohort, kind=CohortFit.Kind.AGGREGATE).exclude(
                method__in=[READING_METHODS[r] for r in readings]
            ).delete()
            for reading in readings:
                result = aggregate_result(cohort, cell, reading)
                fits.append(
                    (CohortFit.Kind.AGGREGATE, READING_METHODS[reading], library_version(AGGREGATE_LIBRARY), result)
                )
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
    """The aggregated human rows' cells: ``{"task", "shots", "method", "s1", "n", "identifiable", "reason"}``
    (percent) per cohort and stored reading (only fits of the cohort's current results, in a reading made now:
    the former one yes/no per marked span, which could not say no, is left out)."""
    scores = study_scores(study)
    out = []
    for cohort_id, fits in stored_fits(study, CohortFit.Kind.AGGREGATE).items():
        cell = scores.get(cohort_id)
        for fit in fits:
            result = fit["result"]
            if cell is not None and fit["current"] and result.get("representation") in READING_METHODS:
                out.append(
                    {
                        "task": cell.task,
                        "shots": cell.shots,
                        "method": f"{fit['method']} ({fit['library'].split(' ')[0]})",
                        "s1": result["s1_percent"][mrc_gold],
                        "n": cell.n,
                        "identifiable": result.get("identifiable", True),
                        "reason": result.get("reason"),
                    }
                )
    return out


def not_fitted_note(tasks) -> str | None:
    """Why a task of the study has no Dawid-Skene row, when one has none by design."""
    if any((spec := find_task(t)) and crowd_representation(spec.answer_kind) is None for t in tasks):
        return NOT_FITTED
    return None
