"""Attention checks look like items to the worker: the totals the worker is shown count them everywhere, a worker
may change their answer to a check as to any item (until they answer the next one), each worker meets a check at a
place of their own, and a ReCoRD-like check offers candidates as a real item does."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from annotation import attention
from annotation.models import Answer, AttentionAnswer, AttentionCheck, Enrollment
from tasks_data.kinds import entity_candidates
from tasks_data.models import Example
from tests.annotation.factories import WorkerClient, cohort, gold_answer, make_study, trim_test_set

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clues")]

N_TEST = 4
CHECK = {
    "task": "sst2",
    "position": "1",
    "question": "For this item choose negative.",
    "context": "Please read the instruction above and follow it.",
    "expected": "negative",
}


def _study(researcher, check=CHECK, *, task="sst2", n_test=N_TEST, workers=3):
    trim_test_set(task, n_test)
    study = make_study(
        tasks=[task],
        shots=[0],
        created_by=researcher,
        filter_floor=None,
        filter_fraction=None,
        workers_per_cohort=workers,
    )
    client = Client()
    client.force_login(researcher)
    response = client.post(f"/dashboard/studies/{study.pk}/attention-checks/", check)
    assert response.status_code == 302, response.content.decode()[:2000]
    return cohort(study, task, 0)


def _to_the_check(worker) -> dict:
    """Answer test items (the gold) until the check is the item shown; returns it."""
    check_id = AttentionCheck.objects.get().item_id
    while True:
        item = worker.current().json()["item"]
        shown = worker.example(item["id"])
        if shown.pk == check_id:
            return item
        assert worker.answer(item["id"], gold_answer(shown)).status_code == 201


def _seeded(worker: WorkerClient, *, first: bool) -> WorkerClient:
    """The worker's enrollment re-seeded (before any item is served) so that they meet the check first, or later."""
    check = AttentionCheck.objects.get()
    seed = next(k for k in range(1, 1000) if (attention.shown_before(check, seed=k, test_items=N_TEST) == 0) == first)
    Enrollment.objects.filter(pk=worker.enrollment_id).update(order_seed=seed)
    return worker


@pytest.fixture(params=["check first", "check later"])
def worker(researcher, request):
    """A worker of a study with one check, met as their first test item or after one or more items."""
    return _seeded(WorkerClient(_study(researcher), "disguise"), first=request.param == "check first")


def test_the_description_counts_the_items_the_worker_will_see(worker):
    page = worker.client.get("/work/").content.decode()
    assert f"Test: {N_TEST + 1} items" in page, "the progress bar will count the check: so does the description"
    assert worker.current().json()["progress"]["total"] == N_TEST + 1


def test_a_check_answer_can_be_changed_as_any_items_and_is_scored_on_the_final_answer(worker):
    check = _to_the_check(worker)
    before = Answer.objects.filter(enrollment_id=worker.enrollment_id).order_by("-position").first()
    place = worker.current().json()["progress"]["done"]  # the check's place among the items shown (0-based)
    assert worker.answer(check["id"], ["positive"]).status_code == 201  # the wrong label
    assert not AttentionAnswer.objects.get().passed
    # After the check the next page offers to change the last answer, exactly as after a test item.
    page = worker.client.get("/work/").content.decode()
    assert 'data-role="undo"' in page and f"Your answer to item {place + 1}:" in page and "positive" in page
    revising = worker.client.get("/work/revise/").content.decode()
    assert f"Changing your answer to test item {place + 1}." in revising and CHECK["question"] in revising
    changed = worker.send("post", "/api/work/revise/", {"item": check["id"], "answer": ["negative"]})
    assert changed.status_code == 200, changed.content
    assert changed.json() == {"item": check["id"], "position": place, "answer": ["negative"]}
    stored = AttentionAnswer.objects.get()
    assert (stored.texts, stored.passed) == (["negative"], True), "scored on the final answer"
    # Through the page's own form too (an htmx POST), and the answer before the check is final, as any older one.
    posted = worker.client.post(
        "/work/revise/", {"item": check["id"], "label": "positive"}, HTTP_X_CSRFTOKEN=worker.csrf
    )
    assert posted.status_code == 302 and not AttentionAnswer.objects.get().passed
    if before is not None:
        older = worker.handle(before.example_id)
        assert worker.send("post", "/api/work/revise/", {"item": older, "answer": ["negative"]}).status_code == 409
    # Once the next item is answered, the check's answer is final, as any item's.
    nxt = worker.current().json()["item"]
    assert worker.answer(nxt["id"], gold_answer(worker.example(nxt["id"]))).status_code == 201
    assert worker.send("post", "/api/work/revise/", {"item": check["id"], "answer": ["negative"]}).status_code == 409
    assert not AttentionAnswer.objects.get().passed


def test_the_answer_before_a_check_is_final_once_the_check_is_answered(worker):
    check = _to_the_check(worker)
    before = Answer.objects.filter(enrollment_id=worker.enrollment_id).order_by("-position").first()
    if before is None:  # this worker meets the check first: answer it, then an item, then look back
        assert worker.answer(check["id"], ["negative"]).status_code == 201
        item = worker.current().json()["item"]
        assert worker.answer(item["id"], gold_answer(worker.example(item["id"]))).status_code == 201
        assert (
            worker.send("post", "/api/work/revise/", {"item": check["id"], "answer": ["positive"]}).status_code == 409
        )
        return
    assert worker.answer(check["id"], ["negative"]).status_code == 201
    older = worker.handle(before.example_id)
    posted = worker.client.post("/work/revise/", {"item": older, "label": "negative"}, HTTP_X_CSRFTOKEN=worker.csrf)
    assert posted.status_code == 409
    assert worker.send("post", "/api/work/revise/", {"item": older, "answer": ["negative"]}).status_code == 409
    assert Answer.objects.get(pk=before.pk).texts == before.texts, "the answer is unchanged"


