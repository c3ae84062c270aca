"""The worker walk: an expert answering every task through the page, at 1366x800 with the keyboard and at
390x844 by touch, and what the page showed at each load (tests/browser/test_worker_walk.py, and the full
walk in benchmarks/worker_walk.py).

* ``on_screen``: an element wholly inside the viewport and what a click at its centre hits (so nothing
  covers it: not the action bar, not a pending control);
* ``axe``: the vendored axe-core (tests/browser/vendor/, see its README) run on the page, serious and
  critical violations returned;
* the expert: the shortest key sequence that marks the gold answer with the keys the page offers
  (``plan_keys``; ``KEYS_BEFORE`` are the keys the page had before the jump keys and the candidate keys),
  pressed for real, and the taps a phone needs (``plan_taps``).
"""

from __future__ import annotations

import collections
import re
from pathlib import Path

AXE = Path(__file__).parent / "vendor" / "axe-4.14.1.min.js"
SERIOUS = ("serious", "critical")


def on_screen(page, selector: str, *, nth: int = 0) -> bool:
    return page.evaluate(
        """([sel, nth]) => { const el = document.querySelectorAll(sel)[nth]; if (!el) return false;
                    const r = el.getBoundingClientRect();
                    if (r.width === 0 || r.top < 0 || r.left < 0) return false;
                    if (r.bottom > innerHeight || r.right > innerWidth) return false;
                    const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
                    return !!hit && (hit === el || el.contains(hit)); }""",
        [selector, nth],
    )


def controls_on_screen(page) -> dict:
    """At load: Submit, the answer controls (every label; the first word of the text; the first candidate) and the
    top of the item's text on screen and not covered."""
    kind = page.locator("#answer-form").get_attribute("data-kind")
    if kind == "label":
        n = page.locator(".label-btn").count()
        controls = all(on_screen(page, ".label-btn", nth=i) for i in range(n))
        text = on_screen(page, "#answer-form .text-block .block-label")
    elif kind == "entity":
        controls = on_screen(page, ".cand")
        text = on_screen(page, "#item-heading") or page.evaluate(
            "() => { const r = document.querySelector('#item-heading').getBoundingClientRect();"
            " return r.top >= 0 && r.top < innerHeight / 2; }"
        )
    else:
        controls = on_screen(page, ".tokens .tok")
        text = on_screen(page, "#item-heading") or page.evaluate(
            "() => { const r = document.querySelector('#item-heading').getBoundingClientRect();"
            " return r.top >= 0 && r.top < innerHeight / 2; }"
        )
    return {"submit": on_screen(page, '[data-role="submit"]'), "controls": controls, "text": text}


def verdict_in_view(page) -> bool:
    """The feedback's verdict and score wholly inside the viewport."""
    return page.evaluate(
        """() => [document.querySelector('.verdict'), document.querySelector('.verdict .score')].every(el => {
                 if (!el) return false; const r = el.getBoundingClientRect();
                 return r.top >= 0 && r.bottom <= innerHeight && r.height > 0; })"""
    )


def axe(page, *, exclude: tuple[str, ...] = ()) -> list[dict]:
    """Serious and critical axe violations on the page as it is now: [{id, impact, help, nodes}]."""
    if not page.evaluate("() => !!window.axe"):
        page.evaluate(AXE.read_text(encoding="utf-8"))  # evaluated over the DevTools protocol: the CSP does not apply
    result = page.evaluate(
        """async (exclude) => { const r = await axe.run({include: [document], exclude: exclude.map(s => [s])},
                                   {resultTypes: ['violations']});
                   return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
                                                 nodes: v.nodes.map(n => n.target.join(' ')).slice(0, 5)})); }""",
        list(exclude),
    )
    return [v for v in result if v["impact"] in SERIOUS]


# ---------------------------------------------------------------- the expert's keys


KEYS_BEFORE = "before"  # arrows (word, line), Home/End, Shift to extend, Space, N, Enter; Tab through candidates
KEYS_AFTER = "after"  # and Ctrl+arrows / [ ] to the next capitalised word or sentence start; candidate keys


