"""A task as data: its card (``task.toml``) and its files in the CLUES unified format (plain Python, no Django).

A folder (or a zip of one) holds the card, the instructions it names (Markdown) and the JSONL files, one
``{"id", "context", "question", "answer"}`` per line as in the official release. ``read_task_folder`` checks the
card (every problem named, with the field), finds the files by the card's names (the training files' sizes and
splits by its pattern) and gives the card as the database keeps it; ``spec_from_card`` turns that card into the
task's ``TaskSpec``. The importer (``tasks_data.card_import``) stores both; a GPU box reads the same folder with
``load_task_folder`` and never asks the database. The lines themselves are checked by the one CLUES reader
(``tasks_data.clues_format``) when they are imported or loaded.

    slug = "reviews"                      # lower-case letters, digits, hyphens; the name used by --tasks
    name = "Product reviews"
    kind = "label"                        # an answer kind (tasks_data.kinds.KINDS)
    labels = ["positive", "negative"]     # for a kind with a label set
    instructions = "instructions.md"      # what the worker reads, Markdown
    test = "test.jsonl"
    train = "train_{shots}_{split}.jsonl" # the training files; sizes and splits found by the pattern
    # optional: seconds_per_item, category, question, nested, pair
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import Any

from . import registry
from .kinds import KINDS, get_kind
from .registry import SPLITS, Category, PromptMethod, TaskSpec, train_file_pattern

CARD_FILE = "task.toml"
SLUG = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
MAX_SLUG = 50  # tasks_data.models.Task.slug
MAX_NAME = 100
MAX_LABEL = 100
MAX_INSTRUCTIONS = 20_000  # characters: a page a worker reads, not a manual
MAX_SHOTS = 1000
MAX_SECONDS_PER_ITEM = 3600
MAX_FOLDER_BYTES = 50 * 2**20  # what a folder or zip may hold in all (its files are read into memory)
WORDS_PER_MINUTE = 250  # a careful reader: with the kind's answer time, the time per item a card does not give

REQUIRED = ("slug", "name", "kind", "instructions", "test", "train")
OPTIONAL = ("labels", "seconds_per_item", "category", "question", "nested", "pair")
_NO_PROMPT = PromptMethod(
    not_applicable="prompt-based fine-tuning needs a template and verbalizers, which a task card does not declare"
)


class CardError(ValueError):
    """A task folder that cannot be read; ``errors`` names every problem (the file, and the card's field)."""

    def __init__(self, errors: list[str]):
        self.errors = list(errors)
        super().__init__("\n".join(self.errors))


@dataclass(frozen=True)
class TaskFolder:
    card: dict[str, Any]  # the card as the database keeps it (``spec_from_card`` reads it): instructions' text in it
    files: dict[str, str]  # the JSONL files beside the card: name -> text
    where: str  # the folder (or zip) as errors name it

    @property
    def spec(self) -> TaskSpec:
        return spec_from_card(self.card)


# ---------------------------------------------------------------- reading a folder or a zip


def _folder_files(path: Path, label: str = "") -> tuple[dict[str, bytes], str]:
    """The files beside the card (name -> content) and how errors name the folder (``label``, else its path): a
    folder, or a zip whose card is at its root or in its one top folder (nothing is extracted)."""
    where = label or str(path)
    if path.is_dir():
        if not (path / CARD_FILE).is_file():
            raise CardError([f"{where}: no {CARD_FILE} in this folder"])
        entries = [f for f in sorted(path.iterdir()) if f.is_file()]
        if sum(f.stat().st_size for f in entries) > MAX_FOLDER_BYTES:
            raise CardError([f"{where}: more than {MAX_FOLDER_BYTES // 2**20} MiB of files"])
        return {f.name: f.read_bytes() for f in entries}, where
    if not path.is_file():
        raise CardError([f"{where}: no such file or folder"])
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        raise CardError([f"{where}: not a zip file (give a folder with {CARD_FILE}, or a zip of it)"]) from None
    with archive:
        members = [m for m in archive.infolist() if not m.is_dir() and not m.filename.startswith("__MACOSX")]
        cards = [m for m in members if PurePosixPath(m.filename).name == CARD_FILE]
        if len(cards) != 1:
            found = ", ".join(m.filename for m in cards) or "none"
            raise CardError([f"{where}: a zip needs exactly one {CARD_FILE} (found: {found})"])
        folder = PurePosixPath(cards[0].filename).parent
        mine = [m for m in members if PurePosixPath(m.filename).parent == folder]
        if sum(m.file_size for m in mine) > MAX_FOLDER_BYTES:
            raise CardError([f"{where}: more than {MAX_FOLDER_BYTES // 2**20} MiB of files once unzipped"])
        return {PurePosixPath(m.filename).name: archive.read(m) for m in mine}, where


def _decoded(name: str, content: bytes, where: str) -> str:
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CardError([f"{where}/{name}: not UTF-8 text ({exc.reason} at byte {exc.start})"]) from None


def read_task_folder(path: Path | str, *, label: str = "") -> TaskFolder:
    """The card and files of a task folder (or zip), checked; ``CardError`` lists every problem of the card, each
    named by ``label`` (else the path) and the file."""
    files, where = _folder_files(Path(path), label)
    try:
        raw = tomllib.loads(_decoded(CARD_FILE, files[CARD_FILE], where))
    except tomllib.TOMLDecodeError as exc:
        raise CardError([f"{where}/{CARD_FILE}: not valid TOML ({exc})"]) from None
    errors: list[str] = []
    card = _checked_card(raw, files, where, errors)
    if errors:
        raise CardError(errors)
    texts = {name: _decoded(name, content, where) for name, content in files.items() if name.endswith(".jsonl")}
    card["seconds_per_item"] = card.get("seconds_per_item") or _reading_estimate(card, texts.get(card["test"], ""))
    return TaskFolder(card=card, files=texts, where=where)


def _checked_card(raw: dict, files: Mapping[str, bytes], where: str, errors: list[str]) -> dict[str, Any]:
    """The card's fields checked, each problem added to ``errors`` naming the field; the card as stored."""

    def bad(field: str, message: str) -> None:
        errors.append(f"{where}/{CARD_FILE}, field {field!r}: {message}")

    for field in REQUIRED:
        if field not in raw:
            bad(field, "missing")
    for field in sorted(set(raw) - set(REQUIRED) - set(OPTIONAL)):
        bad(field, f"not a field of a task card (fields: {', '.join(REQUIRED + OPTIONAL)})")
    card: dict[str, Any] = {}
    slug = _text(raw, "slug", MAX_SLUG, bad)
    if slug is not None:
        if not SLUG.fullmatch(slug):
            bad("slug", f'{slug!r}: lower-case letters, digits and single hyphens inside, e.g. "my-reviews"')
        elif slug in registry.CLUES_TASKS:
            bad("slug", f"{slug!r} is a CLUES task's; choose another")
        card["slug"] = slug
    card["name"] = _text(raw, "name", MAX_NAME, bad)
    card["kind"] = _text(raw, "kind", 50, bad)
    if card["kind"] is not None and card["kind"] not in KINDS:
        bad("kind", f"{card['kind']!r} is not an answer kind (kinds: {', '.join(KINDS)})")
    _check_labels(raw, KINDS.get(card["kind"] or ""), card, bad)
    card["instructions"] = _file_text(raw, "instructions", files, bad)
    card["test"] = _file_name(raw, "test", files, bad, must_exist=True)
    card["train"] = train = _file_name(raw, "train", files, bad, must_exist=False)
    if train is not None:
        _check_train_pattern(train, files, card, bad)
    _check_options(raw, card, bad)
    return card


def _text(raw: dict, field: str, limit: int, bad) -> str | None:
    value = raw.get(field)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        bad(field, "must be a non-empty string")
    elif len(value) > limit:
        bad(field, f"at most {limit} characters")
    else:
        return value.strip()
    return None


def _check_labels(raw: dict, kind, card: dict, bad) -> None:
    labels = raw.get("labels")
    if kind is not None and kind.from_labels and labels is None:
        bad("labels", f'a {kind.name} task needs its labels, e.g. labels = ["yes", "no"]')
    elif labels is not None and kind is not None and not kind.from_labels:
        bad("labels", f"a {kind.name} task has no label set (its answers are spans of the text)")
    elif labels is not None:
        if (
            not isinstance(labels, list)
            or len(labels) < 2
            or not all(isinstance(x, str) and x.strip() and len(x) <= MAX_LABEL for x in labels)
        ):
            bad("labels", f"must be a list of two or more non-empty strings of at most {MAX_LABEL} characters")
        elif len({x.strip() for x in labels}) != len(labels):
            bad("labels", "each label once")
        else:
            card["labels"] = [x.strip() for x in labels]


def _check_options(raw: dict, card: dict, bad) -> None:
    for field in ("nested", "pair"):
        value = raw.get(field, False)
        if not isinstance(value, bool):
            bad(field, "true or false")
        card[field] = value is True
    category = raw.get("category", Category.OTHER.value)
    if category not in {c.value for c in Category}:
        bad("category", f"one of {', '.join(repr(c.value) for c in Category)}")
    card["category"] = category
    card["question"] = _text(raw, "question", 1000, bad) or ""
    seconds = raw.get("seconds_per_item")
    if seconds is not None:
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 < seconds <= 3600:
            bad("seconds_per_item", f"a number of seconds above 0 and at most {MAX_SECONDS_PER_ITEM}")
        else:
            card["seconds_per_item"] = float(seconds)


def _file_name(raw: dict, field: str, files: Mapping[str, bytes], bad, *, must_exist: bool) -> str | None:
    name = raw.get(field)
    if name is None:
        return None
    if not isinstance(name, str) or not name or "/" in name or "\\" in name or name.startswith("."):
        bad(field, "a file name beside task.toml (no folder)")
        return None
    if not name.endswith(".jsonl") and field != "instructions":
        bad(field, f"{name!r}: a .jsonl file")
        return None
    if must_exist and name not in files:
        bad(field, f"{name!r}: no such file beside task.toml")
        return None
    return name


def _file_text(raw: dict, field: str, files: Mapping[str, bytes], bad) -> str | None:
    name = _file_name(raw, field, files, bad, must_exist=True)
    if name is None:
        return None
    try:
        text = files[name].decode("utf-8").strip()
    except UnicodeDecodeError:
        bad(field, f"{name!r} is not UTF-8 text")
        return None
    if not text:
        bad(field, f"{name!r} is empty: it is what the workers read")
    elif len(text) > MAX_INSTRUCTIONS:
        bad(field, f"{name!r}: at most {MAX_INSTRUCTIONS} characters")
    else:
        return text
    return None


def _check_train_pattern(pattern: str, files: Mapping[str, bytes], card: dict, bad) -> None:
    """The training files' pattern names each file's size and split once; the sizes and splits of the files it
    finds go on the card."""
    if pattern.count("{shots}") != 1 or pattern.count("{split}") != 1 or re.search(r"\{(?!shots\}|split\})", pattern):
        bad(
            "train",
            f'{pattern!r}: the pattern names {{shots}} and {{split}} once each, e.g. "train_{{shots}}_{{split}}.jsonl"',
        )
        return
    regex = train_file_pattern(pattern)
    found = [(int(m["shots"]), int(m["split"])) for name in files if (m := regex.fullmatch(name))]
    if not found:
        bad("train", f"{pattern!r}: no training file has a name of this pattern")
        return
    shots = sorted({k for k, _ in found})
    splits = sorted({s for _, s in found})
    if not all(0 < k <= MAX_SHOTS for k in shots):
        bad("train", f"training-file sizes run from 1 to {MAX_SHOTS} (found {shots})")
    if not all(s in SPLITS for s in splits):
        bad(
            "train",
            f"split numbers run from {min(SPLITS)} to {max(SPLITS)}, a study's chain being one (found {splits})",
        )
    card["shots"], card["splits"] = shots, splits


def _reading_estimate(card: dict, test: str) -> float:
    """Seconds a careful worker spends on one item: the test items' mean length in words read at 250 words a
    minute, plus the kind's time to answer (the figure the CLUES tasks were given the same way). The cohort's
    measured time replaces it after its first workers (``annotation.estimates``)."""
    words: list[int] = []
    for line in test.splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict):
            context = row.get("context")
            parts = context if isinstance(context, list) else [context]
            texts = [*parts, row.get("question") or card.get("question") or ""]
            words.append(sum(len(t.split()) for t in texts if isinstance(t, str)))
    reading = (sum(words) / len(words)) * 60 / WORDS_PER_MINUTE if words else 10.0
    return float(round(reading + get_kind(card["kind"]).answer_seconds))


