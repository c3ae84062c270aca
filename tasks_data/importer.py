"""Importing the CLUES release (or data in its format) into the database.

``read_release`` checks everything and builds an in-memory picture of each task (records
and chains) without touching the database; ``import_release`` then writes it in one
transaction, so a bad file leaves nothing imported.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import shutil
import tempfile
import urllib.request
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from django.db import transaction
from django.db.models import ProtectedError, RestrictedError

from .clues_format import CluesFormatError, Record, parse_file
from .kinds import AnswerKind
from .models import Example, Task, TrainingSet, TrainingSetItem
from .registry import CLUES_TASKS, TaskSpec

OFFICIAL_URL = "https://github.com/microsoft/CLUES/raw/main/data/JSON/CLUES-JSON.zip"
OFFICIAL_SHA256 = "5475b29462e99abde3d93682866c217e99a43adec6ac6c8221092b9d8ea92fae"


class CluesImportError(Exception):
    """The data cannot be imported; ``errors`` lists every problem found (file, line, field)."""

    def __init__(self, errors: Iterable[str]):
        self.errors = list(errors)
        super().__init__("\n".join(self.errors))


@dataclass
class TaskData:
    spec: TaskSpec
    test: list[Record]
    train: dict[tuple[int, int], list[Record]]  # (shots, split) -> rows in file order
    chains: list[dict[int, int]] = field(default_factory=list)  # [{10: split, 20: split, 30: split}]
    test_number_ids: frozenset[str] = frozenset()  # test ids the file writes as JSON numbers (SST-2)

    @property
    def training_examples(self) -> dict[str, Record]:
        distinct: dict[str, Record] = {}
        for key in sorted(self.train, key=lambda k: (-k[0], k[1])):  # largest files first
            for record in self.train[key]:
                distinct.setdefault(record.content_key, record)
        return distinct

    def fingerprint(self) -> str:
        def rec(r: Record):
            return [
                r.clues_id,
                r.context,
                r.hypothesis,
                r.question,
                list(r.gold),
                r.genre,
                r.is_impossible,
                [list(c) for c in r.candidates],
                list(r.answer_starts),
            ]

        payload = {
            "test": [rec(r) for r in self.test],
            "train": {f"{k}_{s}": [r.content_key for r in rows] for (k, s), rows in sorted(self.train.items())},
            "train_records": [rec(r) for _, r in sorted(self.training_examples.items())],
            "chains": self.chains,
        }
        return hashlib.sha256(json.dumps(payload, ensure_ascii=False).encode("utf-8")).hexdigest()

    def gold_not_in_context(self) -> tuple[int, int]:
        """(test rows, distinct training examples) with a gold string absent from the context."""
        test = sum(1 for r in self.test if r.gold_not_in_context)
        train = sum(1 for r in self.training_examples.values() if r.gold_not_in_context)
        return test, train


@dataclass
class TaskReport:
    spec: TaskSpec
    test: int
    train_rows: dict[int, int]  # shots -> rows per file
    splits: int
    chains: list[dict[int, int]]
    training_examples: int
    gold_not_in_context: tuple[int, int]
    changed: bool


@dataclass
class ImportReport:
    source: str
    tasks: list[TaskReport]
    missing: list[str]

    @property
    def changed(self) -> bool:
        return any(t.changed for t in self.tasks)


# ---------------------------------------------------------------- reading


def _release_files(path: Path) -> dict[str, str]:
    """Map 'FOLDER/file.jsonl' -> text for every JSONL file of a zip or folder release."""
    files: dict[str, str] = {}
    where: dict[str, str] = {}

    def add(key: str, origin: str, read: Callable[[], bytes]) -> None:
        if key in files:
            raise CluesImportError([f"{origin}: a second {key} (the first is {where[key]}); give one release"])
        try:
            files[key] = read().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CluesImportError([f"{origin}: not UTF-8 text ({exc.reason} at byte {exc.start})"]) from None
        where[key] = origin

    if path.is_file():
        try:
            archive = zipfile.ZipFile(path)
        except zipfile.BadZipFile:
            raise CluesImportError(
                [f"{path}: not a zip file (give the CLUES-JSON.zip or its unzipped folder)"]
            ) from None
        with archive:
            for name in archive.namelist():
                if name.endswith(".jsonl") and not name.startswith("__MACOSX"):
                    add("/".join(PurePosixPath(name).parts[-2:]), name, functools.partial(archive.read, name))
    elif path.is_dir():
        for file in sorted(path.rglob("*.jsonl")):
            add(f"{file.parent.name}/{file.name}", str(file), file.read_bytes)
    else:
        raise CluesImportError([f"{path}: no such file or folder"])
    return files


def _number_ids(text: str) -> frozenset[str]:
    """Ids a (valid) file writes as JSON numbers, so that exports can write them back the same way."""
    rows = (json.loads(line) for line in text.split("\n") if line.strip())
    return frozenset(str(r["id"]) for r in rows if isinstance(r["id"], int) and not isinstance(r["id"], bool))


def _discover_chains(spec: TaskSpec, train: dict[tuple[int, int], list[Record]], folder: str, errors: list[str]):
    """Follow each smallest file into the one file of each larger size containing it (CLUES: 10 in 20 in 30); for
    files that do not nest (``spec.nested`` false), each split number is a chain."""
    sizes = sorted({k for k, _ in train})
    splits = sorted({s for _, s in train})
    if not spec.nested:
        return [dict.fromkeys(sizes, split) for split in splits]
    keys = {k: {r.content_key for r in rows} for k, rows in train.items()}
    chains = []
    for first in splits:
        chain = {sizes[0]: first}
        for smaller, larger in itertools.pairwise(sizes):
            inner = keys[(smaller, chain[smaller])]
            holders = [s for s in splits if inner <= keys[(larger, s)]]
            name = spec.train_filename(smaller, chain[smaller])
            if not holders:
                errors.append(f"{folder}/{name}: its examples lie in no {larger}-shot file")
                return []
            if len(holders) > 1:
                errors.append(f"{folder}/{name}: lies in several {larger}-shot files {holders}")
                return []
            chain[larger] = holders[0]
        chains.append(chain)
    for shots in sizes[1:]:
        used = [c[shots] for c in chains]
        if len(set(used)) != len(used):
            errors.append(f"{folder}: two chains share a {shots}-shot file ({used})")
            return []
    return chains


def _read_task(spec: TaskSpec, files: dict[str, str], errors: list[str]) -> TaskData | None:
    folder = spec.clues_folder
    mine = {name.split("/", 1)[1]: text for name, text in files.items() if name.split("/", 1)[0] == folder}
    return read_task(spec, mine, folder, errors)


def read_task(
    spec: TaskSpec, mine: dict[str, str], folder: str, errors: list[str], *, strict: bool = False
) -> TaskData | None:
    """One task's files (name -> text, in ``folder``) checked and read; the problems are added to ``errors``.

    ``strict``: a task of one's own, whose data has none of the release's quirks to keep: every gold string is
    in its context (for a kind whose answers are marked there), and the ids of every file are unique."""
    start = len(errors)

    def parse(name: str) -> list[Record]:
        """The file's records; every bad line is named, and a file with one is not checked further."""
        before = len(errors)
        try:
            records = parse_file(spec, mine[name], file=f"{folder}/{name}", errors=errors)
        except CluesFormatError as exc:
            errors.append(str(exc))
            return []
        return records if len(errors) == before else []

    if spec.test_filename not in mine:
        errors.append(f"{folder}/{spec.test_filename}: missing")
        return None
    test = parse(spec.test_filename)

    train: dict[tuple[int, int], list[Record]] = {}
    for name in sorted(mine):
        if name == spec.test_filename:
            continue
        found = spec.train_file_of(name)
        if found is None:
            pattern = spec.train_file.replace("{shots}", "<K>").replace("{split}", "<SPLIT>")
            errors.append(f"{folder}/{name}: unexpected file (expected {spec.test_filename} or {pattern})")
            continue
        shots, split = found
        if shots not in spec.shots:
            errors.append(f"{folder}/{name}: {shots} shots is not one of {spec.shots}")
            continue
        if split not in spec.splits:
            errors.append(f"{folder}/{name}: split {split} is not one of {spec.splits}")
            continue
        rows = parse(name)
        expected = shots * spec.train_rows_per_shot
        if rows and len(rows) != expected:
            errors.append(
                f"{folder}/{name}: {len(rows)} rows, expected {expected} ({shots} shots"
                + (f" x {spec.train_rows_per_shot} questions)" if spec.train_rows_per_shot > 1 else ")")
            )
        seen: set[str] = set()
        for number, record in enumerate(rows, start=1):
            if record.content_key in seen:
                errors.append(f"{folder}/{name}, line {number}: repeats an example of the same file")
            seen.add(record.content_key)
        train[(shots, split)] = rows

    split_sets = {k: sorted(s for kk, s in train if kk == k) for k in spec.shots}
    if not split_sets[spec.shots[0]]:
        errors.append(f"{folder}: no training files")
    elif any(split_sets[k] != split_sets[spec.shots[0]] for k in spec.shots):
        errors.append(
            f"{folder}: every size needs the same splits, found "
            + ", ".join(f"{k}-shot {v}" for k, v in split_sets.items())
        )

    first_line: dict[str, int] = {}
    for number, record in enumerate(test, start=1):
        earlier = first_line.setdefault(record.clues_id, number)
        if earlier != number:
            errors.append(
                f"{folder}/{spec.test_filename}, line {number}, field 'id': {record.clues_id!r} "
                f"repeats the id of line {earlier}; test ids must be unique"
            )
    if strict:
        _strict_checks(spec, test, train, folder, errors)
    if len(errors) > start:
        return None

    data = TaskData(spec, test, train, test_number_ids=_number_ids(mine[spec.test_filename]))
    gold_by_key: dict[str, tuple] = {}
    for (shots, split), rows in train.items():
        for number, record in enumerate(rows, start=1):
            earlier_gold = gold_by_key.setdefault(record.content_key, record.gold)
            if set(earlier_gold) != set(record.gold):
                errors.append(
                    f"{folder}/{spec.train_filename(shots, split)}, line {number}: "
                    f"same example as in another training file with a different answer"
                )
    test_line = {r.content_key: number for number, r in enumerate(test, start=1)}
    for (shots, split), rows in sorted(train.items()):
        for number, record in enumerate(rows, start=1):
            if record.content_key in test_line:
                errors.append(
                    f"{folder}/{spec.train_filename(shots, split)}, line {number}: the same example is "
                    f"line {test_line[record.content_key]} of {spec.test_filename}; a training "
                    "example must not be in the test set"
                )
    data.chains = _discover_chains(spec, train, folder, errors)
    return None if len(errors) > start else data


