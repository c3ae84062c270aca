"""Agreement between a cohort's completed annotators (mean pairwise S1, Fleiss' kappa) and learning curves."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from itertools import combinations

import numpy as np

from annotation.models import Answer, Study
from annotation.selectors import in_results, study_cohorts, study_enrollments
from tasks_data.registry import AnswerKind
from tasks_data.s1 import instance_s1


def pairwise_s1(a: dict[int, Sequence[str]], b: dict[int, Sequence[str]]) -> float | None:
    """S1 of annotator a's answer set against b's, per shared item, averaged; both directions.

    Each item scores a's answer taken as the prediction and b's as the gold set (plain set
    S1, no MRC alternatives: one annotator's answer is one answer), then the other way
    round; the result is the mean of both directions, so it is symmetric by construction.
    """
    items = sorted(a.keys() & b.keys())
    if not items:
        return None
    forward = sum(instance_s1(a[i], b[i]) for i in items) / len(items)
    backward = sum(instance_s1(b[i], a[i]) for i in items) / len(items)
    return (forward + backward) / 2


def fleiss_kappa(counts: np.ndarray) -> float | None:
    """Fleiss' kappa of an items x categories matrix of rating counts (same raters per item).

    None when it is undefined: fewer than 2 raters or items, or every rating in one
    category (chance agreement 1).
    """
    counts = np.asarray(counts, dtype=float)
    if counts.ndim != 2 or counts.shape[0] < 2:
        return None
    raters = counts.sum(axis=1)
    if raters.min() != raters.max() or raters[0] < 2:
        return None
    n, items = raters[0], counts.shape[0]
    p_item = ((counts ** 2).sum(axis=1) - n) / (n * (n - 1))
    p_bar = p_item.mean()
    p_cat = counts.sum(axis=0) / (items * n)
    p_e = float((p_cat ** 2).sum())
    if p_e >= 1:
        return None
    return float((p_bar - p_e) / (1 - p_e))


def _label_kappa(spec, by_annotator: dict[int, dict[int, list[str]]]) -> float | None:
    shared = set.intersection(*(set(items) for items in by_annotator.values()))
    labels = {label: j for j, label in enumerate(spec.labels)}
    counts = np.zeros((len(shared), len(labels)))
    for row, item in enumerate(sorted(shared)):
        for items in by_annotator.values():
            counts[row, labels[items[item][0]]] += 1
    return fleiss_kappa(counts)


def cohort_agreement(study: Study) -> list[dict]:
    """Agreement between the completed annotators of each cohort, in table order (2 queries).

    Keys: ``cohort`` (id), ``task`` (slug), ``shots``, ``n`` (completed annotators),
    ``mean_pairwise_s1`` (0-1, mean of ``pairwise_s1`` over every pair; None when n < 2)
    and ``fleiss_kappa`` (label tasks, SST-2 and MNLI, over the items every annotator
    answered; None for span tasks or when undefined).
    """
    answers: dict[int, dict[int, dict[int, list[str]]]] = defaultdict(lambda: defaultdict(dict))
    for cohort_id, enrollment_id, example_id, texts in (
            Answer.objects.filter(in_results("enrollment__"), enrollment__cohort__study=study,
                                  step=Answer.Step.TEST).order_by()
            .values_list("enrollment__cohort_id", "enrollment_id", "example_id", "texts")):
        answers[cohort_id][enrollment_id][example_id] = texts
    rows = []
    for cohort in study_cohorts(study):
        by_annotator = answers.get(cohort.pk, {})
        n = len(by_annotator)
        pairs = [pairwise_s1(by_annotator[x], by_annotator[y]) for x, y in combinations(sorted(by_annotator), 2)]
        pairs = [p for p in pairs if p is not None]
        spec = cohort.task.spec
        kappa = _label_kappa(spec, by_annotator) if spec.answer_kind is AnswerKind.LABEL and n >= 2 else None
        rows.append({"cohort": cohort.pk, "task": cohort.task.slug, "shots": cohort.shots, "n": n,
                     "mean_pairwise_s1": sum(pairs) / len(pairs) if pairs else None, "fleiss_kappa": kappa})
    return rows


def learning_curves(study: Study) -> list[dict]:
    """Each completed annotator's S1 (0-1) on each training item, in training order (2 queries).

    One row per training answer: ``enrollment_id``, ``worker``, ``task``, ``shots``,
    ``position`` (0-based), ``s1``, ``running_s1`` (mean S1 so far) and ``gold_unproducible``
    (the item's gold cannot be marked exactly, a quirk of the data: its point is marked, and it
    is left out of the training S1 that filters workers, though not out of ``running_s1``).
    """
    rows = []
    for r in study_enrollments(study, results_only=True):
        total = 0.0
        for position, (s1, quirk) in enumerate(zip(r["learning_curve"], r["learning_curve_unproducible"],
                                                   strict=True)):
            total += s1
            rows.append({"enrollment_id": r["enrollment"].pk, "worker": r["worker"], "task": r["task"],
                         "shots": r["shots"], "position": position, "s1": s1, "running_s1": total / (position + 1),
                         "gold_unproducible": quirk})
    return rows
