"""Workers, end to end in Chromium: join, read the description, train with feedback, test, finish.

Demo data (12 test items per task, 10-shot training files). Each journey checks on the way that
submitted answers cannot be changed (back button, reload, second tab, replayed POST) and
saves screenshots of each page kind at laptop and phone width.
"""

from __future__ import annotations

import re

import pytest

from annotation import services
from annotation.models import Answer, Enrollment
from tests.annotation.factories import done_code, pid_for, screen_out_code
from tests.browser.journeys import (
    after_item,
    chips,
    click_shift_click,
    current_example,
    drag,
    gold_token_ranges,
    item_handle,
    item_id,
    stored_answer,
    tok,
    view,
    wait_view,
)
from tests.browser.replays import join_page, sst2_worker_keyboard_only
from tests.worker_pages.factories import cohort_of, make_study

expect = pytest.importorskip("playwright.sync_api").expect
pytestmark = pytest.mark.django_db(transaction=True)

PROLIFIC = "?PROLIFIC_PID={pid}&STUDY_ID=STUDY1&SESSION_ID=SESS-{pid}"


def _start(page):
    page.get_by_role("button", name="Start").click()
    wait_view(page, "item")


def _mark_gold(page, example, n: int) -> list[str]:
    """Mark the gold spans with the mouse, alternating drag and click + shift-click; returns the texts."""
    ranges = gold_token_ranges(page, example)
    for j, (first, last) in enumerate(ranges):
        if first != last and (n + j) % 2 == 0:
            drag(page, first, last)
        else:
            click_shift_click(page, first, last)
    return [
        example.context[int(tok(page, a).get_attribute("data-s")) : int(tok(page, b).get_attribute("data-e"))]
        for a, b in ranges
    ]


def test_ner_worker_prolific_mouse(pages, shoot, demo_data):
    study = make_study(tasks=("conll03",), shots=(10,), workers_per_cohort=2)
    cohort = cohort_of(study, "conll03", 10)
    page = pages.new()
    page.route(
        "https://app.prolific.com/**",
        lambda route: route.fulfill(
            status=200, content_type="text/html", body="<!doctype html><title>Prolific</title><h1>Prolific</h1>"
        ),
    )
    join_page(page, cohort, PROLIFIC.format(pid=pid_for("NER-W1")))
    expect(page.locator("h1")).to_contain_text("CoNLL03")
    shoot(page, "01-description")
    _start(page)
    enrollment = Enrollment.objects.get(worker__external_id=pid_for("NER-W1"))

    n = 0
    shot_none = shot_spans = shot_feedback = seen_test = False
    while view(page) == "item":
        example = current_example(page)
        shown = item_handle(page)  # the handle the page posts
        step = (
            "training"
            if enrollment.cohort.shots and page.locator(".steps li.current").inner_text() == "Training"
            else "test"
        )
        expected = sorted(dict.fromkeys(example.gold))
        if step == "test" and not seen_test:
            expect(page.locator(".banner[role=status]")).to_contain_text("training step is over")
            shoot(page, "05-first-test-item")
            seen_test = True
        if not example.gold:
            if not shot_none and step == "training":
                shoot(page, "02-widget-spans-empty")
                shot_none = True
            page.get_by_role("button", name="None in this text").click()
        else:
            texts = _mark_gold(page, example, n)
            assert sorted(chips(page)) == sorted(texts)
            if not shot_spans and len(texts) > 1:
                shoot(page, "03-widget-spans-marked")
                shot_spans = True
            # The "none" choice is off while something is marked: the empty set cannot go by accident.
            expect(page.get_by_role("button", name="None in this text")).to_be_disabled()
            if n % 2:
                page.keyboard.press("Enter")
            else:
                page.locator('[data-role="submit"]').click()
        old = example.pk
        new_view = after_item(page, shown)
        answer = stored_answer(enrollment.pk, old)
        assert answer is not None and sorted(answer.texts) == expected, (example.context, answer and answer.texts)
        if step == "training":
            assert new_view == "feedback"
            expect(page.locator(".verdict")).to_contain_text("Correct")
            gold_chips = page.locator(".compare .gold .chip").all_inner_texts()
            assert sorted(gold_chips) == (expected or ["none in this text"])
            if not shot_feedback and example.gold:
                shoot(page, "04-feedback-spans")
                shot_feedback = True
            if n == 3:
                _cannot_change(page, enrollment, example)
            page.locator('[data-role="next"]').click()
            page.wait_for_function("() => document.getElementById('stage').dataset.view !== 'feedback'")
        n += 1

    # The last test answer: the completion page sends the worker back to Prolific with the code.
    page.wait_for_url(re.compile(r"^https://app\.prolific\.com/"))
    assert f"cc={done_code(cohort)}" in page.url
    enrollment.refresh_from_db()
    assert enrollment.state == Enrollment.State.COMPLETED
    assert Answer.objects.filter(enrollment=enrollment).count() == 30 + 12


