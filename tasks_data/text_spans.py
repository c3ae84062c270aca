"""Text spans in plain Python (no Django, no torch): the tokens a worker can mark and where an
answer string occurs in a context. Used by the answer kinds (tasks_data.kinds), the worker pages
(worker_pages.text) and the model adapters (fewshot_models), so all cut and find text the same way."""

from __future__ import annotations

import re
from collections.abc import Iterable

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


def distinct(strings: Iterable[str]) -> list[str]:
    """Distinct non-empty (after strip) strings in first-seen order."""
    seen: set[str] = set()
    out: list[str] = []
    for s in strings:
        if s.strip() and s not in seen:
            seen.add(s)
            out.append(s)
    return out


def snap_to_context(span: str, context: str) -> str | None:
    """The exact substring of ``context`` that ``span`` stands for, or None.

    ``span`` itself if it occurs; else a case-insensitive match that allows any whitespace
    (including none) between its tokens — this undoes detokenisation differences of generated
    text ("Lincoln's" vs "Lincoln 's") without ever inventing text."""
    span = span.strip()
    if not span:
        return None
    if span in context:
        return span
    tokens = re.findall(r"\w+|[^\w\s]", span)
    if not tokens:
        return None
    pattern = r"\s*".join(re.escape(t) for t in tokens)
    m = re.search(pattern, context, flags=re.IGNORECASE)
    return m.group(0) if m else None


def occurrences(text: str, needle: str, boundaries: set[int] | None = None) -> list[tuple[int, int]]:
    """Every (start, end-exclusive) occurrence of ``needle``; those starting and ending on ``boundaries``
    (token edges) when there are any."""
    found, start = [], text.find(needle)
    while needle and start >= 0:
        found.append((start, start + len(needle)))
        start = text.find(needle, start + 1)
    if boundaries:
        aligned = [(s, e) for s, e in found if s in boundaries and e in boundaries]
        if aligned:
            return aligned
    return found