def _lines(rects: list[dict]) -> list[int]:
    """The line of each token (tokens whose tops are within 2 px share one)."""
    lines, tops = [], []
    for r in rects:
        if not tops or abs(r["top"] - tops[-1]) > 2:
            tops.append(r["top"])
        lines.append(len(tops) - 1)
    return lines


def _line_move(rects, i: int, step: int) -> int:
    """What work.js's ArrowUp/ArrowDown does from token i."""
    here = rects[i]
    x = here["left"] + here["width"] / 2
    best, best_top = None, None
    j = i + step
    while 0 <= j < len(rects):
        r = rects[j]
        other = r["top"] >= here["bottom"] - 2 if step > 0 else r["bottom"] <= here["top"] + 2
        if other:
            if best_top is None:
                best_top = r["top"]
            if abs(r["top"] - best_top) > 2:
                break
            d = abs(r["left"] + r["width"] / 2 - x)
            if best is None or d < best[1]:
                best = (j, d)
        j += step
    return best[0] if best else i


def jump_stops(words: list[str]) -> list[int]:
    """Where Ctrl+arrow and [ ] stop: a word starting with a capital letter or a digit, and the first word of a
    sentence (the mirror of work.js's ``stops``)."""
    stops = []
    for i, w in enumerate(words):
        first = w[:1]
        starts_sentence = i == 0 or words[i - 1] in (".", "!", "?")
        cased = first.lower() != first.upper()
        if first and (first.isdigit() or first != first.lower() or (starts_sentence and cased)):
            stops.append(i)
    return stops


def _moves(i: int, n: int, rects, stops, keys: str):
    yield "ArrowRight", min(i + 1, n - 1)
    yield "ArrowLeft", max(i - 1, 0)
    yield "ArrowDown", _line_move(rects, i, 1)
    yield "ArrowUp", _line_move(rects, i, -1)
    yield "Home", 0
    yield "End", n - 1
    if keys == KEYS_AFTER:
        after = [s for s in stops if s > i]
        before = [s for s in stops if s < i]
        yield "Control+ArrowRight", after[0] if after else i
        yield "Control+ArrowLeft", before[-1] if before else i


def _path(start: int, goal: int, n: int, rects, stops, keys: str, shift: bool = False) -> list[str]:
    if start == goal:
        return []
    seen = {start: None}
    queue = collections.deque([start])
    while queue:
        i = queue.popleft()
        for key, j in _moves(i, n, rects, stops, keys):
            if j not in seen:
                seen[j] = (i, key)
                if j == goal:
                    out = []
                    while seen[j] is not None:
                        i0, k = seen[j]
                        out.append(("Shift+" + k) if shift else k)
                        j = i0
                    return out[::-1]
                queue.append(j)
    raise AssertionError(f"token {goal} unreachable from {start}")


def span_keys(page, ranges: list[tuple[int, int]], keys: str) -> list[str]:
    """The key presses, from the item's heading focused, that mark ``ranges`` (token index pairs) and submit."""
    rects = page.eval_on_selector_all(
        ".tokens .tok",
        "els => els.map(e => { const r = e.getBoundingClientRect();"
        " return {top: r.top, bottom: r.bottom, left: r.left, width: r.width}; })",
    )
    words = page.eval_on_selector_all(".tokens .tok", "els => els.map(e => e.textContent)")
    stops = jump_stops(words)
    n = len(rects)
    if not ranges:
        return ["n", "Enter"]
    out, cursor = ["Tab"], 0
    for a, b in sorted(ranges):
        out += _path(cursor, a, n, rects, stops, keys)
        out += _path(a, b, n, rects, stops, keys, shift=True)
        out.append(" ")
        cursor = b
    out.append("Enter")
    return out


def distinct_candidates(page) -> list[str]:
    """The candidates' texts, each once, in the order of their first occurrence (the arrow keys' order)."""
    seen = []
    for t in page.locator(".cand").all_inner_texts():
        if t not in seen:
            seen.append(t)
    return seen