def _cannot_change(page, enrollment, example):
    """Back button, reload, a second tab and a replayed POST all leave the stored answer as it was."""
    answer = stored_answer(enrollment.pk, example.pk)
    answer_id = page.locator('.next-form input[name="item"]').input_value()
    page.go_back()
    wait_view(page, "feedback")
    assert page.locator('.next-form input[name="item"]').input_value() == answer_id
    page.reload()
    wait_view(page, "feedback")
    assert page.locator('.next-form input[name="item"]').input_value() == answer_id
    assert page.locator("#answer-form").count() == 0  # nothing to answer on the page

    # A replayed form POST with another answer (the handle the page posted): refused (409), nothing changes.
    token = page.locator('input[name="csrfmiddlewaretoken"]').first.input_value()
    example_handle = services.item_handle(enrollment_id=enrollment.pk, item_id=example.pk)
    response = page.request.post(
        "/work/answer/", form={"csrfmiddlewaretoken": token, "item": example_handle, "none": "1"}
    )
    assert response.status == 409
    assert Answer.objects.get(pk=answer.pk).texts == answer.texts

    # A second tab shows where the worker is; answering a stale copy of the next item is refused.
    page.locator('[data-role="next"]').click()
    wait_view(page, "item")
    stale = page.context.new_page()
    stale.goto("/work/")
    wait_view(stale, "item")
    assert item_id(stale) == item_id(page)
    next_example = current_example(page)
    if next_example.gold:
        ranges = gold_token_ranges(page, next_example)
        for first, last in ranges:
            click_shift_click(page, first, last)
        page.locator('[data-role="submit"]').click()
    else:
        page.get_by_role("button", name="None in this text").click()
    wait_view(page, "feedback")
    first_answer = stored_answer(enrollment.pk, next_example.pk)
    # The stale tab tries "none" (or a mark) on the item already answered.
    if stale.get_by_role("button", name="None in this text").is_enabled():
        stale.get_by_role("button", name="None in this text").click()
    expect(stale.locator(".notice")).to_contain_text("already been answered")
    assert view(stale) == "feedback"
    assert Answer.objects.get(pk=first_answer.pk).texts == first_answer.texts
    stale.close()
    # Back on the first tab: the feedback of that answer; the loop's Next goes on from here.
    page.reload()
    wait_view(page, "feedback")


def test_sst2_worker_keyboard_only(pages, shoot, demo_data):
    sst2_worker_keyboard_only(pages, shoot)


