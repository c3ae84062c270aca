"""Worker pages in Chromium at both review widths: what slowed a paid worker down.

* the test step forgives: a choice first, then Enter or Submit; the last test answer can be changed
  (keyboard "U") until the next is submitted, audited with both values;
* the action bar (answer, "No answer", Submit) stays on screen: measured on every SQuADv2 test item
  of the official data at 1366x800 and 390x844;
* touch: a tap marks a word, a tap on the word right after (or before) a mark extends it, any other tap starts a
  new mark (a name of k words is k taps, separate names never merge), a tap on a mark removes it, nothing appears
  under the finger; a drag marks too;
* "N" for "none" / "no answer", shown on the button; instructions remembered open or closed;
* exact match explained (differing characters highlighted; punctuation wide enough to hit);
* MNLI lists its labels in one order; entity types keep one colour on badge and marks.
"""

from __future__ import annotations

import json
import os
import re
import statistics

import pytest

from annotation import services
from annotation.models import Answer, AuditEvent, Enrollment
from tasks_data.models import Example
from tests.annotation.factories import pid_for
from tests.browser import walk
from tests.browser.journeys import (
    LAPTOP,
    PHONE,
    chips,
    current_example,
    item_handle,
    item_id,
    stored_answer,
    tok,
    view,
    wait_view,
)
from tests.worker_pages.factories import cohort_of, make_study

expect = pytest.importorskip("playwright.sync_api").expect
pytestmark = pytest.mark.django_db(transaction=True)

PROLIFIC = "?PROLIFIC_PID={pid}&STUDY_ID=STUDY1&SESSION_ID=SESS-{pid}"


def _join_and_start(page, cohort, pid: str) -> Enrollment:
    page.goto(f"/join/{cohort.join_token}/" + PROLIFIC.format(pid=pid_for(pid)))
    wait_view(page, "description")
    page.get_by_role("button", name="Start").click()
    wait_view(page, "item")
    return Enrollment.objects.get(worker__external_id=pid_for(pid))


def _on_screen(page, selector: str) -> bool:
    """The element is wholly inside the viewport and is what a click at its centre hits."""
    return page.evaluate(
        """sel => { const el = document.querySelector(sel); if (!el) return false;
                    const r = el.getBoundingClientRect();
                    if (r.top < 0 || r.left < 0 || r.bottom > innerHeight || r.right > innerWidth) return false;
                    const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
                    return !!hit && (hit === el || el.contains(hit)); }""",
        selector,
    )


# ---------------------------------------------------------------- item 1 (and 8): choose, submit, change the last


