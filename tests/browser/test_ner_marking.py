"""Names marked by touch as a person marks them, on the official CoNLL03 and WikiANN test items at 390x844: a
scripted person (tests/browser/person.py) reads the page's hint and marks every gold name the way it says, then
submits; the stored answer must be the gold one.

In the suite the person walks the items that were hard to mark (a name with punctuation inside, names in a list
separated by commas, names that touch) and a few plain ones, a few per kind and task (about 40 s);
``CLUES_NER_ALL=1`` walks every test item (``benchmarks/ner_marking.py`` does, and prints the figures).
``CLUES_NER_GESTURE=drag``: the person drags across names of several words instead of tapping each word.
"""

from __future__ import annotations

import json
import os
import statistics
import time

import pytest

from annotation import services
from annotation.models import Enrollment
from tasks_data.models import Example
from tests.annotation.factories import pid_for
from tests.browser import person
from tests.browser.journeys import (
    LAPTOP,
    PHONE,
    after_item,
    current_example,
    drag,
    item_handle,
    stored_answer,
    tok,
    tokens,
    wait_view,
)
from tests.worker_pages.factories import answer_current, cohort_of, make_study

pytestmark = pytest.mark.django_db(transaction=True)

TASKS = tuple(os.environ.get("CLUES_NER_TASKS", "conll03 wikiann").split())
ALL = bool(os.environ.get("CLUES_NER_ALL"))
PER_KIND = int(os.environ.get("CLUES_NER_SAMPLE", "3"))  # items of each kind walked per task in the suite
GESTURE = os.environ.get("CLUES_NER_GESTURE", "tap")
FIGURES = os.environ.get("CLUES_NER_FIGURES")  # a JSON file the benchmark reads
PROLIFIC = "?PROLIFIC_PID={pid}&STUDY_ID=STUDY1&SESSION_ID=SESS-{pid}"


def kinds_of(example: Example) -> set[str]:
    """What makes an item hard to mark: "inside" (a name with punctuation inside), "list" (two names with only
    punctuation between them), "touch" (two names side by side); "plain" otherwise ("none": no name)."""
    gold = [g for g in example.gold if g.strip()]
    if not gold:
        return {"none"}
    toks = person.tokens_of(example.context)
    words = [example.context[s:e] for s, e in toks]
    ranges = person.name_ranges(example.context, gold, toks)
    if ranges is None:
        return {"unreachable"}
    found = set()
    for a, b in ranges:
        if any(not person.is_word(words[i]) for i in range(a, b + 1)):
            found.add("inside")
    for (_, b), (c, _) in zip(ranges, ranges[1:], strict=False):
        if c == b + 1:
            found.add("touch")
        elif all(not person.is_word(words[i]) for i in range(b + 1, c)):
            found.add("list")
    return found or {"plain"}


def _chosen(order: list[int]) -> set[int]:
    if ALL:
        return set(order)
    examples = Example.objects.in_bulk(order)
    picked: dict[str, list[int]] = {}
    for pk in order:
        for kind in kinds_of(examples[pk]):
            picked.setdefault(kind, [])
            if len(picked[kind]) < PER_KIND:
                picked[kind].append(pk)
    picked.pop("unreachable", None)
    return {pk for pks in picked.values() for pk in pks}


def _lines(page) -> list[int]:
    tops = page.eval_on_selector_all(".tokens .tok", "els => els.map(e => Math.round(e.getBoundingClientRect().top))")
    lines, seen = [], []
    for top in tops:
        if not seen or abs(top - seen[-1]) > 2:
            seen.append(top)
        lines.append(len(seen) - 1)
    return lines


