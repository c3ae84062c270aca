"""The ``empty`` baseline on the real CLUES test files (shared/clues/README.md facts)."""

from __future__ import annotations

import pytest

from fewshot_models import METHODS, AdapterConfig
from fewshot_models.base import candidate_texts
from fewshot_models.clues_io import load_split
from tasks_data.registry import CLUES_TASKS
from tests.adapters.adapter_helpers import corpus_s1

pytestmark = pytest.mark.official_data


@pytest.mark.parametrize(
    ("slug", "n_items", "expected"),
    [
        ("conll03", 600, 51.3),
        ("wikiann", 600, 62.8),
        ("squad2", 200, 49.5),
    ],
)
def test_empty_predictor_scores_on_clues_test(clues_zip, slug, n_items, expected):
    task = CLUES_TASKS[slug]
    test = load_split(clues_zip, task, task.test_filename)
    assert len(test) == n_items
    result = METHODS["empty"]().run(task, [], test, AdapterConfig())
    assert corpus_s1(task, result.predictions, test) == expected


def test_clues_rows_convert(clues_zip):
    squad = load_split(clues_zip, CLUES_TASKS["squad2"], CLUES_TASKS["squad2"].test_filename)
    assert sum(1 for ex in squad if not ex.answers) == 99
    assert all(1 <= len(ex.answers) <= 5 for ex in squad if ex.answers)
    record = load_split(clues_zip, CLUES_TASKS["record"], CLUES_TASKS["record"].test_filename)
    assert len(record) == 200
    for ex in record:  # inclusive ends converted: every answer is one of the candidates
        assert len(ex.answers) == 1 and ex.answers[0] in candidate_texts(ex)
    mnli = load_split(clues_zip, CLUES_TASKS["mnli"], CLUES_TASKS["mnli"].train_filename(10, 1))
    assert len(mnli) == 10 and all(ex.hypothesis for ex in mnli)
    conll = load_split(clues_zip, CLUES_TASKS["conll03"], CLUES_TASKS["conll03"].train_filename(10, 1))
    assert len(conll) == 30
