"""The texts of the worker's pages cut into pieces: markable tokens or candidates, gaps, @highlight bullets,
and the worker's and gold marks on the feedback page. All offsets are Python string indices (code points),
computed here and sent back unchanged by the page's script. An answer kind's widget asks for the pieces it
shows through ``PIECES`` (``tasks_data.kinds.TextCutter``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

from tasks_data.models import Example
from tasks_data.registry import TaskSpec
from tasks_data.text_spans import tokenize

HIGHLIGHT = "@highlight"  # ReCoRD: a passage's highlight lines start with it (shown as bullets)
PLACEHOLDER = "@placeholder"  # ReCoRD: the blank of a query (shown as a blank)
# The markers as the worker reads them on the item: the blank the question shows, the bullet the passage shows.
BLANK = mark_safe('<span class="blank" role="img" aria-label="blank"><span class="blank-empty">?</span></span>')
BULLET = mark_safe('<span class="hl-bullet" aria-hidden="true">\u25b8</span>')
# A task's instructions are Markdown (CommonMark) written by a researcher: raw HTML is shown as text, never run,
# and a link may only lead to http(s) or mailto (markdown-it's link check); images are not shown.
_MARKDOWN = MarkdownIt("commonmark", {"html": False}).disable("image")


def markers_as_read(escaped: str) -> SafeString:
    """Escaped text or HTML with the data's markers (``@placeholder``, ``@highlight``) as the worker reads them."""
    return mark_safe(escaped.replace(PLACEHOLDER, BLANK).replace(HIGHLIGHT, BULLET))


@lru_cache(maxsize=64)
def instructions_html(text: str) -> SafeString:
    """A task's instructions (its description, Markdown) as the worker reads them: paragraphs, emphasis, lists,
    and the data's markers as on the item."""
    return markers_as_read(_MARKDOWN.render(text))  # markdown-it escapes the text itself (html off)


@dataclass(frozen=True)
class Piece:
    """A run of the text: a token / candidate (markable, with offsets), a gap, or a @highlight bullet."""

    text: str
    start: int
    end: int
    kind: str = "gap"  # gap | tok | cand | bullet
    mine: bool = False
    gold: bool = False
    space_before: bool = False  # tokens only: whitespace (or the start) right before / after it
    space_after: bool = False

    @property
    def punct(self) -> bool:
        """A token of punctuation only: shown wider so that a finger or a mouse can hit it."""
        return self.kind == "tok" and not any(c.isalnum() for c in self.text)


def _pieces(text: str, marks: list[tuple[int, int]], kind: str) -> list[Piece]:
    """The text cut at ``marks`` (sorted, non-overlapping): gaps between marked runs of ``kind``."""
    out: list[Piece] = []
    pos = 0
    for start, end in marks:
        if start < pos:  # overlapping candidate: keep the first
            continue
        if start > pos:
            out.append(Piece(text[pos:start], pos, start))
        out.append(Piece(text[start:end], start, end, kind))
        pos = end
    if pos < len(text):
        out.append(Piece(text[pos:], pos, len(text)))
    return out


def _with_bullets(pieces: list[Piece]) -> list[Piece]:
    """ReCoRD passages end with "@highlight" lines: show the marker as a bullet (display only)."""
    out: list[Piece] = []
    for piece in pieces:
        if piece.kind != "gap" or HIGHLIGHT not in piece.text:
            out.append(piece)
            continue
        parts = piece.text.split(HIGHLIGHT)
        for i, part in enumerate(parts):
            if i:
                out.append(Piece("", piece.start, piece.start, "bullet"))
                part = part.lstrip("\n")
            if part:
                out.append(Piece(part, piece.start, piece.end))
    return out


def token_pieces(text: str, *, fine: bool) -> list[Piece]:
    """The text as tokens and gaps; a token knows whether whitespace borders it (a punctuation mark is
    widened on that side only, so that its wider target never covers a neighbouring word)."""
    pieces = _pieces(text, tokenize(text, fine=fine), "tok")
    return [
        replace(
            p,
            space_before=p.start == 0 or text[p.start - 1].isspace(),
            space_after=p.end == len(text) or text[p.end].isspace(),
        )
        if p.kind == "tok"
        else p
        for p in pieces
    ]


def candidate_pieces(example: Example) -> list[Piece]:
    candidates = sorted({(int(s), int(e)) for s, e in example.candidates})
    return _with_bullets(_pieces(example.context, candidates, "cand"))


def gold_offsets(example: Example, spec: TaskSpec) -> list[tuple[int, int]]:
    """Where the gold strings are in the context (for highlighting the feedback; gold has no offsets)."""
    return spec.answer_kind.gold_offsets(example)


def marked_pieces(text: str, mine: list[tuple[int, int]], gold: list[tuple[int, int]]) -> list[Piece]:
    """The text cut at every boundary of both mark sets; each piece knows whether it is mine and/or gold."""
    cuts = {0, len(text)}
    for s, e in (*mine, *gold):
        cuts.update((s, e))
    points = sorted(c for c in cuts if 0 <= c <= len(text))

    def inside(marks, s, e):
        return any(ms <= s and e <= me for ms, me in marks)

    pieces = []
    for s, e in zip(points, points[1:], strict=False):
        if s < e:
            pieces.append(Piece(text[s:e], s, e, "gap", mine=inside(mine, s, e), gold=inside(gold, s, e)))
    return _with_bullets(pieces) if HIGHLIGHT in text else pieces


class _Pieces:
    """The cutting a widget may ask for (``AnswerKind.widget_context`` / ``feedback_context``)."""

    @staticmethod
    def tokens(text: str, *, fine: bool) -> list[Piece]:
        return token_pieces(text, fine=fine)

    @staticmethod
    def candidates(item: Example) -> list[Piece]:
        return candidate_pieces(item)

    @staticmethod
    def marked(text: str, mine: list[tuple[int, int]], gold: list[tuple[int, int]]) -> list[Piece]:
        return marked_pieces(text, mine, gold)


PIECES = _Pieces()