def walk_task(pages, cohort, pid: str) -> dict:
    page = pages.new(viewport=PHONE, has_touch=True, is_mobile=True)
    page.context.set_default_timeout(30_000)  # a shared 2-core machine: a slow load is not a failure here
    page.goto(f"/join/{cohort.join_token}/" + PROLIFIC.format(pid=pid_for(pid)))
    wait_view(page, "description")
    page.get_by_role("button", name="Start").tap()
    wait_view(page, "item")
    enrollment = Enrollment.objects.get(worker__external_id=pid_for(pid))
    chosen = _chosen(services.item_order(enrollment=enrollment, step="test"))
    finger = person.Finger(page)
    hint = person.Hint.read(page)
    figures: dict = {"hint": page.locator("#mark-help").inner_text(), "items": 0, "wrong": [], "gestures": []}
    figures["by_kind"] = {}
    figures["unreachable"] = 0
    started = time.monotonic()
    while page.locator("#stage").get_attribute("data-view") == "item":
        example = current_example(page)
        if example.pk not in chosen or "unreachable" in kinds_of(example):
            figures["unreachable"] += example.pk in chosen
            while True:  # answered through the services up to the next chosen item (one page load)
                answer_current(enrollment)
                state = services.current_item(enrollment_id=enrollment.pk)
                if state.item is None or state.item.pk in chosen:
                    break
            page.goto("/work/")
            page.wait_for_selector("#stage")
            continue
        toks = tokens(page)
        words = page.locator(".tokens .tok").all_inner_texts()
        gold = [g for g in example.gold if g.strip()]
        ranges = person.name_ranges(example.context, gold, toks)
        assert ranges is not None
        steps = person.plan(ranges, words, _lines(page), hint, gesture=GESTURE)
        old = item_handle(page)
        for step in steps:
            if step[0] == "submit" and page.locator('[data-role="submit"]').is_disabled():
                step = ("none",)  # every mark undone: the person can only say "none"
            finger.do(step)
        after_item(page, old)
        stored = stored_answer(enrollment.pk, example.pk)
        right = stored is not None and stored.s1 >= 0.999
        figures["items"] += 1
        figures["gestures"].append(len(steps))
        for kind in kinds_of(example):
            bucket = figures["by_kind"].setdefault(kind, {"items": 0, "wrong": 0, "gestures": 0})
            bucket["items"] += 1
            bucket["wrong"] += not right
            bucket["gestures"] += len(steps)
        if not right:
            figures["wrong"].append({"item": example.pk, "gold": gold, "marked": stored and stored.texts})
    figures["seconds"] = round(time.monotonic() - started)
    return figures


def test_a_person_following_the_hint_marks_names_right(pages, clues_data):
    study = make_study(tasks=TASKS, shots=(0,), sitting_minutes=480, filter_floor=None)
    all_figures = {}
    for task in TASKS:
        f = all_figures[task] = walk_task(pages, cohort_of(study, task, 0), f"NER-{task}")
        print(
            f"\n{task:8} items {f['items']:4}  wrong {len(f['wrong']):3} ({len(f['wrong']) / max(1, f['items']):.1%})"
            f"  gestures/item {statistics.mean(f['gestures']):.2f} (max {max(f['gestures'])})"
            f"  unreachable {f['unreachable']}  {f['seconds']} s"
        )
        for kind, b in sorted(f["by_kind"].items()):
            per = b["gestures"] / b["items"]
            print(f"    {kind:8} items {b['items']:4}  wrong {b['wrong']:3}  gestures/item {per:.2f}")
        for w in f["wrong"][:15]:
            print(f"    wrong: {w}")
    if FIGURES:
        with open(FIGURES, "w") as out:
            json.dump({"gesture": GESTURE, "tasks": all_figures}, out)
    wrong = sum(len(f["wrong"]) for f in all_figures.values())
    items = sum(f["items"] for f in all_figures.values())
    assert items and wrong <= 0.01 * items, [f["wrong"] for f in all_figures.values()]


# ---------------------------------------------------------------- the gestures, one by one (demo data)

TEXT = (
    "Fans in Flagstaff , Arizona saw Real Madrid Barcelona and Germany , France and Italy on the screen of "
    "Hewlett-Packard ."
)
GOLD = ["Flagstaff , Arizona", "Real Madrid", "Barcelona", "Germany", "France", "Italy", "Hewlett-Packard"]


def _one_item(pid: str, viewport, **touch):
    def start(pages):
        study = make_study(tasks=("conll03",), shots=(0,))
        cohort = cohort_of(study, "conll03", 0)
        first = services.item_order(enrollment=Enrollment(cohort=cohort), step="test")[0]
        Example.objects.filter(pk=first).update(
            context=TEXT, question="List all the organizations in the context", gold=GOLD
        )
        page = pages.new(viewport=viewport, **touch)
        page.goto(f"/join/{cohort.join_token}/" + PROLIFIC.format(pid=pid_for(pid)))
        wait_view(page, "description")
        page.get_by_role("button", name="Start").click()
        wait_view(page, "item")
        words = page.locator(".tokens .tok").all_inner_texts()
        return page, Enrollment.objects.get(worker__external_id=pid_for(pid)), first, words

    return start


def _marks(page) -> list[str]:
    return page.locator("[data-chips] li span").all_inner_texts()


