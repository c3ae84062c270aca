"""Tasks of one's own for tests: a folder with ``task.toml``, the instructions and JSONL in the CLUES unified format,
for any answer kind (invented texts, written from scratch).

``write_task(root, kind=...)`` writes ``root/<slug>/`` with a test file of ``test`` items and, per split, training
files of each size in ``shots`` (nested: the smaller files are the first rows of the larger). ``tag`` changes every
text, giving different data under the same card.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

NAMES = ("Ada", "Bruno", "Chiara", "Dmitri", "Elif", "Farid", "Greta", "Hugo", "Ines", "Jonas", "Kofi", "Lena")
CITIES = ("Lisbon", "Oslo", "Quito", "Hanoi", "Lagos", "Perth")


def row(kind: str, uid: str, n: int, tag: str = "") -> dict:
    """One line of a ``kind`` task (n picks the answer: a label, names, an answer or none)."""
    a, b, city = NAMES[n % len(NAMES)], NAMES[(n + 5) % len(NAMES)], CITIES[n % len(CITIES)]
    if kind == "label":
        yes = n % 2 == 0
        return {
            "id": uid,
            "context": f"{tag}Lamp {uid} is {'bright' if yes else 'dim'} at night.",
            "answer": ["yes" if yes else "no"],
        }
    if kind == "spans":
        context = f"{tag}{a} met {b} in {city} ({uid})." if n % 3 else f"{tag}The rain in {city} stopped ({uid})."
        return {
            "id": uid,
            "context": context,
            "question": "Which people are named?",
            "answer": [a, b] if n % 3 else [""],
        }
    if kind == "span_or_none":
        context = f"{tag}The parcel {uid} left {city} on Monday."
        if n % 4 == 0:
            return {
                "id": uid,
                "context": context,
                "question": "Who signed for it?",
                "answer": [],
                "is_impossible": True,
            }
        start = context.index(city)
        return {
            "id": uid,
            "context": context,
            "question": "Where did the parcel leave from?",
            "answer": [{"text": city, "answer_start": start}],
            "is_impossible": False,
        }
    if kind == "entity":
        context = f"{tag}{a} met {b} in {city} ({uid}).\n@highlight\nA meeting in {city}"
        names = (a, b, city)
        entities = [{"start": context.index(x), "end": context.index(x) + len(x) - 1} for x in names]  # inclusive
        return {
            "id": uid,
            "context": context,
            "entities": entities,
            "question": f"@placeholder met {b}. Who is @placeholder?",
            "answer": [{"text": a, "answer_start": context.index(a)}],
            "is_impossible": False,
        }
    raise ValueError(kind)


CARDS = {
    "label": 'labels = ["yes", "no"]\nquestion = "Is the lamp bright?"\ncategory = "sentence classification"\n',
    "spans": 'category = "named entity recognition"\n',
    "span_or_none": 'category = "machine reading comprehension"\n',
    "entity": "",
}


def write_task(
    root: Path,
    *,
    slug: str = "toy",
    kind: str = "label",
    shots: tuple[int, ...] = (2, 4),
    splits: tuple[int, ...] = (1, 2),
    test: int = 6,
    nested: bool = True,
    tag: str = "",
    name: str = "Toy task",
    instructions: str = "Read each text and give **the answer** it asks for.",
    card: str = "",
) -> Path:
    """A valid task folder (``card``: lines added to task.toml); returns its path."""
    folder = root / slug
    folder.mkdir(parents=True, exist_ok=True)
    lines = [
        f'slug = "{slug}"',
        f'name = "{name}"',
        f'kind = "{kind}"',
        'instructions = "instructions.md"',
        'test = "test.jsonl"',
        'train = "train_{shots}_{split}.jsonl"',
        f"nested = {'true' if nested else 'false'}",
    ]
    (folder / "task.toml").write_text("\n".join(lines) + "\n" + CARDS[kind] + card, encoding="utf-8")
    (folder / "instructions.md").write_text(instructions + "\n", encoding="utf-8")
    write_jsonl(folder / "test.jsonl", [row(kind, f"t{n}", n, tag) for n in range(1, test + 1)])
    for split in splits:
        pool = [row(kind, f"s{split}x{n}", 100 * split + n, tag) for n in range(1, max(shots) + 1)]
        for k in shots:
            rows = (
                pool[:k]
                if nested
                else [row(kind, f"s{split}k{k}x{n}", 1000 * split + 10 * k + n, tag) for n in range(k)]
            )
            write_jsonl(folder / f"train_{k}_{split}.jsonl", rows)
    return folder


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def zip_task(folder: Path, dest: Path, *, top: bool = True) -> Path:
    """``folder`` zipped, its files under one top folder (as a zip of a folder is) or at the root."""
    with zipfile.ZipFile(dest, "w") as archive:
        for file in sorted(folder.iterdir()):
            archive.write(file, f"{folder.name}/{file.name}" if top else file.name)
    return dest