def test_record_worker_picks_entities(pages, shoot, demo_data):
    study = make_study(tasks=("record",), shots=(10,))
    cohort = cohort_of(study, "record", 10)
    page = pages.new()
    page.route("https://app.prolific.com/**", lambda route: route.fulfill(status=200, body="ok"))
    join_page(page, cohort, PROLIFIC.format(pid=pid_for("REC-1")))
    _start(page)
    enrollment = Enrollment.objects.get(worker__external_id=pid_for("REC-1"))
    n = 0
    while view(page) == "item":
        example = current_example(page)
        shown = item_handle(page)  # the handle the page posts
        good = [c for c in example.candidates if example.context[c[0] : c[1]] in example.gold]
        choice = page.locator(f'.cand[data-s="{good[0][0]}"][data-e="{good[0][1]}"]')
        if n % 3 == 1:  # keyboard: focus the entity, Enter chooses it and moves to Submit, Enter submits
            choice.focus()
            page.keyboard.press("Enter")
            expect(page.locator('[data-role="submit"]')).to_be_focused()
            expect(page.locator("[data-blank]").first).to_have_text(example.context[good[0][0] : good[0][1]])
            page.keyboard.press("Enter")
        else:
            choice.click()
            expect(page.locator("[data-choice]")).to_have_text(example.context[good[0][0] : good[0][1]])
            if n == 0:
                shoot(page, "09-widget-entity")
            page.locator('[data-role="submit"]').click()
        new_view = after_item(page, shown)
        assert stored_answer(enrollment.pk, example.pk).s1 == 1.0
        if new_view == "feedback":
            if n == 0:
                shoot(page, "10-feedback-entity")
            page.locator('[data-role="next"]').click()
            page.wait_for_function("() => document.getElementById('stage').dataset.view !== 'feedback'")
        n += 1
    page.wait_for_url(re.compile(rf"^https://app\.prolific\.com/.*cc={done_code(cohort)}"))


def test_squad_span_offsets_are_code_points(pages, shoot, demo_data):
    """An astral character (emoji, 2 UTF-16 units, 1 code point) before the answer: offsets stay right."""
    study = make_study(tasks=("squad2",), shots=(10,))
    cohort = cohort_of(study, "squad2", 10)
    first = services.item_order(enrollment=Enrollment(cohort=cohort), step="training")[0]
    from tasks_data.models import Example

    context = 'Fans 😀🎉 cheered 𝒳 & <b>"loud"</b> as Zoë Ñúñez, the singer, arrived in Paris.'
    Example.objects.filter(pk=first).update(
        context=context, question="Who arrived in Paris?", gold=["Zoë Ñúñez"], is_impossible=False
    )
    page = pages.new()
    join_page(page, cohort, PROLIFIC.format(pid=pid_for("SQ-1")))
    _start(page)
    assert item_id(page) == first
    expect(page.locator(".tokens")).to_contain_text('<b>"loud"</b>')  # dataset text shown as text
    toks = page.locator(".tokens .tok")
    texts = toks.all_inner_texts()
    click_shift_click(page, texts.index("Zoë"), texts.index("Ñúñez"))
    assert chips(page) == ["Zoë Ñúñez"]
    page.locator(".tokens .tok", has_text="Paris").click()
    assert chips(page) == ["Paris"]  # one span at most: a new mark replaces the old one
    drag(page, texts.index("Zoë"), texts.index("Ñúñez"))
    assert chips(page) == ["Zoë Ñúñez"]  # one span at most: the new mark replaced the old one
    shoot(page, "11-widget-span-or-none")
    page.locator('[data-role="submit"]').click()
    wait_view(page, "feedback")
    enrollment = Enrollment.objects.get(worker__external_id=pid_for("SQ-1"))
    answer = stored_answer(enrollment.pk, first)
    start = context.index("Zoë")
    assert answer.spans == [[start, start + len("Zoë Ñúñez")]] and answer.texts == ["Zoë Ñúñez"]
    assert answer.s1 == 1.0
    shoot(page, "12-feedback-span")
    page.locator('[data-role="next"]').click()
    wait_view(page, "item")
    example = current_example(page)
    page.get_by_role("button", name="No answer in the text").click()
    wait_view(page, "feedback")
    assert stored_answer(enrollment.pk, example.pk).texts == []
    if example.gold:
        expect(page.locator(".verdict")).to_contain_text("Not correct")
        expect(page.locator(".compare .mine .chip")).to_have_text("no answer")
        shoot(page, "12b-feedback-wrong")


