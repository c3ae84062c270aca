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

``strict=True`` is the official ``_s1_entry`` exactly: lists are taken literally, so no
stripping, and ``[""]`` is the one-element set {""} (not the empty set). The official
files agree with the default wherever their conventions are kept (NER "no entity" as
``[""]`` on both sides; see ``tasks_data.scoring.as_published``).

The MRC gold rule is a choice (``mrc_gold``). Machine reading comprehension (SQuADv2,
ReCoRD) gold is the published list of answers. For SQuADv2 items with several distinct
gold answers (55 of 200 test items), the platform scores, by default, the best single
alternative (``mrc_gold="best"``, the SQuAD convention: each alternative taken as a
one-element gold set, the item's score is the best of them; an empty list is the empty
gold set, an unanswerable question). Taking the published answer list as the gold *set*
(``mrc_gold="set"``, the literal reading of ``eval/S1.py``) gives different numbers: a
perfect one-span predictor gets 100.0 vs 88.8 on the SQuADv2 test set, and a study's
SQuADv2 cell 72.5 ± 3.5 vs 64.7 ± 2.6. The release does not say which the authors used.
Every place that produces a score offers both readings (``MRC_GOLD_NOTE`` says this in
exports). ReCoRD lists one distinct answer per test item, so there the two agree.

A corpus S1 is the mean of the instance scores; tables show it as a percentage with one
decimal (``percent``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

MRC_GOLD = ("best", "set")  # the default first
MRC_GOLD_NOTE = {
    "best": (
        "MRC gold rule: best single alternative (the SQuAD convention): an item with several distinct "
        "published answers scores the best of them, each taken as a one-element gold set. The literal "
        "reading of the official eval/S1.py (the published answer list as one gold set, mrc_gold=set) "
        "gives lower SQuADv2 numbers; the CLUES release does not say which the authors used."
    ),
    "set": (
        "MRC gold rule: the published answer list as one gold set (the literal reading of the official "
        "eval/S1.py). The platform's default is the best single alternative (the SQuAD convention, "
        "mrc_gold=best); the CLUES release does not say which the authors used."
    ),
}


def check_mrc_gold(mrc_gold: str) -> str:
    if mrc_gold not in MRC_GOLD:
        raise ValueError(f"mrc_gold must be one of {', '.join(MRC_GOLD)}, got {mrc_gold!r}")
    return mrc_gold


def as_set(spans: Iterable[str]) -> frozenset[str]:
    """The answer set a list of strings stands for (stripped, empty strings dropped)."""
    return frozenset(s for s in (str(x).strip() for x in spans) if s)


def _set_f1(p_set: frozenset | set, g_set: frozenset | set) -> float:
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


def instance_s1(prediction: Iterable[str], gold: Iterable[str], *, strict: bool = False) -> float:
    """Equation (1) for one instance: set F1 of the prediction against the gold set.

    ``strict``: the lists are taken literally, as the official ``_s1_entry`` does.
    """
    if strict:
        return _set_f1(set(prediction), set(gold))
    return _set_f1(as_set(prediction), as_set(gold))


def item_s1(
    prediction: Iterable[str], gold: Sequence[str], *, alternatives: bool, mrc_gold: str = "best", strict: bool = False
) -> float:
    """S1 of one item; ``alternatives`` says the gold list holds MRC answers (``mrc_gold`` reads them)."""
    if not alternatives or check_mrc_gold(mrc_gold) == "set":
        return instance_s1(prediction, gold, strict=strict)
    prediction = list(prediction)
    options = list(dict.fromkeys(gold)) if strict else sorted(as_set(gold))
    if not options:
        return instance_s1(prediction, (), strict=strict)
    return max(instance_s1(prediction, (option,), strict=strict) for option in options)


def corpus_s1(scores: Iterable[float]) -> float:
    """Mean of instance scores (0 to 1). An empty corpus has no score."""
    scores = list(scores)
    if not scores:
        raise ValueError("S1 of an empty set of instances is undefined")
    return sum(scores) / len(scores)


def eval_s1(
    predictions: Sequence[Iterable[str]],
    golds: Sequence[Sequence[str]],
    *,
    alternatives: bool = False,
    mrc_gold: str = "best",
    strict: bool = False,
) -> float:
    """Corpus S1 of parallel lists, like the official ``eval_S1(pred, ans)``."""
    if len(predictions) != len(golds):
        raise ValueError(f"{len(predictions)} predictions for {len(golds)} gold answers")
    return corpus_s1(
        item_s1(p, g, alternatives=alternatives, mrc_gold=mrc_gold, strict=strict)
        for p, g in zip(predictions, golds, strict=True)
    )


def percent(score: float) -> float:
    """A 0-1 score as the percentage tables show, one decimal."""
    return round(100.0 * score, 1)