def _strict_checks(
    spec: TaskSpec, test: list[Record], train: dict[tuple[int, int], list[Record]], folder: str, errors: list[str]
) -> None:
    """What a task of one's own must hold besides the format: unique ids in each training file, and every gold
    string in its context where answers are marked in it (an answer no worker can mark would score nobody)."""
    files = [(spec.test_filename, test)]
    files += [(spec.train_filename(k, s), rows) for (k, s), rows in sorted(train.items())]
    for name, rows in files:
        first_line: dict[str, int] = {}
        for number, record in enumerate(rows, start=1):
            where = f"{folder}/{name}, line {number}"
            earlier = first_line.setdefault(record.clues_id, number)
            if earlier != number and name != spec.test_filename:  # the test file's are reported above
                errors.append(f"{where}, field 'id': {record.clues_id!r} repeats the id of line {earlier}")
            for text in record.gold_not_in_context if spec.answer_kind.marks_context else ():
                errors.append(f"{where}, field 'answer': {text!r} is not in the context")


def read_release(path: Path, *, progress: Callable[[str], None] | None = None) -> tuple[list[TaskData], list[str]]:
    """Validate a CLUES release; returns the tasks found and the CLUES tasks it lacks."""
    files = _release_files(Path(path))
    if not files:
        raise CluesImportError([f"{path}: no .jsonl files found"])
    folders = {name.split("/", 1)[0] for name in files}
    errors: list[str] = []
    tasks, missing = [], []
    for spec in CLUES_TASKS.values():
        if spec.clues_folder not in folders:
            missing.append(spec.slug)
            continue
        if progress:
            progress(spec.name)
        data = _read_task(spec, files, errors)
        if data:
            tasks.append(data)
    known = {spec.clues_folder for spec in CLUES_TASKS.values()}
    for folder in sorted(folders - known):
        errors.append(f"{folder}/: no CLUES task uses this folder (a task of your own: manage.py import_task)")
    if errors:
        raise CluesImportError(errors)
    if not tasks:
        raise CluesImportError([f"{path}: none of the CLUES tasks' folders found"])
    return tasks, missing


