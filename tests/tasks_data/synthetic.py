"""A small, valid release in the CLUES format, written from scratch for tests (no official data).

``write_release(root)`` writes ``root/CLUES-JSON/<FOLDER>/*.jsonl`` for the six tasks: a short
test file and, for each of two chains, a 10-, 20- and 30-shot file nested 10 in 20 in 30 (rows
reshuffled, so a smaller file is not a prefix). As in the official data, the MRC tasks' chains
cross split numbers (``CHAINS``). ``tag`` changes every text, giving a different release.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

from tasks_data.registry import CLUES_TASKS, TaskSpec

CHAIN_SPLITS = (1, 2)
TEST_SENTENCES = 6  # test items per task; NER test files hold 3 rows per sentence
# chain (its 10-shot split) -> {shots: split}
CHAINS = {
    slug: (
        {1: {10: 1, 20: 2, 30: 1}, 2: {10: 2, 20: 1, 30: 2}}
        if slug in ("squad2", "record")
        else {c: {10: c, 20: c, 30: c} for c in CHAIN_SPLITS}
    )
    for slug in CLUES_TASKS
}
NER_QUESTIONS = (
    "List all the people names in the context",
    "List all the organizations in the context",
    "List all the locations in the context",
)


def test_rows(slug: str) -> int:
    return TEST_SENTENCES * CLUES_TASKS[slug].train_rows_per_shot


def example(spec: TaskSpec, tag: str, role: str, n: int) -> list[dict]:
    """The CLUES lines of one example (three for NER)."""
    uid = f"{tag}{role}{n}"
    if spec.slug == "sst2":
        good = n % 2 == 0
        return [
            {
                "answer": ["positive" if good else "negative"],
                "question": "positive or negative?",
                "id": n,
                "context": f"a {'lovely' if good else 'tedious'} film, review {uid} ",
            }
        ]
    if spec.slug == "mnli":
        label = ("entailment", "neutral", "contradiction")[n % 3]
        return [
            {
                "genre": "fiction",
                "answer": [label],
                "question": "entailment, contraction, or neutral?",
                "id": uid,
                "context": [f"Premise {uid} says the shop opens at nine.", f"Hypothesis {uid} about the shop."],
            }
        ]
    if spec.answer_kind.name == "spans":
        person, org, place = f"Ann Lee{uid}", f"Acme{uid} Corp", f"Rome{uid}"
        if n % 3 == 0:  # no person: the empty set, written [""] as CLUES does
            context, answers = f"{org} opened an office in {place} .", ([""], [org], [place])
        else:
            context, answers = f"{person} of {org} flew to {place} .", ([person], [org], [place])
        return [
            {"answer": answer, "question": question, "id": f"{uid}_{i}", "context": context}
            for i, (question, answer) in enumerate(zip(NER_QUESTIONS, answers, strict=True), start=1)
        ]
    if spec.slug == "squad2":
        context = f"The report {uid} was written by Author{uid} in 1990 and revised later."
        if n % 3 == 0:
            return [
                {
                    "question": f"Who translated the report {uid}?",
                    "id": f"q{uid}",
                    "answer": [],
                    "is_impossible": True,
                    "context": context,
                }
            ]
        start = context.index(f"Author{uid}")
        answers = [
            {"text": f"Author{uid}", "answer_start": start},
            {"text": f"Author{uid}", "answer_start": start},  # CLUES repeats alternatives
            {"text": f"Author{uid} in 1990", "answer_start": start},
        ]
        return [
            {
                "question": f"Who wrote the report {uid}?",
                "id": f"q{uid}",
                "answer": answers,
                "is_impossible": False,
                "context": context,
            }
        ]
    if spec.slug == "record":
        names = (f"Ann{uid}", f"Bob{uid}", f"Rome{uid}")
        context = f"{names[0]} met {names[1]} in {names[2]} on Monday.\n@highlight\nA meeting in {names[2]}"
        entities = [{"start": context.index(x), "end": context.index(x) + len(x) - 1} for x in names]  # inclusive
        return [
            {
                "id": f"ReCoRD_{uid}",
                "context": context,
                "entities": entities,
                "question": f"@placeholder met {names[1]}. What is @placeholder?",
                "answer": [{"text": names[0], "answer_start": context.index(names[0])}],
                "is_impossible": False,
            }
        ]
    raise ValueError(spec.slug)


def dumps(row: dict) -> str:
    return json.dumps(row, ensure_ascii=False)


def task_files(spec: TaskSpec, tag: str) -> dict[str, list[dict]]:
    """file name -> rows, for one task."""
    files = {spec.test_filename: [row for n in range(1, TEST_SENTENCES + 1) for row in example(spec, tag, "t", n)]}
    for chain, splits in CHAINS[spec.slug].items():
        pool = [example(spec, tag, f"c{chain}x", n) for n in range(1, 31)]
        orders = {10: pool[:10], 20: pool[:20][::-1], 30: pool[15:] + pool[:15]}
        for shots, split in splits.items():
            files[spec.train_filename(shots, split)] = [row for rows in orders[shots] for row in rows]
    if spec.slug == "sst2":  # SST-2 ids are row numbers within each file
        files = {name: [{**row, "id": i} for i, row in enumerate(rows, start=1)] for name, rows in files.items()}
    return files


def write_release(root: Path, *, tag: str = "v1", slugs=None) -> Path:
    """Write the release under ``root``; returns the CLUES-JSON folder."""
    release = Path(root) / "CLUES-JSON"
    for slug in slugs or CLUES_TASKS:
        spec = CLUES_TASKS[slug]
        folder = release / spec.clues_folder
        folder.mkdir(parents=True, exist_ok=True)
        for name, rows in task_files(spec, tag).items():
            (folder / name).write_text("".join(dumps(row) + "\n" for row in rows), encoding="utf-8")
    return release


def zip_release(release: Path, target: Path) -> Path:
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for file in sorted(release.rglob("*.jsonl")):
            archive.write(file, f"CLUES-JSON/{file.relative_to(release).as_posix()}")
    return target


def read_rows(release: Path, name: str) -> list[dict]:
    return [json.loads(line) for line in (release / name).read_text(encoding="utf-8").splitlines()]


def write_rows(release: Path, name: str, rows: list[dict]) -> None:
    (release / name).write_text("".join(dumps(row) + "\n" for row in rows), encoding="utf-8")


def replace_line(release: Path, name: str, number: int, text: str) -> None:
    """Put ``text`` (raw) as line ``number`` (1-based) of ``release/name``."""
    lines = (release / name).read_text(encoding="utf-8").splitlines()
    lines[number - 1] = text
    (release / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
