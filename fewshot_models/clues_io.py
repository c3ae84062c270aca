"""CLUES JSON rows -> ``AdapterExample`` (plain Python, no Django, no torch), through the one
CLUES reader the importer uses (``tasks_data.clues_format``), so both keep the same normalisation
and SQuAD's ``answer_start``.

The row shapes (see shared/clues/README.md): MNLI ``context`` is ``[premise, hypothesis]``;
NER "no entity" is ``"answer": [""]`` (the empty set); SQuAD v2 / ReCoRD answers are
``[{"text", "answer_start"}, ...]`` with repeats (kept as the distinct texts, with the
first offset of each); ReCoRD ``entities`` have an INCLUSIVE end, turned here into the
end-exclusive ``candidates`` the adapters use.

A task's files come from the official zip (a CLUES task) or from a task folder (a task of one's own: its card and
JSONL, ``tasks_data.cards.TaskFolder``), so that a GPU box runs either without the database.
"""

from __future__ import annotations

import json
import zipfile

from tasks_data.cards import TaskFolder
from tasks_data.clues_format import Record, parse_file, parse_line
from tasks_data.registry import TaskSpec

from .base import AdapterExample


def example_from_record(record: Record, uid: str | None = None) -> AdapterExample:
    """The one CLUES reader's normalised record (``tasks_data.clues_format``) as an example."""
    return AdapterExample(
        uid=uid if uid is not None else record.clues_id,
        context=record.context,
        question=record.question,
        answers=tuple(record.gold),
        hypothesis=record.hypothesis,
        candidates=tuple(record.candidates),
        answer_starts=tuple(record.answer_starts),
    )


def example_from_row(task: TaskSpec, row: dict, uid: str | None = None) -> AdapterExample:
    """One CLUES row (a dict), read and checked by ``tasks_data.clues_format.parse_line``."""
    return example_from_record(parse_line(task, json.dumps(row), file="<row>", line=1), uid)


def read_jsonl_from_zip(zip_path: str, member: str) -> list[dict]:
    with zipfile.ZipFile(zip_path) as zf:
        return [json.loads(line) for line in zf.read(member).decode("utf-8").splitlines() if line.strip()]


def file_text(source: str | TaskFolder, task: TaskSpec, filename: str) -> tuple[str, str]:
    """(the file's name as errors give it, its text): from the CLUES zip at ``source``, or from a task folder."""
    if isinstance(source, TaskFolder):
        return f"{source.where}/{filename}", source.files[filename]
    member = f"CLUES-JSON/{task.clues_folder}/{filename}"
    with zipfile.ZipFile(source) as zf:
        return member, zf.read(member).decode("utf-8")


def file_rows(source: str | TaskFolder, task: TaskSpec, filename: str) -> list[dict]:
    """The file's lines as JSON objects (their ids as the file writes them)."""
    return [json.loads(line) for line in file_text(source, task, filename)[1].splitlines() if line.strip()]


def load_split(source: str | TaskFolder, task: TaskSpec, filename: str) -> list[AdapterExample]:
    """Examples of one file (``task.test_filename`` or ``task.train_filename(k, s)``) of the CLUES zip at ``source``
    or of a task folder, read by the importer's reader (``parse_file``); uids are ``<filename>:<row number>``
    because CLUES ids are not unique keys."""
    name, text = file_text(source, task, filename)
    return [example_from_record(r, uid=f"{filename}:{i}") for i, r in enumerate(parse_file(task, text, file=name))]
