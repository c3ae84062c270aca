"""Scoring prediction sets against a task's test set with S1.

The one path from predictions to S1 for humans (annotation results), models (baseline
runs) and ``manage.py score``; the metric itself lives in ``tasks_data.s1``.

``as_published`` spells an answer set as the CLUES files do (the answer kind knows how:
NER "no entity" is ``[""]``): exported prediction files use it, so that the official
``eval/S1.py`` with the gold read as published gives exactly the platform's number.
Every scoring function takes ``mrc_gold`` ("best" or "set", see ``tasks_data.s1``) and
``strict`` (the official function exactly: no stripping, the gold as published).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from .kinds import AnswerKind
from .models import Example, Task
from .s1 import check_mrc_gold, corpus_s1, item_s1
from .selectors import test_examples


class PredictionFileError(ValueError):
    pass


def as_published(kind: AnswerKind, texts: Iterable[str]) -> list[str]:
    """An answer set spelled as the CLUES files spell it: the NER empty set is ``[""]``.

    Labels are one-element lists; MRC answers list their texts, ``[]`` for no answer (an
    unanswerable SQuADv2 question's published answer list is empty).
    """
    return kind.as_published(texts)


def published_id(clues_id: str, is_number: bool) -> str | int:
    """A test item's id as its CLUES file writes it: a JSON number where the file has one (SST-2), else a string;
    what every prediction file exports, so that it joins the official files by id."""
    return int(clues_id) if is_number else clues_id


def published_gold(example: Example) -> list[str]:
    """The example's gold as the official files give it (MRC: the distinct answer texts)."""
    return as_published(example.task.spec.answer_kind, example.gold)


def example_s1(example: Example, prediction: Iterable[str], *, mrc_gold: str = "best", strict: bool = False) -> float:
    """S1 of one prediction set on one example (MRC gold read by ``mrc_gold``)."""
    gold = published_gold(example) if strict else example.gold
    return item_s1(
        prediction,
        gold,
        alternatives=example.task.spec.answer_kind.gold_is_alternatives,
        mrc_gold=mrc_gold,
        strict=strict,
    )


def item_scores(
    task: Task,
    examples: Sequence[Example],
    predictions: Sequence[Iterable[str]],
    *,
    mrc_gold: str = "best",
    strict: bool = False,
) -> list[float]:
    """Per-item S1 of parallel ``examples`` and ``predictions`` (each a list of strings)."""
    kind = task.spec.answer_kind
    check_mrc_gold(mrc_gold)
    return [
        item_s1(
            p,
            as_published(kind, e.gold) if strict else e.gold,
            alternatives=kind.gold_is_alternatives,
            mrc_gold=mrc_gold,
            strict=strict,
        )
        for e, p in zip(examples, predictions, strict=True)
    ]


@dataclass
class ScoreResult:
    s1: float  # 0..1
    n: int


def jsonl_lines(text: str) -> list[str]:
    """A JSONL text cut at real line breaks only (LF, with CRLF's CR dropped).

    ``str.splitlines`` would also cut at U+2028, U+0085 and the like, which JSON allows raw
    inside a string.
    """
    return [line[:-1] if line.endswith("\r") else line for line in text.split("\n")]


def parse_prediction_lines(lines: Iterable[str], known_ids: Iterable[str]) -> dict[str, list[str]]:
    """Read ``{"id": ..., "prediction": [spans]}`` lines; every test id exactly once.

    Both spellings of the NER empty set (``[]`` and the data's ``[""]``) are accepted.
    """
    known = list(known_ids)
    known_set = set(known)
    seen: dict[str, list[str]] = {}
    errors: list[str] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            errors.append(f"line {number}: not valid JSON ({exc.msg})")
            continue
        if not isinstance(row, dict) or "id" not in row or "prediction" not in row:
            errors.append(f'line {number}: expected {{"id": ..., "prediction": [...]}}')
            continue
        clues_id = str(row["id"])
        prediction = row["prediction"]
        if not isinstance(prediction, list) or not all(isinstance(p, str) for p in prediction):
            errors.append(f"line {number}: prediction must be a list of strings")
        elif clues_id not in known_set:
            errors.append(f"line {number}: unknown id {clues_id!r} (not in the test set)")
        elif clues_id in seen:
            errors.append(f"line {number}: duplicate id {clues_id!r}")
        else:
            seen[clues_id] = prediction
    missing = [i for i in known if i not in seen]
    if missing:
        shown = ", ".join(repr(m) for m in missing[:5]) + (" ..." if len(missing) > 5 else "")
        errors.append(f"{len(missing)} test id(s) have no prediction: {shown}")
    if errors:
        raise PredictionFileError("\n".join(errors))
    return seen


def score_prediction_lines(
    task: Task, lines: Iterable[str], *, mrc_gold: str = "best", strict: bool = False
) -> ScoreResult:
    check_mrc_gold(mrc_gold)
    examples = list(test_examples(task).select_related("task"))
    predictions = parse_prediction_lines(lines, (e.clues_id for e in examples))
    scores = item_scores(task, examples, [predictions[e.clues_id] for e in examples], mrc_gold=mrc_gold, strict=strict)
    return ScoreResult(s1=corpus_s1(scores), n=len(scores))


def score_mapping(
    task: Task, predictions: Mapping[str, Iterable[str]], *, mrc_gold: str = "best", strict: bool = False
) -> ScoreResult:
    """Score ``{clues_id: prediction}`` covering the whole test set."""
    lines = (json.dumps({"id": k, "prediction": list(v)}) for k, v in predictions.items())
    return score_prediction_lines(task, lines, mrc_gold=mrc_gold, strict=strict)