@pytest.mark.parametrize("size", [PHONE, LAPTOP], ids=["phone", "laptop"])
def test_test_step_choose_then_submit_and_change_the_last_answer(pages, shoot, demo_data, size):
    study = make_study(tasks=("mnli",), shots=(0,))
    cohort = cohort_of(study, "mnli", 0)
    page = pages.new(viewport=size)
    enrollment = _join_and_start(page, cohort, f"MN-UNDO-{size['width']}")
    # Item 8: the question lists the labels in the order of the buttons and their number keys.
    expect(page.locator("h1.question")).to_contain_text("entailment, neutral, or contradiction")
    expect(page.locator(".label-btn")).to_have_text(
        [re.compile(r"1\s+entailment"), re.compile(r"2\s+neutral"), re.compile(r"3\s+contradiction")]
    )
    first = current_example(page)
    first_handle = item_handle(page)
    expect(page.locator('[data-role="submit"]')).to_be_disabled()
    page.keyboard.press("2")  # a number key chooses, nothing is sent
    expect(page.locator("[data-choice]")).to_have_text("neutral")
    expect(page.locator('input[value="neutral"]')).to_be_checked()
    assert _on_screen(page, '[data-role="submit"]')
    page.keyboard.press("1")  # changing one's mind before submitting costs nothing
    expect(page.locator("[data-choice]")).to_have_text("entailment")
    assert stored_answer(enrollment.pk, first.pk) is None
    page.keyboard.press("Enter")
    wait_view(page, "item")
    page.wait_for_function(f"() => document.querySelector('input[name=item]').value !== '{first_handle}'")
    assert stored_answer(enrollment.pk, first.pk).texts == ["entailment"]
    expect(page.locator('[data-role="previous"]')).to_contain_text("Your answer to item 1: entailment")
    shoot(page, f"17-test-item-with-previous-{size['width']}", phone=False)

    # "U" opens the last answer again, chosen; a new choice and Enter change it.
    page.keyboard.press("u")
    expect(page.locator(".banner.revising")).to_contain_text("Changing your answer to test item 1")
    assert item_id(page) == first.pk
    expect(page.locator('input[value="entailment"]')).to_be_checked()
    shoot(page, f"18-change-last-answer-{size['width']}", phone=False)
    page.keyboard.press("3")
    page.keyboard.press("Enter")
    expect(page.locator(".notice")).to_contain_text("Your answer to test item 1 is changed")
    stored = stored_answer(enrollment.pk, first.pk)
    assert stored.texts == ["contradiction"] and stored.s1 == (1.0 if first.gold == ["contradiction"] else 0.0)
    (event,) = AuditEvent.objects.filter(enrollment=enrollment, action="revise test answer")
    assert json.loads(event.reason)["before"]["texts"] == ["entailment"]
    assert json.loads(event.reason)["after"]["texts"] == ["contradiction"]

    # "Keep it" leaves the answer as it is.
    page.get_by_role("link", name="Change it").click()
    wait_view(page, "item")
    page.get_by_role("link", name="keep it").click()
    expect(page.locator('[data-role="previous"]')).to_be_visible()
    assert stored_answer(enrollment.pk, first.pk).texts == ["contradiction"]

    # Answer item 2 with the mouse: choose, then Submit. Item 1 is now final, even for a replayed POST.
    second_handle = item_handle(page)
    page.locator(".label-btn", has_text="neutral").click()
    assert _on_screen(page, '[data-role="submit"]')
    page.locator('[data-role="submit"]').click()
    page.wait_for_function(f"() => document.querySelector('input[name=item]').value !== '{second_handle}'")
    expect(page.locator('[data-role="previous"]')).to_contain_text("Your answer to item 2: neutral")
    token = page.locator('input[name="csrfmiddlewaretoken"]').first.input_value()
    response = page.request.post(
        "/work/revise/", form={"csrfmiddlewaretoken": token, "item": first_handle, "label": "neutral"}
    )
    assert response.status == 409
    assert stored_answer(enrollment.pk, first.pk).texts == ["contradiction"]
    pages.expect_error(r"console\.error: Failed to load resource: .* 409")


# ---------------------------------------------------------------- item 2: the action bar on every SQuADv2 item


def test_action_bar_on_screen_for_every_squad2_test_item(pages, clues_data):
    """Submit and "No answer" on screen without scrolling, at 1366x800 and 390x844, on the official SQuADv2 test
    items: the 40 with the longest paragraph or question in the suite (about 30 s), all of them with
    CLUES_UX_ALL=1 (about 3 min)."""
    study = make_study(tasks=("squad2",), shots=(0,), sitting_minutes=240)  # every item in one sitting
    cohort = cohort_of(study, "squad2", 0)
    laptop = pages.new(viewport=LAPTOP)
    enrollment = _join_and_start(laptop, cohort, "SQ-BAR")
    phone = pages.new(viewport=PHONE)
    phone.context.add_cookies(laptop.context.cookies())
    order = services.item_order(enrollment=enrollment, step="test")
    examples = Example.objects.in_bulk(order)
    longest = sorted(order, key=lambda pk: -len(examples[pk].context))[:30]
    longest += sorted(order, key=lambda pk: -len(examples[pk].question))[:10]
    measure = set(order) if os.environ.get("CLUES_UX_ALL") else set(longest)
    missing = {"laptop": [], "phone": []}
    screens = {"laptop": [], "phone": []}
    for pk in order:
        item = services.current_item(enrollment_id=enrollment.pk).item
        assert item.pk == pk
        if pk in measure:
            for name, page in (("laptop", laptop), ("phone", phone)):
                page.goto("/work/")
                wait_view(page, "item")
                assert item_id(page) == pk
                for sel in ('[data-role="submit"]', '[data-role="none"]'):
                    if not _on_screen(page, sel):
                        missing[name].append((pk, sel))
                screens[name].append(page.evaluate("document.documentElement.scrollHeight / innerHeight"))
        handle = services.item_handle(enrollment_id=enrollment.pk, item_id=pk)
        services.submit_answer(enrollment_id=enrollment.pk, item=handle, answer=[])
    print(
        f"\nSQuADv2 test items measured: {len(measure)} of {len(order)}; page height in screens (median / max): "
        f"laptop {statistics.median(screens['laptop']):.2f} / {max(screens['laptop']):.2f}, "
        f"phone {statistics.median(screens['phone']):.2f} / {max(screens['phone']):.2f}; "
        f"Submit or No answer off-screen: laptop {len(missing['laptop'])}, phone {len(missing['phone'])}"
    )
    assert missing == {"laptop": [], "phone": []}