def _typed_lands(names: list[str], typed: str) -> str | None:
    """work.js's type-to-find, from the first name focused: each key searches on from the focused name (the
    next name for a first letter, the focused one included after it) for a name starting with what was typed."""
    here = 0
    for k in range(1, len(typed) + 1):
        prefix = typed[:k].lower()
        start = here + 1 if k == 1 else here
        hit = next(
            (
                (start + j) % len(names)
                for j in range(len(names))
                if names[(start + j) % len(names)].lower().startswith(prefix)
            ),
            None,
        )
        if hit is None:
            return None
        here = hit
    return names[here]


def typeahead_keys(names: list[str], gold: set[str]) -> list[str] | None:
    """The shortest prefix of a gold name that, typed with the first name focused, lands on a gold name."""
    best = None
    for g in gold:
        for k in range(1, len(g) + 1):
            if g[k - 1] == " ":
                continue  # Space chooses: a prefix is typed up to a letter
            if _typed_lands(names, g[:k]) in gold:
                if best is None or k < len(best):
                    best = list(g[:k])
                break
    return best


def entity_keys(page, gold: list[str], keys: str) -> list[str]:
    if keys == KEYS_BEFORE:
        texts = page.locator(".cand").all_inner_texts()
        first = next(i for i, t in enumerate(texts) if t in gold)
        return ["Tab"] * (first + 1) + ["Enter", "Enter"]
    names = distinct_candidates(page)
    arrows = ["ArrowRight"] * next(i for i, t in enumerate(names) if t in gold)
    typed = typeahead_keys(names, set(gold))
    way = typed if typed is not None and len(typed) < len(arrows) else arrows
    return ["Tab"] + way + ["Enter", "Enter"]


def label_keys(page, gold: str) -> list[str]:
    key = page.locator(f'.label-btn input[value="{gold}"]').get_attribute("data-key")
    return [key, "Enter"]


def press(page, keys: list[str]):
    """Press ``keys`` from the item as it loaded: the page focuses the item's heading (after a swap and, since
    the jump keys came, after a full load too; before that, a full load left the focus on the page)."""
    if page.evaluate("() => document.activeElement === document.body"):
        page.focus("#item-heading")
    for key in keys:
        page.keyboard.press(key)


# ---------------------------------------------------------------- the phone's taps


def span_taps(ranges: list[tuple[int, int]], *, many: bool = True) -> list[tuple[str, int]]:
    """The taps that mark ``ranges`` by touch, then Submit ("none": its button). Names (``many``): every word of a
    name in turn (a word right after a mark extends it), a hold on the first word of a name that touches the one
    before; one answer: its first word, then its last."""
    if not ranges:
        return [("none", 0)]
    out = []
    previous_end = None
    for a, b in sorted(ranges):
        if many:
            touches = previous_end is not None and a == previous_end + 1
            out += [("hold" if touches and i == a else "tok", i) for i in range(a, b + 1)]
        else:
            out += [("tok", a)] + ([("tok", b)] if b != a else [])
        previous_end = b
    out.append(("submit", 0))
    return out


def span_taps_done(ranges) -> int:
    """The rule before (a tap left its word open until "Done"): a one-word name one tap, then "Done" when another
    name follows; a longer one its first and its last word; then Submit."""
    if not ranges:
        return 1
    ranges = sorted(ranges)
    return sum((2 if b != a else 1 + (k + 1 < len(ranges))) for k, (a, b) in enumerate(ranges)) + 1


def span_taps_old(ranges) -> list[tuple[str, int]]:
    """The taps before: first word, last word (a one-word name: the same word again), then Submit."""
    if not ranges:
        return [("none", 0)]
    return [t for a, b in sorted(ranges) for t in (("tok", a), ("tok", b))] + [("submit", 0)]


_WS = re.compile(r"\s+")


def norm(text: str) -> str:
    return _WS.sub(" ", text).strip()
