"""Text spans in plain Python (no Django, no torch): the tokens a worker can mark and where an
answer string occurs in a context. Used by the worker pages (worker_pages.text) and the
model adapters (fewshot_models), so both cut and find text the same way."""

from __future__ import annotations

import re

_WS_TOKEN = re.compile(r"\S+")
_FINE_TOKEN = re.compile(r"\w+|[^\w\s]")


def tokenize(text: str, *, fine: bool = False) -> list[tuple[int, int]]:
    """Token offsets: whitespace-separated words (NER), or words and single punctuation marks (MRC)."""
    pattern = _FINE_TOKEN if fine else _WS_TOKEN
    return [(m.start(), m.end()) for m in pattern.finditer(text)]


def _is_word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def find_occurrences(context: str, needle: str) -> list[tuple[int, int]]:
    """All (start, end-exclusive) occurrences of ``needle``; occurrences on word boundaries
    if there are any, else all raw occurrences (so "US" does not match inside "USA" when
    a standalone "US" exists)."""
    if not needle:
        return []
    raw: list[tuple[int, int]] = []
    i = context.find(needle)
    while i != -1:
        raw.append((i, i + len(needle)))
        i = context.find(needle, i + 1)

    def bounded(s: int, e: int) -> bool:
        left_ok = s == 0 or not (_is_word_char(context[s - 1]) and _is_word_char(needle[0]))
        right_ok = e == len(context) or not (_is_word_char(context[e]) and _is_word_char(needle[-1]))
        return left_ok and right_ok

    good = [(s, e) for s, e in raw if bounded(s, e)]
    return good or raw