# ---------------------------------------------------------------- writing


def _example_fields(record: Record, kind: AnswerKind, number_ids: frozenset[str] = frozenset()) -> dict:
    return {
        # The data's quirk: no answer marked in the context can score S1 1 (the answer kind says when).
        "gold_unproducible": kind.gold_unproducible(record.gold, record.context),
        "clues_id_is_number": record.clues_id in number_ids,
        "clues_id": record.clues_id,
        "context": record.context,
        "hypothesis": record.hypothesis,
        "question": record.question,
        "gold": list(record.gold),
        "genre": record.genre,
        "is_impossible": record.is_impossible,
        "candidates": [list(c) for c in record.candidates],
        "answer_starts": list(record.answer_starts),
    }


_EXAMPLE_FIELDS = (
    "clues_id",
    "context",
    "hypothesis",
    "question",
    "gold",
    "genre",
    "is_impossible",
    "candidates",
    "gold_unproducible",
    "clues_id_is_number",
    "answer_starts",
)


def _test_identity(record: Record) -> str:
    return hashlib.sha256(f"{record.content_key}#{record.clues_id}".encode()).hexdigest()


def _write_task(data: TaskData, source: str, *, task: Task | None = None, fingerprint: str = "") -> None:
    """Write one task's data (its Task row created unless given): examples by identity, its training files, and
    the examples no file has any more deleted (refused while an answer or a run refers to one)."""
    if task is None:
        task, _ = Task.objects.get_or_create(slug=data.spec.slug, defaults={"source": source})
    kind = data.spec.answer_kind
    wanted: dict[str, dict] = {}
    for position, record in enumerate(data.test):
        wanted[_test_identity(record)] = {
            "role": Example.Role.TEST,
            "position": position,
            **_example_fields(record, kind, data.test_number_ids),
        }
    positions: dict[str, int] = {}
    for _, rows in sorted(data.train.items(), key=lambda kv: (-kv[0][0], kv[0][1])):
        for position, record in enumerate(rows):
            positions.setdefault(record.content_key, position)
    for key, record in data.training_examples.items():
        wanted[key] = {"role": Example.Role.TRAIN, "position": positions[key], **_example_fields(record, kind)}

    existing = {e.identity: e for e in Example.objects.filter(task=task)}
    to_create, to_update = [], []
    for identity, fields in wanted.items():
        example = existing.get(identity)
        if example is None:
            to_create.append(Example(task=task, identity=identity, **fields))
        else:
            for name, value in fields.items():
                setattr(example, name, value)
            to_update.append(example)
    Example.objects.bulk_create(to_create, batch_size=500)
    if to_update:
        Example.objects.bulk_update(to_update, ["role", "position", *_EXAMPLE_FIELDS], batch_size=500)
    by_identity = {e.identity: e.pk for e in Example.objects.filter(task=task)}

    chain_of = {(shots, split): chain[min(chain)] for chain in data.chains for shots, split in chain.items()}
    TrainingSetItem.objects.filter(training_set__task=task).delete()
    # Free the (shots, chain) slots first, since a chain may now start at another split.
    for training_set in TrainingSet.objects.filter(task=task):
        TrainingSet.objects.filter(pk=training_set.pk).update(chain=1000 + training_set.split)
    TrainingSet.objects.filter(task=task).exclude(
        pk__in=[ts.pk for ts in TrainingSet.objects.filter(task=task) if (ts.shots, ts.split) in data.train]
    ).delete()
    items = []
    for (shots, split), rows in sorted(data.train.items()):
        training_set, _ = TrainingSet.objects.update_or_create(
            task=task, shots=shots, split=split, defaults={"chain": chain_of[(shots, split)]}
        )
        items += [
            TrainingSetItem(training_set=training_set, example_id=by_identity[r.content_key], position=i)
            for i, r in enumerate(rows)
        ]
    TrainingSetItem.objects.bulk_create(items, batch_size=1000)

    stale = Example.objects.filter(task=task).exclude(identity__in=list(wanted))
    try:
        stale.delete()
    except (ProtectedError, RestrictedError):
        raise CluesImportError(
            [
                f"{data.spec.name}: the new data drops examples that annotations or runs "
                "already refer to; refusing to replace this task's data"
            ]
        ) from None
    task.source, task.fingerprint = source, fingerprint or data.fingerprint()
    task.save()


