"""Reference predictors with no model: ``empty`` and ``majority``.

* ``empty`` predicts the empty set for every item. On the CLUES test sets it scores S1 51.3
  (CoNLL03), 62.8 (WikiANN) and 49.5 (SQuADv2): the share of items whose gold is empty, which
  is what the paper's footnote 6 uses to explain the BERT NER rows. On label tasks and ReCoRD
  it scores 0.
* ``majority`` predicts the training set's most frequent label (MNLI's "contraction" alias
  counted as "contradiction"); ties go to the label listed first in ``task.labels``. With no
  training examples it predicts ``task.labels[0]`` (and says so in the notes).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence

from tasks_data.registry import TaskSpec

from .base import (
    Adapter,
    AdapterConfig,
    AdapterExample,
    AdapterResult,
    Progress,
    gold_label,
)


class EmptyAdapter(Adapter):
    method = "empty"

    def applies_to(self, task: TaskSpec) -> str | None:
        return None

    def run(
        self,
        task: TaskSpec,
        train: Sequence[AdapterExample],
        test: Sequence[AdapterExample],
        config: AdapterConfig,
        progress: Progress | None = None,
    ) -> AdapterResult:
        start = time.perf_counter()
        predictions: list[list[str]] = [[] for _ in test]
        if progress:
            progress("predict", len(test), len(test))
        return AdapterResult(
            predictions=predictions,
            device="cpu",
            train_seconds=0.0,
            predict_seconds=time.perf_counter() - start,
            train_examples_per_second=None,
            peak_gpu_memory_bytes=None,
            notes={"seed": config.seed},
        )


def majority_label(task: TaskSpec, train: Sequence[AdapterExample]) -> tuple[str, dict[str, int]]:
    counts = Counter(gold_label(task, ex) for ex in train)
    if not counts:
        return task.labels[0], {}
    rank = {label: k for k, label in enumerate(task.labels)}
    best = max(counts, key=lambda label: (counts[label], -rank.get(label, len(rank))))
    return best, dict(counts)


class MajorityAdapter(Adapter):
    method = "majority"

    def applies_to(self, task: TaskSpec) -> str | None:
        if task.answer_kind.from_labels:
            return None
        return f"the majority baseline needs a label set; {task.name} answers are {task.answer_kind.title}, not labels"

    def run(
        self,
        task: TaskSpec,
        train: Sequence[AdapterExample],
        test: Sequence[AdapterExample],
        config: AdapterConfig,
        progress: Progress | None = None,
    ) -> AdapterResult:
        self.check_applies(task)
        start = time.perf_counter()
        label, counts = majority_label(task, train)
        predictions = [[label] for _ in test]
        if progress:
            progress("predict", len(test), len(test))
        notes = {"seed": config.seed, "label": label, "label_counts": counts, "tie_break": "order of task.labels"}
        if not train:
            notes["no_training_examples"] = True
        return AdapterResult(
            predictions=predictions,
            device="cpu",
            train_seconds=0.0,
            predict_seconds=time.perf_counter() - start,
            train_examples_per_second=None,
            peak_gpu_memory_bytes=None,
            notes=notes,
        )
