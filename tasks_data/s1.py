"""The S1 metric (CLUES paper, section 3.3, equation 1; official ``eval/S1.py``).

This is the only implementation in the platform: human answers, model predictions and
``manage.py score`` all go through it. Plain Python, no Django import.

Per instance, S1 is the F1 of the predicted set of strings against the gold set:

* 1 when both sets are empty,
* 0 when exactly one of them is empty, or when they share no element,
* otherwise 2pr / (p + r), with p = |P & G| / |P| and r = |P & G| / |G|.

Strings match exactly after stripping surrounding whitespace, and nothing else is
normalised (no lower-casing, no punctuation or article removal). A string that is empty
after stripping is no answer: CLUES writes the empty set as ``[""]``, so ``[""]`` and
``[]`` are the same set on either side. Lists are taken as sets: order and repeats do
not matter.

Machine reading comprehension (SQuADv2, ReCoRD) gold is a list of *alternative*
answers, any one of which is right. There the instance score is the best S1 over the
alternatives, each taken as a one-element gold set; an empty list of alternatives is the
empty gold set (an unanswerable SQuADv2 question).

A corpus S1 is the mean of the instance scores; tables show it as a percentage with one
decimal (``percent``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def as_set(spans: Iterable[str]) -> frozenset[str]:
    """The answer set a list of strings stands for (stripped, empty strings dropped)."""
    return frozenset(s for s in (str(x).strip() for x in spans) if s)


def instance_s1(prediction: Iterable[str], gold: Iterable[str]) -> float:
    """Equation (1) for one instance: set F1 of the prediction against the gold set."""
    p_set, g_set = as_set(prediction), as_set(gold)
    if not p_set and not g_set:
        return 1.0
    if not p_set or not g_set:
        return 0.0
    common = len(p_set & g_set)
    if common == 0:
        return 0.0
    precision = common / len(p_set)
    recall = common / len(g_set)
    return 2 * precision * recall / (precision + recall)


def item_s1(prediction: Iterable[str], gold: Sequence[str], *, alternatives: bool) -> float:
    """S1 of one item; ``alternatives`` says the gold list holds MRC alternatives."""
    if not alternatives:
        return instance_s1(prediction, gold)
    prediction = list(prediction)
    options = as_set(gold)
    if not options:
        return instance_s1(prediction, ())
    return max(instance_s1(prediction, (option,)) for option in options)


def corpus_s1(scores: Iterable[float]) -> float:
    """Mean of instance scores (0 to 1). An empty corpus has no score."""
    scores = list(scores)
    if not scores:
        raise ValueError("S1 of an empty set of instances is undefined")
    return sum(scores) / len(scores)


def eval_s1(predictions: Sequence[Iterable[str]], golds: Sequence[Sequence[str]], *,
            alternatives: bool = False) -> float:
    """Corpus S1 of parallel lists, like the official ``eval_S1(pred, ans)``."""
    if len(predictions) != len(golds):
        raise ValueError(f"{len(predictions)} predictions for {len(golds)} gold answers")
    return corpus_s1(item_s1(p, g, alternatives=alternatives) for p, g in zip(predictions, golds, strict=True))


def percent(score: float) -> float:
    """A 0-1 score as the percentage tables show, one decimal."""
    return round(100.0 * score, 1)