# ---------------------------------------------------------------- item 3: touch marking


def _multiword_item(page, enrollment) -> tuple[Example, int, int]:
    """Answer (through the services) up to a test item whose first gold name has several words."""
    while True:
        example = current_example(page)
        if example.gold and " " in example.gold[0]:
            toks = [(int(tok(page, i).get_attribute("data-s")), i) for i in range(page.locator(".tok").count())]
            start = example.context.find(example.gold[0])
            end = start + len(example.gold[0])
            first = next(i for s, i in toks if s == start)
            last = max(i for s, i in toks if s < end)
            return example, first, last
        handle = services.item_handle(enrollment_id=enrollment.pk, item_id=example.pk)
        services.submit_answer(enrollment_id=enrollment.pk, item=handle, answer=[])
        page.goto("/work/")
        wait_view(page, "item")


def _marked(page, texts: list[str]):
    """Waits for the page's own list of marks to read ``texts`` (in text order)."""
    expect(page.locator("[data-chips] li span")).to_have_text(texts)


def test_touch_a_tap_marks_the_next_word_extends_and_nothing_appears_under_the_finger(pages, shoot, demo_data):
    study = make_study(tasks=("conll03",), shots=(0,))
    cohort = cohort_of(study, "conll03", 0)
    page = pages.new(viewport=PHONE, has_touch=True, is_mobile=True)
    enrollment = _join_and_start(page, cohort, "TOUCH-1")
    # On a phone the instructions start closed (they would hide the text), until the worker chooses.
    expect(page.locator("details.instructions")).not_to_have_attribute("open", "")
    assert "clues_instructions" not in page.evaluate("document.cookie")
    example, first, last = _multiword_item(page, enrollment)
    example_handle = item_handle(page)
    words = [page.locator(".tok").nth(i).inner_text() for i in range(first, last + 1)]
    expect(page.locator(".hint-touch").first).to_be_visible()
    row = page.locator("[data-touch-pending]")
    expect(row).to_be_visible()  # the row is there before any tap: a tap never makes the bar grow
    bar_before = page.locator(".action-bar").bounding_box()
    tok(page, first).tap()
    _marked(page, [words[0]])  # one tap marks its word at once
    expect(page.locator('[data-role="separate"]')).to_be_visible()
    assert page.locator(".action-bar").bounding_box() == bar_before  # the same place and size: nothing moved
    shoot(page, "19-touch-pending", phone=False)
    for i in range(first + 1, last + 1):  # each next word extends the mark
        tok(page, i).tap()
    _marked(page, [example.gold[0]])  # one mark over the whole name, not one mark per word

    # Any other word starts a new mark at once (no "Done"); a tap on a mark removes it.
    others = [i for i in range(page.locator(".tok").count()) if i < first - 1 or i > last + 1]
    one, two = others[0], others[-1]
    assert two > one + 1
    tok(page, one).tap()
    tok(page, two).tap()
    expect(page.locator("[data-chips] li")).to_have_count(3)
    tok(page, two).tap()  # a tap on the mark just made removes it
    expect(page.locator("[data-chips] li")).to_have_count(2)
    tok(page, one).tap()
    _marked(page, [example.gold[0]])
    tok(page, first).tap()  # a tap on a marked word removes the whole mark
    _marked(page, [])

    # The last word first: a tap on the word right before a mark extends it too.
    for i in range(last, first - 1, -1):
        tok(page, i).tap()
    _marked(page, [example.gold[0]])
    page.get_by_role("button", name=re.compile("^Remove")).tap()
    _marked(page, [])

    # Two names that touch stay apart with "New name" between them (or a hold: tests/browser/test_ner_marking.py).
    tok(page, first).tap()
    page.locator('[data-role="separate"]').tap()
    expect(page.locator('[data-role="separate"]')).to_have_attribute("aria-pressed", "true")
    tok(page, first + 1).tap()
    _marked(page, words[:2])
    expect(page.locator('[data-role="separate"]')).to_have_attribute("aria-pressed", "false")
    tok(page, first).tap()
    tok(page, first + 1).tap()
    _marked(page, [])

    # A drag with a finger along the line marks the words it crosses.
    a, b = tok(page, first).bounding_box(), tok(page, last).bounding_box()
    if abs(a["y"] - b["y"]) < 2:
        cdp = page.context.new_cdp_session(page)
        y = a["y"] + a["height"] / 2
        cdp.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [{"x": a["x"] + 2, "y": y}]})
        for x in ((a["x"] + b["x"]) / 2, b["x"] + b["width"] - 2):
            cdp.send("Input.dispatchTouchEvent", {"type": "touchMove", "touchPoints": [{"x": x, "y": y}]})
        cdp.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
        cdp.detach()
        _marked(page, [example.gold[0]])
    else:
        for i in range(first, last + 1):
            tok(page, i).tap()
    assert _on_screen(page, '[data-role="submit"]')
    # (A touch tap right after the synthetic CDP gesture gets no click in headless Chromium: a click here.)
    page.locator('[data-role="submit"]').click()
    page.wait_for_function(f"() => document.querySelector('input[name=item]')?.value !== '{example_handle}'")
    assert example.gold[0] in stored_answer(enrollment.pk, example.pk).texts