def test_mnli_filtered_and_no_enrollment_pages(pages, shoot, demo_data):
    study = make_study(tasks=("mnli",), shots=(10,))
    cohort = cohort_of(study, "mnli", 10)
    page = pages.new()
    join_page(page, cohort, PROLIFIC.format(pid=pid_for("MN-1")))
    _start(page)
    expect(page.locator(".block-label")).to_have_text(["Premise", "Hypothesis"])
    expect(page.locator(".question")).not_to_contain_text("contraction")
    shoot(page, "13-widget-label-pair")
    enrollment = Enrollment.objects.get(worker__external_id=pid_for("MN-1"))
    services.filter_enrollment(enrollment_id=enrollment.pk, actor="researcher", reason="test of the filtered page")
    page.reload()
    wait_view(page, "filtered")
    expect(page.locator("#code")).to_have_text(screen_out_code(cohort))
    expect(page.get_by_role("link", name="Go back to Prolific with this code")).to_have_attribute(
        "href", f"https://app.prolific.com/submissions/complete?cc={screen_out_code(cohort)}"
    )
    shoot(page, "14-filtered")

    stranger = pages.new()
    pages.expect_error(r"/work/: console\.error: Failed to load resource: .* 403")
    response = stranger.goto("/work/")
    assert response.status == 403
    expect(stranger.locator("h1")).to_have_text("Please use your study link")
    shoot(stranger, "15-no-enrollment")


def test_wikiann_marking_by_keyboard_and_overlaps_refused(pages, shoot, demo_data):
    study = make_study(tasks=("wikiann",), shots=(0,))
    cohort = cohort_of(study, "wikiann", 0)
    page = pages.new()
    join_page(page, cohort, PROLIFIC.format(pid=pid_for("WK-1")))
    _start(page)
    enrollment = Enrollment.objects.get(worker__external_id=pid_for("WK-1"))
    # Find a test item with a multi-word name; answer the ones before it with the gold, by mouse.
    while True:
        example = current_example(page)
        shown = item_handle(page)  # the handle the page posts
        ranges = gold_token_ranges(page, example) if example.gold else []
        if any(b > a for a, b in ranges):
            break
        if ranges:
            for a, b in ranges:
                click_shift_click(page, a, b)
            page.locator('[data-role="submit"]').click()
        else:
            page.get_by_role("button", name="None in this text").click()
        after_item(page, shown)
    first, last = next((a, b) for a, b in ranges if b > a)

    # Overlaps are refused in the page: mark the last word, then try the whole name over it.
    tok(page, last).click()
    assert len(chips(page)) == 1
    drag(page, first, last)
    expect(page.locator("[data-status]")).to_contain_text("overlaps")
    assert len(chips(page)) == 1
    page.get_by_role("button", name=re.compile("^Remove")).click()
    assert chips(page) == []

    # Keyboard: Tab into the text, move with arrows, extend with Shift+arrows, Space marks, Enter submits.
    page.locator(".tokens").focus()
    page.keyboard.press("Home")  # the cursor starts where the mouse last was
    for _ in range(first):
        page.keyboard.press("ArrowRight")
    for _ in range(last - first):
        page.keyboard.press("Shift+ArrowRight")
    shoot(page, "16-widget-spans-keyboard", phone=False)
    page.keyboard.press("Space")
    name = example.context[int(tok(page, first).get_attribute("data-s")) : int(tok(page, last).get_attribute("data-e"))]
    assert chips(page) == [name]
    page.keyboard.press("Space")  # Space on a marked word unmarks it
    assert chips(page) == []
    page.keyboard.press("Home")
    for _ in range(first):
        page.keyboard.press("ArrowRight")
    for _ in range(last - first):
        page.keyboard.press("Shift+ArrowRight")
    page.keyboard.press("Space")
    others = [(a, b) for a, b in ranges if (a, b) != (first, last)]
    for a, b in others:
        page.keyboard.press("Home")
        for _ in range(a):
            page.keyboard.press("ArrowRight")
        for _ in range(b - a):
            page.keyboard.press("Shift+ArrowRight")
        page.keyboard.press("Space")
    page.keyboard.press("Enter")
    after_item(page, shown)
    assert sorted(stored_answer(enrollment.pk, example.pk).texts) == sorted(dict.fromkeys(example.gold))