def test_touch_commas_inside_a_name_lists_and_names_that_touch(pages, shoot, demo_data):
    from playwright.sync_api import expect

    page, enrollment, first, words = _one_item("GESTURES-TOUCH", PHONE, has_touch=True, is_mobile=True)(pages)
    at = {w: i for i, w in reversed(list(enumerate(words)))}  # a word's first occurrence
    finger = person.Finger(page)
    hint = page.locator("#mark-help")
    expect(hint.locator(".hint-touch").first).to_be_visible()
    expect(hint).to_contain_text("a comma or dash inside it too")
    expect(hint).to_contain_text("A name right after another: touch and hold its first word")
    marks = page.locator("[data-chips] li span")

    # A comma inside a name: tapped in its turn, or afterwards (it joins the two marks either side of it).
    for word in ("Flagstaff", ",", "Arizona"):
        finger.tap(at[word])
    expect(marks).to_have_text(["Flagstaff , Arizona"])
    finger.tap(at["Flagstaff"])
    expect(marks).to_have_text([])
    finger.tap(at["Flagstaff"])
    finger.tap(at["Arizona"])
    expect(marks).to_have_text(["Flagstaff", "Arizona"])
    finger.tap(at[","])
    expect(marks).to_have_text(["Flagstaff , Arizona"])

    # A list: one tap a name, the commas between them never tapped, never joined.
    for word in ("Germany", "France", "Italy", "Hewlett-Packard"):
        finger.tap(at[word])
    expect(marks).to_have_text(["Flagstaff , Arizona", "Germany", "France", "Italy", "Hewlett-Packard"])

    # Names that touch: a hold starts the second one; a hold inside a mark made by taps splits it there.
    finger.tap(at["Real"])
    finger.tap(at["Madrid"])
    finger.tap(at["Barcelona"])
    expect(marks).to_contain_text(["Real Madrid Barcelona"])
    finger.hold(at["Barcelona"])
    expect(marks).to_have_text(
        ["Flagstaff , Arizona", "Real Madrid", "Barcelona", "Germany", "France", "Italy", "Hewlett-Packard"]
    )
    expect(page.locator("[data-touch-text]")).to_contain_text("Two names")
    shoot(page, "24-touch-names-that-touch", phone=False)
    finger.tap(at["Barcelona"])  # removed; held again: a new name of its own, not "Real Madrid Barcelona"
    finger.hold(at["Barcelona"])
    expect(marks).to_contain_text(["Real Madrid", "Barcelona"])
    handle = item_handle(page)
    page.locator('[data-role="submit"]').tap()
    after_item(page, handle)
    assert sorted(stored_answer(enrollment.pk, first).texts) == sorted(GOLD)


def test_touch_hold_and_slide_marks_one_name_across_lines_without_scrolling(pages, demo_data):
    from playwright.sync_api import expect

    page, _, _, words = _one_item("GESTURES-SLIDE", PHONE, has_touch=True, is_mobile=True)(pages)
    finger = person.Finger(page)
    lines = _lines(page)
    a = words.index("Real")
    b = next(i for i in range(a + 1, len(words)) if lines[i] > lines[a])  # the first word of the next line
    marks = page.locator("[data-chips] li span")
    y = page.evaluate("scrollY")
    finger.drag(a, b, hold=True)
    expect(marks).to_have_count(1)
    assert marks.first.inner_text().startswith("Real Madrid") and marks.first.inner_text().endswith(words[b])
    assert page.evaluate("scrollY") == y  # the slide marked; it did not scroll the page
    # The same slide from a word after another name: the held word starts its own name.
    finger.tap(at := words.index("Germany"))
    finger.drag(at + 2, at + 4, hold=True)
    expect(marks).to_have_text([marks.first.inner_text(), "Germany", "France and Italy"])


def test_mouse_drag_press_and_hold_and_ctrl_click(pages, demo_data):
    from playwright.sync_api import expect

    page, _, _, words = _one_item("GESTURES-MOUSE", LAPTOP)(pages)
    at = {w: i for i, w in reversed(list(enumerate(words)))}
    expect(page.locator("#mark-help .hint-mouse").first).to_be_visible()
    expect(page.locator("#mark-help")).to_contain_text("Ctrl-click (or press and hold) its first word")
    marks = page.locator("[data-chips] li span")
    drag(page, at["Flagstaff"], at["Arizona"])
    expect(marks).to_have_text(["Flagstaff , Arizona"])
    tok(page, at["Real"]).click()
    tok(page, at["Madrid"]).click()
    box = tok(page, at["Barcelona"]).bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.wait_for_timeout(700)
    page.mouse.up()
    expect(marks).to_have_text(["Flagstaff , Arizona", "Real Madrid", "Barcelona"])
    tok(page, at["Barcelona"]).click()
    tok(page, at["Barcelona"]).click(modifiers=["Control"])
    expect(marks).to_have_text(["Flagstaff , Arizona", "Real Madrid", "Barcelona"])
    tok(page, at["Germany"]).click()
    tok(page, at["France"]).click()
    expect(marks).to_have_text(["Flagstaff , Arizona", "Real Madrid", "Barcelona", "Germany", "France"])