def test_touch_names_take_as_many_taps_as_words_and_never_merge(pages, shoot, demo_data):
    """Two separate one-word names and a two-word name: one tap per word, then Submit, in any order."""
    study = make_study(tasks=("conll03",), shots=(0,))
    cohort = cohort_of(study, "conll03", 0)
    first = services.item_order(enrollment=Enrollment(cohort=cohort), step="test")[0]
    context = "Anna met Ben and Marie Curie in Rome ."
    gold = ["Anna", "Ben", "Marie Curie"]
    question = "List all the people names in the context"
    Example.objects.filter(pk=first).update(context=context, question=question, gold=gold)
    page = pages.new(viewport=PHONE, has_touch=True, is_mobile=True)
    enrollment = _join_and_start(page, cohort, "TAPS-1")
    assert current_example(page).pk == first
    handle = item_handle(page)
    index = {page.locator(".tok").nth(i).inner_text(): i for i in range(page.locator(".tok").count())}
    words = sum(len(g.split()) for g in gold)

    # The naive sequences: the words in reading order, and in other orders (a name's words backwards).
    for sequence in (
        ["Anna", "Ben", "Marie", "Curie"],
        ["Curie", "Marie", "Ben", "Anna"],
        ["Ben", "Marie", "Curie", "Anna"],
    ):
        for word in sequence:
            tok(page, index[word]).tap()
        _marked(page, gold)  # never "Anna met Ben" nor "Ben and Marie Curie"
        for name in gold:  # a tap on a mark removes it
            tok(page, index[name.split()[0]]).tap()
        _marked(page, [])

    taps = 0
    for word in ("Anna", "Ben", "Marie", "Curie"):
        tok(page, index[word]).tap()
        taps += 1
    _marked(page, gold)
    # The marks wrap: each one's remove button is on screen, not scrolled off the bar's row.
    assert all(walk.on_screen(page, ".chip-remove", nth=i) for i in range(len(gold)))
    shoot(page, "19-touch-three-names", phone=False)
    page.locator('[data-role="submit"]').tap()
    taps += 1
    assert taps == words + 1
    page.wait_for_function(f"() => document.querySelector('input[name=item]')?.value !== '{handle}'")
    assert sorted(stored_answer(enrollment.pk, first).texts) == sorted(gold)

    # The same rule for the mouse: a click per word, in any order, never merges names.
    laptop = pages.new(viewport=LAPTOP)
    clicker = _join_and_start(laptop, cohort, "CLICKS-1")
    assert current_example(laptop).pk == first
    handle = item_handle(laptop)
    for word in ("Curie", "Ben", "Marie", "Anna"):
        tok(laptop, index[word]).click()
    _marked(laptop, gold)
    laptop.locator('[data-role="submit"]').click()
    laptop.wait_for_function(f"() => document.querySelector('input[name=item]')?.value !== '{handle}'")
    assert sorted(stored_answer(clicker.pk, first).texts) == sorted(gold)


