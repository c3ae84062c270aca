"""Majority vote per cohort, beside the paper's mean ± std of individual annotators.

The CLUES paper reports the mean and std of the annotators' S1; it contrasts this with
Nangia & Bowman's majority vote. Here a cohort's majority answer is built item by item from
the answers of its annotators, then scored like one more annotator (``majority_s1``):

* label (SST-2, MNLI): the most frequent label;
* span sets (NER): the spans chosen by a strict majority of the annotators who answered the
  item (more than half: with 4 annotators a name needs 3 votes); possibly the empty set;
* MRC (SQuADv2, ReCoRD): the most frequent answer, where "no answer" is an answer too.

Ties (labels and MRC) are broken by a fixed order, so the result never depends on the order
in which annotators are given: the smallest answer in sort order wins, comparing answers as
sorted tuples of strings. So "no answer" (the empty tuple) wins a tie for MRC, and labels
tie-break alphabetically (``negative`` before ``positive``; ``contradiction`` before
``entailment`` before ``neutral``). Answers are compared as S1 compares them: stripped,
without empty strings, as sets (``tasks_data.s1.as_set``).

Plain Python, no Django import.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import TypeVar

from tasks_data.kinds import AnswerKind
from tasks_data.s1 import as_set, corpus_s1, item_s1


def _key(answer: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted(as_set(answer)))


def most_frequent(answers: Sequence[Iterable[str]]) -> list[str]:
    """The most frequent answer; ties go to the smallest answer in sort order (the empty one first)."""
    if not answers:
        raise ValueError("a majority of no answers is undefined")
    counts = Counter(_key(a) for a in answers)
    top = max(counts.values())
    return list(min(k for k, n in counts.items() if n == top))


def majority_spans(answers: Sequence[Iterable[str]]) -> list[str]:
    """The spans chosen by more than half of the annotators (sorted; [] when none is)."""
    if not answers:
        raise ValueError("a majority of no answers is undefined")
    votes = Counter(span for a in answers for span in as_set(a))
    return sorted(span for span, n in votes.items() if 2 * n > len(answers))


def majority_answer(answers: Sequence[Iterable[str]], kind: AnswerKind) -> list[str]:
    """The majority of one item's answers (one per annotator) for a task of answer kind ``kind``: a set of
    any number of spans is voted span by span, any other answer as a whole."""
    if kind.max_spans is None:
        return majority_spans(answers)
    return most_frequent(answers)


# Annotator and item keys: any hashable, kept as the caller's type (a Mapping is invariant in its key).
Annotator = TypeVar("Annotator", bound=Hashable)
Item = TypeVar("Item", bound=Hashable)


def majority_predictions(
    answers: Mapping[Annotator, Mapping[Item, Sequence[str]]], kind: AnswerKind
) -> dict[Item, list[str]]:
    """``{annotator: {item: answer}}`` -> ``{item: majority answer}`` over the annotators who answered it."""
    by_item: dict[Item, list[Sequence[str]]] = {}
    for per_item in answers.values():
        for item, answer in per_item.items():
            by_item.setdefault(item, []).append(answer)
    return {item: majority_answer(item_answers, kind) for item, item_answers in by_item.items()}


def majority_s1(
    answers: Mapping[Annotator, Mapping[Item, Sequence[str]]],
    golds: Mapping[Item, Sequence[str]],
    kind: AnswerKind,
    *,
    mrc_gold: str = "best",
) -> float:
    """S1 (0-1) of the cohort's majority answer over the items in ``golds`` (each must have answers).

    ``golds`` maps an item to its gold as stored (NER empty set ``[]``; MRC the alternatives,
    read by ``mrc_gold`` as everywhere else).
    """
    predictions = majority_predictions(answers, kind)
    missing = [item for item in golds if item not in predictions]
    if missing:
        raise ValueError(f"{len(missing)} item(s) have no answer in the cohort, e.g. {missing[0]!r}")
    return corpus_s1(
        item_s1(predictions[item], gold, alternatives=kind.gold_is_alternatives, mrc_gold=mrc_gold)
        for item, gold in golds.items()
    )
