"""CLUES JSON rows -> ``AdapterExample`` (plain Python, no Django, no torch).

The row shapes (see shared/clues/README.md): MNLI ``context`` is ``[premise, hypothesis]``;
NER "no entity" is ``"answer": [""]`` (the empty set); SQuAD v2 / ReCoRD answers are
``[{"text", "answer_start"}, ...]`` with repeats (kept as the distinct texts, with the
first offset of each); ReCoRD ``entities`` have an INCLUSIVE end, turned here into the
end-exclusive ``candidates`` the adapters use.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterable

from tasks_data.registry import TaskSpec

from .base import AdapterExample


def example_from_row(task: TaskSpec, row: dict, uid: str | None = None) -> AdapterExample:
    context = row["context"]
    hypothesis = ""
    if isinstance(context, list):
        context, hypothesis = context[0], context[1]
    texts: list[str] = []
    starts: list[int] = []
    for answer in row.get("answer") or []:
        if isinstance(answer, dict):
            text, start = str(answer.get("text", "")), answer.get("answer_start", -1)
        else:
            text, start = str(answer), -1
        if not text.strip() or text in texts:
            continue
        texts.append(text)
        starts.append(start if isinstance(start, int) else -1)
    candidates = tuple((int(e["start"]), int(e["end"]) + 1) for e in row.get("entities") or [])
    return AdapterExample(
        uid=uid if uid is not None else str(row.get("id", "")),
        context=context, question=row.get("question", ""), answers=tuple(texts),
        hypothesis=hypothesis, candidates=candidates,
        answer_starts=tuple(starts) if any(s >= 0 for s in starts) else ())


def read_jsonl_from_zip(zip_path: str, member: str) -> list[dict]:
    with zipfile.ZipFile(zip_path) as zf:
        return [json.loads(line) for line in zf.read(member).decode("utf-8").splitlines()
                if line.strip()]


def load_split(zip_path: str, task: TaskSpec, filename: str) -> list[AdapterExample]:
    """Examples of one CLUES file (``task.test_filename`` or ``task.train_filename(k, s)``);
    uids are ``<filename>:<row number>`` because CLUES ids are not unique keys."""
    rows = read_jsonl_from_zip(zip_path, f"CLUES-JSON/{task.clues_folder}/{filename}")
    return [example_from_row(task, row, uid=f"{filename}:{i}") for i, row in enumerate(rows)]


def gold_answers(examples: Iterable[AdapterExample]) -> list[tuple[str, ...]]:
    return [ex.answers for ex in examples]