# ---------------------------------------------------------------- items 4, 5, 6, 9 (laptop and phone)


def test_none_key_instructions_remembered_exact_match_and_type_colours(pages, shoot, demo_data):
    study = make_study(tasks=("squad2",), shots=(10,))
    cohort = cohort_of(study, "squad2", 10)
    first = services.item_order(enrollment=Enrollment(cohort=cohort), step="training")[0]
    context = "The band played in Paris. Then it went home, to Lyon."
    Example.objects.filter(pk=first).update(
        context=context, question="Where did the band play?", gold=["Paris"], is_impossible=False
    )
    page = pages.new(viewport=LAPTOP)
    enrollment = _join_and_start(page, cohort, "EXACT-1")

    # Item 5: instructions open by default, and as the worker leaves them.
    details = page.locator("details.instructions")
    expect(details).to_have_attribute("open", "")
    expect(details).to_contain_text("Answers are matched exactly")
    page.locator("details.instructions summary").click()
    expect(details).not_to_have_attribute("open", "")

    # Item 6: the full stop is a token wide enough to hit; marking "Paris." scores 0 and says why.
    texts = page.locator(".tok").all_inner_texts()
    dot = tok(page, texts.index("Paris") + 1)
    assert dot.inner_text() == "." and dot.bounding_box()["width"] >= 13  # a bare "." is about 5 px
    tok(page, texts.index("Paris")).click()
    dot.click(modifiers=["Shift"])
    assert chips(page) == ["Paris."]
    # Item 4: "N" needs nothing to be marked; it says so.
    expect(page.locator('[data-role="none"] kbd')).to_have_text("N")
    page.keyboard.press("n")
    expect(page.locator("[data-status]")).to_contain_text("remove your marks first")
    page.locator('[data-role="submit"]').click()
    wait_view(page, "feedback")
    expect(page.locator(".verdict")).to_contain_text("Not correct")
    expect(page.locator(".near-miss")).to_contain_text("Answers are matched exactly")
    expect(page.locator(".near-miss .chip.mine .diff")).to_have_text(".")
    # ... and the instructions, closed as left, are on the feedback page too.
    expect(page.locator("details.instructions")).to_be_attached()
    expect(page.locator("details.instructions")).not_to_have_attribute("open", "")
    shoot(page, "20-feedback-exact-match")
    page.locator('[data-role="next"]').click()
    wait_view(page, "item")
    expect(page.locator("details.instructions")).not_to_have_attribute("open", "")
    page.locator("details.instructions summary").click()
    page.wait_for_function("() => document.cookie.includes('clues_instructions=open')")
    page.reload()
    wait_view(page, "item")
    expect(page.locator("details.instructions")).to_have_attribute("open", "")

    # Item 4: "N" focuses "No answer", Enter sends it (two keys, a choice and a confirmation).
    example = current_example(page)
    page.locator("h1.question").click()
    page.keyboard.press("n")
    expect(page.locator('[data-role="none"]')).to_be_focused()
    assert stored_answer(enrollment.pk, example.pk) is None
    page.keyboard.press("Enter")
    wait_view(page, "feedback")
    assert stored_answer(enrollment.pk, example.pk).texts == []


