"""A small release in the CLUES format whose texts are hostile or tricky, for the bad-input and security tests.

Built on tests/tasks_data/synthetic.py, which writes every text around a per-example tag: here
the tag holds a combining accent, right-to-left Hebrew and Arabic with a bidi override, an emoji
ZWJ sequence and other characters outside the BMP (one code point in Python, two UTF-16 units in
a browser), so names, contexts and gold answers all carry them. The SST-2 contexts also carry
script and markup (``XSS``) that would set ``window.__pwned`` if a page ever ran it.
"""

from __future__ import annotations

import zlib
from pathlib import Path

from tasks_data.importer import import_release
from tasks_data.registry import CLUES_TASKS
from tests.tasks_data import synthetic

COMBINING = "e\u0301"  # e + COMBINING ACUTE ACCENT: one grapheme, two code points
RTL = "\u05e9\u05dc\u05d5\u05dd\u202e\u0645\u0631\u062d\u0628\u0627\u202c"  # Hebrew, RLO, Arabic, PDF
EMOJI = "\U0001f469\U0001f3fd\u200d\U0001f52c\U0001f600"  # woman scientist (ZWJ sequence), grinning face
ASTRAL = "\U0001d49c\U00020000"  # mathematical script A, a CJK extension B ideograph
TAG = f"G{COMBINING}{RTL}{EMOJI}{ASTRAL}"  # no whitespace: NER contexts are whitespace-tokenised
XSS = (
    "<script>window.__pwned=1</script>",
    "<img src=x onerror=window.__pwned=1>",
    '"><svg onload=window.__pwned=1>',
    "{{ request }}{% csrf_token %}",
)
SLUGS = ("sst2", "conll03", "squad2", "record")


def _hostile(context: str) -> str:
    """The context with markup around it, chosen by its content (so an example reads the same in every file)."""
    n = zlib.crc32(context.encode("utf-8"))
    return f"{XSS[n % len(XSS)]} {context}{XSS[(n + 1) % len(XSS)]} {EMOJI}"


def write_tricky_release(root: Path) -> Path:
    """Write the release under ``root``; returns its CLUES-JSON folder."""
    release = synthetic.write_release(Path(root), tag=TAG, slugs=SLUGS)
    folder = release / CLUES_TASKS["sst2"].clues_folder
    for file in sorted(folder.glob("*.jsonl")):
        name = f"{folder.name}/{file.name}"
        rows = synthetic.read_rows(release, name)
        for row in rows:
            row["context"] = _hostile(row["context"])
        synthetic.write_rows(release, name, rows)
    return release


def import_tricky(root: Path):
    return import_release(write_tricky_release(root), source="tricky test release")


def tricky_fixture(django_db_setup, django_db_blocker, tmp_path_factory):
    """Module-scoped: the tricky release imported inside a transaction rolled back after the module."""
    from tests.conftest import imported_for_module

    with imported_for_module(django_db_blocker, lambda: import_tricky(tmp_path_factory.mktemp("tricky"))) as report:
        yield report
