"""Page helpers for the end-to-end tests: reading the current item, marking spans, waiting for swaps."""

from __future__ import annotations

from annotation.models import Answer, Enrollment
from tasks_data.models import Example
from tests.annotation.factories import example_of

LAPTOP = {"width": 1366, "height": 800}  # a laptop; PHONE below: the review widths
PHONE = {"width": 390, "height": 844}

# An init script that reports each Content-Security-Policy violation as a console error (which the ``pages``
# fixture turns into a failure) and keeps them in window.__csp.
CSP_LISTENER = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", function (e) {
  window.__csp.push(e.violatedDirective + " " + e.blockedURI);
  console.error("CSP violation: " + e.violatedDirective + " blocked " + e.blockedURI +
                " at " + e.sourceFile + ":" + e.lineNumber);
});
"""


def item_handle(page) -> str:
    """The handle the page's answer form posts (``annotation.handles``): all the worker knows of the item."""
    return page.locator('#answer-form input[name="item"]').input_value()


def example_for(handle: str) -> Example:
    """The item behind a handle shown in the browser (the test's oracle; the newest enrollment first)."""
    for enrollment_id in Enrollment.objects.order_by("-pk").values_list("pk", flat=True):
        try:
            return example_of(enrollment_id, handle)
        except LookupError:
            continue
    raise LookupError(f"no enrollment has an item with the handle {handle!r}")


def current_example(page) -> Example:
    return example_for(item_handle(page))


def item_id(page) -> int:
    """The database id of the item shown (through the oracle: the page itself never carries it)."""
    return current_example(page).pk


def view(page) -> str:
    return page.locator("#stage").get_attribute("data-view")


def wait_view(page, name: str):
    page.wait_for_selector(f'#stage[data-view="{name}"]')


def after_item(page, old: str) -> str:
    """Wait until the page has left the item with handle ``old`` (feedback, the next item, or the end); return
    the view."""
    page.wait_for_function(
        """old => { const s = document.getElementById('stage'); if (!s) return false;
                    if (s.dataset.view !== 'item') return true;
                    const i = s.querySelector('input[name="item"]'); return i && i.value !== old; }""",
        arg=old,
    )
    return view(page)


def tokens(page) -> list[tuple[int, int]]:
    return [
        tuple(t)
        for t in page.eval_on_selector_all(
            ".tokens .tok", "els => els.map(e => [parseInt(e.dataset.s, 10), parseInt(e.dataset.e, 10)])"
        )
    ]


def gold_token_ranges(page, example: Example) -> list[tuple[int, int]]:
    """(first, last) token indices of each gold string, at its first occurrence on token boundaries."""
    toks = tokens(page)
    starts = {s: i for i, (s, _) in enumerate(toks)}
    ends = {e: i for i, (_, e) in enumerate(toks)}
    ranges = []
    for gold in example.gold:
        at = example.context.find(gold)
        while at >= 0 and not (at in starts and at + len(gold) in ends):
            at = example.context.find(gold, at + 1)
        assert at >= 0, f"gold {gold!r} is not on token boundaries of {example.context!r}"
        ranges.append((starts[at], ends[at + len(gold)]))
    return ranges


def tok(page, i: int):
    return page.locator(".tokens .tok").nth(i)


def drag(page, first: int, last: int):
    a, b = tok(page, first).bounding_box(), tok(page, last).bounding_box()
    page.mouse.move(a["x"] + 2, a["y"] + a["height"] / 2)
    page.mouse.down()
    page.mouse.move((a["x"] + b["x"]) / 2, (a["y"] + b["y"]) / 2 + b["height"] / 2, steps=3)
    page.mouse.move(b["x"] + b["width"] - 2, b["y"] + b["height"] / 2, steps=3)
    page.mouse.up()


def click_shift_click(page, first: int, last: int):
    tok(page, first).click()
    if last != first:
        tok(page, last).click(modifiers=["Shift"])


def chips(page) -> list[str]:
    return page.locator("[data-chips] li span").all_inner_texts()


def stored_answer(enrollment_id: int, example_id: int) -> Answer | None:
    return Answer.objects.filter(enrollment_id=enrollment_id, example_id=example_id).first()