def import_release(
    path: Path, *, source: str | None = None, progress: Callable[[str], None] | None = None
) -> ImportReport:
    """Validate ``path`` completely, then write every task in one transaction."""
    tasks, missing = read_release(path, progress=progress)
    source = source or Path(path).name
    reports = []
    with transaction.atomic():
        current = dict(Task.objects.values_list("slug", "fingerprint"))
        for data in tasks:
            fingerprint = data.fingerprint()
            changed = current.get(data.spec.slug) != fingerprint
            if changed:
                _write_task(data, source)
            reports.append(
                TaskReport(
                    spec=data.spec,
                    test=len(data.test),
                    train_rows={k: len(rows) for (k, s), rows in data.train.items()},
                    splits=len({s for _, s in data.train}),
                    chains=data.chains,
                    training_examples=len(data.training_examples),
                    gold_not_in_context=data.gold_not_in_context(),
                    changed=changed,
                )
            )
    return ImportReport(source=source, tasks=reports, missing=missing)


def download_official(dest: Path, *, url: str = OFFICIAL_URL, sha256: str = OFFICIAL_SHA256) -> Path:
    """Fetch the official zip into ``dest`` (kept as a cache) and check its sha256."""
    dest = Path(dest)
    target = dest / "CLUES-JSON.zip"
    if target.exists() and _sha256(target) == sha256:
        return target
    created = not dest.exists()
    dest.mkdir(parents=True, exist_ok=True)

    def give_up(message: str) -> CluesImportError:
        Path(tmp.name).unlink(missing_ok=True)
        if created and not any(dest.iterdir()):
            dest.rmdir()
        return CluesImportError([message])

    with tempfile.NamedTemporaryFile(dir=dest, prefix=".download-", delete=False) as tmp:
        try:
            with urllib.request.urlopen(url, timeout=60) as response:
                shutil.copyfileobj(response, tmp)
        except (OSError, ValueError) as exc:
            tmp.close()
            raise give_up(
                f"could not download {url}: {exc}. Set CLUES_DATA to a local CLUES-JSON.zip "
                "(or its folder), or pass the path to import_clues."
            ) from None
    digest = _sha256(Path(tmp.name))
    if digest != sha256:
        raise give_up(f"downloaded file from {url} has sha256 {digest}, expected {sha256}; not used")
    Path(tmp.name).replace(target)
    return target


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
