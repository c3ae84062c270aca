"""A task is named by its slug everywhere, and the README says each slug; a name that is no task's is refused with
the known ones listed (and the slug it likely means)."""

from __future__ import annotations

import re
from pathlib import Path

from tasks_data.registry import CLUES_TASKS, unknown_tasks

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_task_table_names_every_task_by_its_slug_and_folder():
    table = re.search(r"<!-- task-table.*?-->\n(.*?)<!-- /task-table -->", README.read_text(), re.S).group(1)
    rows = [[c.strip().strip("`") for c in line.strip("|").split("|")] for line in table.strip().splitlines()[2:]]
    assert [(r[0], r[1], r[2], r[4]) for r in rows] == [
        (spec.name, slug, spec.category.value, spec.clues_folder) for slug, spec in CLUES_TASKS.items()
    ]
    for row, spec in zip(rows, CLUES_TASKS.values(), strict=True):
        assert all(label in row[3] for label in spec.labels)


def test_an_unknown_task_lists_the_known_ones_and_the_likely_one():
    known = "known tasks: sst2, mnli, conll03, wikiann, squad2, record"
    assert unknown_tasks(["squadv2"]) == f"unknown task: squadv2 (did you mean squad2?); {known}"
    assert unknown_tasks(["SQuADv2", "nope"]) == f"unknown tasks: SQuADv2 (did you mean squad2?), nope; {known}"
