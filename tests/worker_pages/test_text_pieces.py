"""The server-side text pieces the worker pages are built from (offsets in code points)."""

from __future__ import annotations

from tasks_data.models import Example
from tasks_data.registry import CLUES_TASKS
from tasks_data.text_spans import tokenize
from worker_pages.text import Piece, candidate_pieces, gold_offsets, marked_pieces, token_pieces
from worker_pages.views import _question


def _text(pieces: list[Piece]) -> str:
    return "".join(p.text for p in pieces)


def test_tokens_are_code_point_offsets():
    text = "Fans 😀 saw  Zoë Ñúñez (AT&T), in Paris."
    for start, end in tokenize(text):
        assert text[start:end].strip() == text[start:end] and " " not in text[start:end]
    words = [text[s:e] for s, e in tokenize(text)]
    assert words == ["Fans", "😀", "saw", "Zoë", "Ñúñez", "(AT&T),", "in", "Paris."]
    fine = [text[s:e] for s, e in tokenize(text, fine=True)]
    assert fine[-2:] == ["Paris", "."] and "AT" in fine and "&" in fine
    pieces = token_pieces(text, fine=False)
    assert _text(pieces) == text  # the page shows the text exactly, double spaces included
    zoe = next(p for p in pieces if p.text == "Zoë")
    assert (zoe.start, zoe.end) == (text.index("Zoë"), text.index("Zoë") + 3)


def test_marked_pieces_cover_the_text_and_flag_mine_and_gold():
    text = "Rain in Rotterdam and Antwerp today"
    r, a = text.index("Rotterdam"), text.index("Antwerp")
    pieces = marked_pieces(text, [(r, r + 9)], [(r, r + 9), (a, a + 7)])
    assert _text(pieces) == text
    flagged = {p.text: (p.mine, p.gold) for p in pieces if p.mine or p.gold}
    assert flagged == {"Rotterdam": (True, True), "Antwerp": (False, True)}


def test_gold_offsets_prefer_whole_tokens():
    example = Example(context="Parisian cafes in Paris .", gold=["Paris"])
    assert gold_offsets(example, CLUES_TASKS["conll03"]) == [(18, 23)]
    example = Example(context="x", gold=[])
    assert gold_offsets(example, CLUES_TASKS["conll03"]) == []


def test_candidates_and_highlight_bullets():
    context = "A fire near Kellan Creek.\n@highlight\nKellan Creek burned"
    example = Example(context=context, candidates=[[12, 24], [37, 49]])
    pieces = candidate_pieces(example)
    cands = [p for p in pieces if p.kind == "cand"]
    assert [(p.start, p.end, p.text) for p in cands] == [(12, 24, "Kellan Creek"), (37, 49, "Kellan Creek")]
    assert any(p.kind == "bullet" for p in pieces) and "@highlight" not in _text(pieces)


def test_question_blanks_and_label_aliases():
    record = Example(question='Claims: "At @placeholder today.". What is @placeholder?')
    parts = _question(CLUES_TASKS["record"], record)
    assert [p.get("blank", False) for p in parts] == [False, True, False, True, False]
    mnli = Example(question="entailment, contraction, or neutral?")
    # The labels listed in the order of the buttons and number keys (the registry's order), alias fixed.
    assert _question(CLUES_TASKS["mnli"], mnli) == [{"text": "entailment, neutral, or contradiction?"}]
    assert list(CLUES_TASKS["mnli"].labels) == ["entailment", "neutral", "contradiction"]
    odd = Example(question="Is it neutral or entailment?")  # not all labels listed: left as it is
    assert _question(CLUES_TASKS["mnli"], odd) == [{"text": "Is it neutral or entailment?"}]
