"""Scoring prediction sets against a task's test set with S1.

The one path from predictions to S1 for humans (annotation results), models (baseline
runs) and ``manage.py score``; the metric itself lives in ``tasks_data.s1``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from .models import Example, Task
from .s1 import corpus_s1, item_s1
from .selectors import test_examples


class PredictionFileError(ValueError):
    pass


def example_s1(example: Example, prediction: Iterable[str]) -> float:
    """S1 of one prediction set on one example (MRC examples score the best alternative)."""
    return item_s1(prediction, example.gold, alternatives=example.task.spec.answer_kind.gold_is_alternatives)


def item_scores(task: Task, examples: Sequence[Example], predictions: Sequence[Iterable[str]]) -> list[float]:
    alternatives = task.spec.answer_kind.gold_is_alternatives
    return [item_s1(p, e.gold, alternatives=alternatives) for e, p in zip(examples, predictions, strict=True)]


@dataclass
class ScoreResult:
    s1: float  # 0..1
    n: int


def parse_prediction_lines(lines: Iterable[str], known_ids: Iterable[str]) -> dict[str, list[str]]:
    """Read ``{"id": ..., "prediction": [spans]}`` lines; every test id exactly once."""
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


def score_prediction_lines(task: Task, lines: Iterable[str]) -> ScoreResult:
    examples = list(test_examples(task).select_related("task"))
    predictions = parse_prediction_lines(lines, (e.clues_id for e in examples))
    scores = item_scores(task, examples, [predictions[e.clues_id] for e in examples])
    return ScoreResult(s1=corpus_s1(scores), n=len(scores))


def score_mapping(task: Task, predictions: Mapping[str, Iterable[str]]) -> ScoreResult:
    """Score ``{clues_id: prediction}`` covering the whole test set."""
    lines = (json.dumps({"id": k, "prediction": list(v)}) for k, v in predictions.items())
    return score_prediction_lines(task, lines)
