"""Small assertions shared by the adapter tests."""

from __future__ import annotations

from tasks_data.registry import CLUES_TASKS, TaskSpec
from tasks_data.s1 import item_s1, percent
from tests.adapters import adapter_synthetic as synthetic


def corpus_s1(task: TaskSpec, predictions, examples) -> float:
    assert len(predictions) == len(examples)
    alternatives = task.answer_kind.gold_is_alternatives
    scores = [item_s1(p, ex.answers, alternatives=alternatives) for p, ex in zip(predictions, examples, strict=True)]
    return percent(sum(scores) / len(scores))


def task_and_data(kind: str):
    return CLUES_TASKS[synthetic.TASK_OF_KIND[kind]], synthetic.BY_KIND[kind]()


def assert_substrings(predictions, examples):
    for pred, ex in zip(predictions, examples, strict=True):
        for span in pred:
            assert span in ex.context, (span, ex.context)
            assert span.strip(), pred


def assert_well_formed(result, n: int):
    assert len(result.predictions) == n
    for pred in result.predictions:
        assert isinstance(pred, list) and all(isinstance(s, str) for s in pred)
    assert result.train_seconds >= 0 and result.predict_seconds >= 0
    assert result.peak_gpu_memory_bytes is None or result.peak_gpu_memory_bytes > 0
    if result.device == "cpu":
        assert result.peak_gpu_memory_bytes is None