def test_after_a_check_the_previous_item_is_numbered_as_the_worker_saw_it(researcher):
    worker = WorkerClient(_study(researcher, n_test=8), "numbered")  # the check is among the first 4 items
    _to_the_check(worker)
    check = worker.current().json()["item"]
    done = worker.current().json()["progress"]["done"]
    assert worker.answer(check["id"], ["negative"]).status_code == 201
    third = worker.current().json()["item"]  # the item after the check
    assert worker.answer(third["id"], gold_answer(worker.example(third["id"]))).status_code == 201
    page = worker.client.get("/work/").content.decode()
    assert f"Your answer to item {done + 2}:" in page and f"item <strong>{done + 3}</strong> of 9" in page
    revising = worker.client.get("/work/revise/").content.decode()
    assert f"Changing your answer to test item {done + 2}." in revising


def test_each_worker_meets_a_check_at_a_place_of_their_own(researcher):
    c = _study(researcher, n_test=12, workers=8, check={**CHECK, "position": "6"})
    check = AttentionCheck.objects.get()
    places = []
    for seed in range(1, 7):
        worker = WorkerClient(c, f"place-{seed}")
        Enrollment.objects.filter(pk=worker.enrollment_id).update(order_seed=seed)
        _to_the_check(worker)
        place = worker.current().json()["progress"]["done"]
        assert worker.current().json()["progress"]["done"] == place, "the same place on every request"
        assert place == attention.shown_before(check, seed=seed, test_items=12)
        assert abs(place - check.position) <= attention.MIN_SPREAD
        places.append(place)
    assert len(set(places)) > 1, f"every worker met the check at the same place: {places}"


RECORD_CHECK = {
    "task": "record",
    "position": "0",
    "question": "This is a check of attention: choose @placeholder as the answer. What is @placeholder?",
    "context": "Please read carefully. On Monday The committee met Barack Obama in New York, and Obama's aide "
    "spoke to Reuters.\n@highlight\nThe meeting was short",
    "expected": "Barack Obama",
}
# Words a real ReCoRD item never offers (none of the 200 official test items does).
FUNCTION_WORDS = {"Please", "On", "Monday", "The", "And", "This", "What"}


def test_a_record_check_offers_candidates_as_a_real_item_does(researcher):
    c = _study(researcher, RECORD_CHECK, task="record", n_test=2)
    check = AttentionCheck.objects.get()
    offered = [check.context[s:e] for s, e in check.candidates]
    assert not FUNCTION_WORDS & set(offered), offered
    assert {"Barack Obama", "New York", "Obama", "Reuters"} <= set(offered), "names, a multi-word one as one"
    worker = WorkerClient(c, "record-check")
    worker.client.post("/work/start/", HTTP_X_CSRFTOKEN=worker.csrf)
    item = _to_the_check(worker)
    page = worker.client.get("/work/").content.decode()
    buttons = re.findall(r'<button type="button" class="cand"[^>]*>([^<]*)</button>', page)
    assert sorted(buttons) == sorted(offered) and "Barack Obama" in buttons
    start = item["context"].index("Barack Obama")
    assert worker.answer(item["id"], [{"start": start, "end": start + 12}]).status_code == 201
    assert AttentionAnswer.objects.get().passed


def test_a_record_check_written_as_instructions_offers_no_instruction_word(researcher):
    """A check's sentences open with words a real item never offers ("Attention check.", "Ignore the text"): the worker
    is offered the text's names only, as a real item's candidates are drawn."""
    check = {
        **RECORD_CHECK,
        "context": "Attention check. Ignore the article and choose Paris. Barack Obama met Reuters in Paris.\n"
        "@highlight\nCheck your answer",
        "expected": "Paris",
    }
    c = _study(researcher, check, task="record", n_test=2)
    offered = {AttentionCheck.objects.get().context[s:e] for s, e in AttentionCheck.objects.get().candidates}
    assert offered == {"Paris", "Barack Obama", "Reuters"}, offered
    worker = WorkerClient(c, "record-instructions")
    worker.client.post("/work/start/", HTTP_X_CSRFTOKEN=worker.csrf)
    _to_the_check(worker)
    page = worker.client.get("/work/").content.decode()
    buttons = set(re.findall(r'<button type="button" class="cand"[^>]*>([^<]*)</button>', page))
    assert buttons == {"Paris", "Barack Obama", "Reuters"} and not {"Attention", "Ignore", "Check"} & buttons


def test_the_candidate_extraction_finds_a_real_items_candidates(clues):
    """On the imported ReCoRD test items, the extraction offers what the data offers: no capitalised function word,
    and most of the real candidates (the official test set: 85% of them, and 82% of what it offers is one)."""
    found = real_total = offered_total = 0
    items = list(Example.objects.filter(task__slug="record", role=Example.Role.TEST))
    if len(items) < 20:
        pytest.skip("fewer than 20 ReCoRD test items imported")
    for example in items:
        real = {(s, e) for s, e in example.candidates}
        offered = set(entity_candidates(example.context))
        assert not FUNCTION_WORDS & {example.context[s:e] for s, e in offered}
        found, real_total, offered_total = (
            found + len(real & offered),
            real_total + len(real),
            offered_total + len(offered),
        )
    assert found / real_total >= 0.85 and found / offered_total >= 0.75, (found, real_total, offered_total)
