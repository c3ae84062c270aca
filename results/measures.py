"""Measures of agreement between annotators: pairwise S1, Fleiss' kappa and Krippendorff's alpha.

Krippendorff's alpha is 1 - D_o / D_e: the disagreement observed within items over the
disagreement expected between any two answers of the cohort (Krippendorff 2011, "Computing
Krippendorff's alpha-reliability"), items answered by fewer than two annotators left out. Its
distance between two answers:

* ``nominal`` (SST-2, MNLI: one label each): 0 when the labels are equal, else 1;
* ``jaccard`` (span tasks: CoNLL03, WikiANN, SQuADv2, ReCoRD), a set-based distance between two
  answer sets as S1 compares them (stripped, as sets: ``tasks_data.s1.as_set``):
  1 - |A & B| / |A | B|, with two empty answers ("none") at distance 0 and an empty answer at
  distance 1 from any other. On one-element sets it is the nominal distance.

Plain Python and numpy, no Django import.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from tasks_data.s1 import as_set, instance_s1


def pairwise_s1(a: Mapping[int, Sequence[str]], b: Mapping[int, Sequence[str]]) -> float | None:
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
    p_item = ((counts**2).sum(axis=1) - n) / (n * (n - 1))
    p_bar = p_item.mean()
    p_cat = counts.sum(axis=0) / (items * n)
    p_e = float((p_cat**2).sum())
    if p_e >= 1:
        return None
    return float((p_bar - p_e) / (1 - p_e))


def _jaccard(a: frozenset, b: frozenset) -> float:
    if not a and not b:
        return 0.0
    return 1.0 - len(a & b) / len(a | b)


def _expected_jaccard(counts: Counter) -> float:
    """sum over ordered pairs of answers (c, k) of n_c n_k (1 - J(c, k)), through the elements they share
    (only answer sets that share an element, or are both empty, have a similarity)."""
    n = sum(counts.values())
    by_element: dict[str, list[frozenset]] = defaultdict(list)
    for value in counts:
        for element in value:
            by_element[element].append(value)
    similar: float = counts.get(frozenset(), 0) ** 2
    seen: set[tuple[frozenset, frozenset]] = set()
    for values in by_element.values():
        for c in values:
            for k in values:
                if (c, k) not in seen:
                    seen.add((c, k))
                    similar += counts[c] * counts[k] * len(c & k) / len(c | k)
    return n * n - similar


# An answer is a label (nominal) or a list of strings (jaccard): Any, as the distance decides.
def krippendorff_alpha(units: Iterable[Sequence[Any]], *, distance: str = "nominal") -> float | None:
    """Krippendorff's alpha of items' answers (one sequence per item, one answer per annotator who answered).

    ``distance`` "nominal" (answers are labels) or "jaccard" (answers are sets of strings, see the module's
    note). None when undefined: fewer than two pairable answers, or every answer alike (D_e = 0).
    """
    if distance not in ("nominal", "jaccard"):
        raise ValueError(f"distance must be nominal or jaccard, got {distance!r}")
    if distance == "jaccard":
        units = [[as_set(v) for v in unit] for unit in units]
    pairable = [list(unit) for unit in units if len(unit) >= 2]
    counts = Counter(v for unit in pairable for v in unit)
    n = sum(counts.values())
    if n < 2:
        return None
    observed = 0.0
    for unit in pairable:
        m = len(unit)
        disagree: float
        if distance == "nominal":
            per = Counter(unit)
            disagree = m * m - sum(c * c for c in per.values())
        else:
            disagree = sum(_jaccard(a, b) for a in unit for b in unit)
        observed += disagree / (m - 1)
    expected = (n * n - sum(c * c for c in counts.values())) if distance == "nominal" else _expected_jaccard(counts)
    if expected <= 0:
        return None
    return 1.0 - (observed / n) / (expected / (n * (n - 1)))


def label_kappa(spec, by_annotator: dict[int, dict[int, list[str]]]) -> float | None:
    """Fleiss' kappa of a label task's annotators ({annotator: {item: [label]}}), over the items all answered."""
    shared = set.intersection(*(set(items) for items in by_annotator.values()))
    labels = {label: j for j, label in enumerate(spec.labels)}
    counts = np.zeros((len(shared), len(labels)))
    for row, item in enumerate(sorted(shared)):
        for items in by_annotator.values():
            counts[row, labels[items[item][0]]] += 1
    return fleiss_kappa(counts)