def test_entity_types_keep_one_colour_on_badge_and_marks(pages, shoot, demo_data):
    study = make_study(tasks=("conll03",), shots=(10,))
    cohort = cohort_of(study, "conll03", 10)
    page = pages.new(viewport=PHONE)
    enrollment = _join_and_start(page, cohort, "TYPES-1")
    colours = {}
    for _ in range(9):  # until each kind of name has been asked for
        if len(colours) == 3:
            break
        badge = page.locator("h1 .kind-badge")
        kind = badge.inner_text().strip().lower()
        tok(page, 0).click()
        badge_colour = badge.evaluate("el => getComputedStyle(el).backgroundColor")
        mark_colour = tok(page, 0).evaluate("el => getComputedStyle(el).boxShadow")
        chip_colour = page.locator("[data-chips] li").first.evaluate("el => getComputedStyle(el).borderColor")
        assert badge_colour in mark_colour and badge_colour == chip_colour, (kind, badge_colour, mark_colour)
        colours[kind] = badge_colour
        if kind == "organizations":
            shoot(page, "21-entity-type-colour")
        page.locator('[data-role="submit"]').click()
        wait_view(page, "feedback")
        expect(page.locator(".feedback .kind-badge")).to_have_text(kind)
        page.locator('[data-role="next"]').click()
        wait_view(page, "item")
    assert len(set(colours.values())) == 3, colours  # three kinds, three colours
    assert Answer.objects.filter(enrollment=enrollment).count() >= 3
    assert view(page) == "item"


def test_changing_the_last_span_and_entity_answers_starts_from_them(pages, shoot, demo_data):
    study = make_study(tasks=("squad2", "record"), shots=(0,))
    page = pages.new(viewport=LAPTOP)
    enrollment = _join_and_start(page, cohort_of(study, "squad2", 0), "REV-SPANS")
    example = current_example(page)
    example_handle = item_handle(page)
    tok(page, 1).click()
    tok(page, 2).click(modifiers=["Shift"])
    marked = chips(page)
    page.keyboard.press("Enter")
    page.wait_for_function(f"() => document.querySelector('input[name=item]').value !== '{example_handle}'")
    page.keyboard.press("u")
    expect(page.locator(".banner.revising")).to_be_visible()
    assert item_id(page) == example.pk
    expect(page.locator("[data-chips] li span")).to_have_text(marked)  # the stored answer, marked again
    expect(page.locator('[data-role="submit"]')).to_have_text("Change answer")
    shoot(page, "22-change-last-span-answer")
    page.get_by_role("button", name=re.compile("^Remove")).click()  # unmark, then "N" and Enter
    assert chips(page) == []
    page.locator("h1.question").click()
    page.keyboard.press("n")
    expect(page.locator('[data-role="none"]')).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator(".notice")).to_contain_text("is changed")
    assert stored_answer(enrollment.pk, example.pk).texts == []

    other = pages.new(viewport=PHONE)
    enrollment = _join_and_start(other, cohort_of(study, "record", 0), "REV-ENT")
    example = current_example(other)
    example_handle = item_handle(other)
    cand = other.locator(".cand").nth(1)
    name = cand.inner_text()
    cand.click()
    other.locator('[data-role="submit"]').click()
    other.wait_for_function(f"() => document.querySelector('input[name=item]').value !== '{example_handle}'")
    other.locator('[data-role="undo"]').click()
    expect(other.locator(".banner.revising")).to_be_visible()
    expect(other.locator(".cand.chosen")).to_have_count(1)
    expect(other.locator("[data-choice]")).to_have_text(name)
    expect(other.locator('[data-role="submit"]')).to_have_text(f"Submit \u201c{name}\u201d")
    shoot(other, "23-change-last-entity-answer", phone=False)