# ---------------------------------------------------------------- the card as a task


def card_fingerprint(card: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(card, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


def spec_from_card(card: Mapping[str, Any]) -> TaskSpec:
    """The task a stored card describes (the same card gives the same object)."""
    return _spec(json.dumps(card, sort_keys=True, ensure_ascii=False))


@lru_cache(maxsize=256)
def _spec(card_json: str) -> TaskSpec:
    card = json.loads(card_json)
    seconds = float(card["seconds_per_item"])
    return TaskSpec(
        slug=card["slug"],
        name=card["name"],
        category=Category(card["category"]),
        answer_kind=get_kind(card["kind"]),
        description=card["instructions"],
        clues_folder="",
        clues_prefix="",
        labels=tuple(card.get("labels") or ()),
        context_is_pair=bool(card.get("pair")),
        prompt=_NO_PROMPT,
        test_file=card["test"],
        train_file=card["train"],
        shots=tuple(card["shots"]),
        splits=tuple(card["splits"]),
        nested=bool(card.get("nested")),
        default_question=card.get("question") or "",
        seconds_per_item=seconds,
        # well under a careful reader's time, so that only skimming shows (the CLUES tasks: 1.5 to 5 s)
        min_answer_seconds=min(5.0, max(1.0, round(seconds / 4, 1))),
    )


def load_task_folder(path: Path | str) -> TaskFolder:
    """A task folder read for a run without the database (a GPU box): its task registered, so that every reader
    of the registry has it."""
    folder = read_task_folder(path)
    registry.register_task(folder.spec)
    return folder
