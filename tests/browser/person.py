"""A scripted person marking names by touch: reads the hint the page shows, then marks each gold name the way
that hint says (tests/browser/test_ner_marking.py; benchmarks/ner_marking.py prints the figures).

The person knows which names to mark (the gold strings) and nothing of the page's rules but its hint:

* every word of a name is tapped in turn, left to right; a punctuation mark inside a name ("Flagstaff , Arizona")
  only when the hint says so (a comma is not a word);
* a name that starts right after the one marked before it ("Real Madrid Barcelona") is started the way the hint
  says (touch and hold its first word, or press the button the hint names by its label, "New mark" before, "New
  name" now); a hint that says neither leaves the person tapping on;
* the dragger (``gesture="drag"``) marks a name of several words in one gesture when the hint offers one: a
  touch and hold on its first word, then a slide to its last, when the hint says so; else a drag along its line
  when the hint offers a drag (a name over two lines is then tapped);
* no names: the "none" button; then Submit.

Each tap, hold, drag and button press is one gesture.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass

from tasks_data.text_spans import tokenize

HOLD_SECONDS = 0.7  # a person's touch and hold (the page takes half a second as a hold)


@dataclass(frozen=True)
class Hint:
    """What the hint on the screen tells a person to do."""

    punctuation: bool  # tap a comma (or dash) inside a name too
    hold: bool  # touch and hold the first word of a name that starts right after another
    new_mark_button: bool  # press the new-name button ("New mark", now "New name") before such a name
    drag: bool  # a name may be dragged across
    slide: bool  # hold, then slide (a drag that may cross lines)

    @classmethod
    def read(cls, page) -> Hint:
        text = page.locator("#mark-help").inner_text().lower()  # what is shown (hidden parts are not read)
        button = page.locator('[data-role="separate"]')
        label = button.inner_text().strip().lower() if button.count() else ""
        return cls(
            punctuation="comma" in text,
            hold="hold" in text,
            new_mark_button=bool(label) and any(f"{q}{label}{r}" in text for q, r in ('""', "\u201c\u201d", "''")),
            drag="drag" in text,
            slide="slide" in text,
        )


def tokens_of(context: str) -> list[tuple[int, int]]:
    """The tokens a names widget shows (whitespace-separated words, as the server cuts them)."""
    return tokenize(context, fine=False)


def is_word(text: str) -> bool:
    return any(c.isalnum() for c in text)


def name_ranges(context: str, gold: list[str], tokens: list[tuple[int, int]]) -> list[tuple[int, int]] | None:
    """(first, last) token of one occurrence of each gold name, none overlapping another (the first such choice in
    reading order); None when some name cannot be marked (not on token boundaries, or only overlapping)."""
    starts = {s: i for i, (s, _) in enumerate(tokens)}
    ends = {e: i for i, (_, e) in enumerate(tokens)}
    options = []
    for name in gold:
        found, at = [], context.find(name)
        while at >= 0:
            if at in starts and at + len(name) in ends:
                found.append((starts[at], ends[at + len(name)]))
            at = context.find(name, at + 1)
        if not found:
            return None
        options.append(found)
    for choice in itertools.product(*options):
        spans = sorted(choice)
        if all(a[1] < b[0] for a, b in zip(spans, spans[1:], strict=False)):
            return spans
    return None


def plan(
    ranges: list[tuple[int, int]], words: list[str], lines: list[int], hint: Hint, *, gesture: str = "tap"
) -> list[tuple]:
    """The gestures that mark ``ranges``, then submit: ("tap", i), ("hold", i), ("drag", a, b), ("slide", a, b)
    (hold a, slide to b), ("separate",), ("none",), ("submit",)."""
    if not ranges:
        return [("none",)]
    out: list[tuple] = []
    previous_end = None
    for a, b in sorted(ranges):
        if gesture == "drag" and b > a and (hint.slide or (hint.drag and lines[a] == lines[b])):
            out.append(("slide", a, b) if hint.slide else ("drag", a, b))
            previous_end = b
            continue
        members = [i for i in range(a, b + 1) if hint.punctuation or is_word(words[i])] or list(range(a, b + 1))
        first = members[0]
        if previous_end is not None and first == previous_end + 1 and (hint.hold or hint.new_mark_button):
            out += [("hold", first)] if hint.hold else [("separate",), ("tap", first)]
        else:
            out.append(("tap", first))
        out += [("tap", i) for i in members[1:]]
        previous_end = b
    out.append(("submit",))
    return out


class Finger:
    """Touch gestures on a page, as a phone sends them (the DevTools protocol's touch events)."""

    def __init__(self, page):
        self.page = page
        self.cdp = page.context.new_cdp_session(page)
        # Headless Chromium turns no later tap of the page into a click once a synthetic touch drag was sent (the
        # words, which listen to pointer events, still get theirs): the buttons are clicked from then on.
        self.dragged = False

    def _point(self, i: int, side: str = "first") -> tuple[float, float]:
        """The middle of the word as it shows: a word broken over two lines is touched on its first line (its last
        line where a drag ends; the middle of its bounding box may be another word)."""
        box = (
            self.page.locator(".tokens .tok")
            .nth(i)
            .evaluate(
                "(el, last) => { const rs = el.getClientRects(); const r = rs[last ? rs.length - 1 : 0];"
                " return {x: r.left, y: r.top, width: r.width, height: r.height}; }",
                side == "last",
            )
        )
        return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2

    def _show(self, i: int):
        """A person brings the word to the middle of the screen (above the action bar) before touching it."""
        self.page.locator(".tokens .tok").nth(i).evaluate("el => el.scrollIntoView({block: 'center'})")

    def _touch(self, kind: str, x: float | None = None, y: float | None = None):
        points = [] if x is None else [{"x": x, "y": y}]
        self.cdp.send("Input.dispatchTouchEvent", {"type": kind, "touchPoints": points})

    def tap(self, i: int):
        self._show(i)
        self.page.touchscreen.tap(*self._point(i))

    def hold(self, i: int):
        self._show(i)
        x, y = self._point(i)
        self._touch("touchStart", x, y)
        time.sleep(HOLD_SECONDS)
        self._touch("touchEnd")

    def drag(self, a: int, b: int, *, hold: bool = False):
        self._show(a)
        (x0, y0), (x1, y1) = self._point(a), self._point(b, "last")
        self._touch("touchStart", x0, y0)
        if hold:
            time.sleep(HOLD_SECONDS)
        for k in range(1, 7):
            self._touch("touchMove", x0 + (x1 - x0) * k / 6, y0 + (y1 - y0) * k / 6)
        self._touch("touchEnd")
        self.dragged = True

    def press(self, selector: str):
        button = self.page.locator(selector)
        button.click() if self.dragged else button.tap()

    def do(self, step: tuple):
        kind = step[0]
        if kind == "tap":
            self.tap(step[1])
        elif kind == "hold":
            self.hold(step[1])
        elif kind in ("drag", "slide"):
            self.drag(step[1], step[2], hold=kind == "slide")
        elif kind == "separate":
            self.press('[data-role="separate"]')
        elif kind == "none":
            self.press('[data-role="none"]')
        else:
            self.press('[data-role="submit"]')
