"""Attention checks look like items to the worker: the totals the worker is shown count them everywhere, and the
answer given just before a check can no longer be changed once the check is answered, as after any item."""

from __future__ import annotations

import pytest
from django.test import Client

from annotation.models import Answer, AttentionCheck
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


@pytest.fixture
def worker(researcher):
    trim_test_set("sst2", N_TEST)
    study = make_study(tasks=["sst2"], shots=[0], created_by=researcher, filter_floor=None, filter_fraction=None)
    client = Client()
    client.force_login(researcher)
    assert client.post(f"/dashboard/studies/{study.pk}/attention-checks/", CHECK).status_code == 302
    return WorkerClient(cohort(study, "sst2", 0), "disguise")


def test_the_description_counts_the_items_the_worker_will_see(worker):
    page = worker.client.get("/work/").content.decode()
    assert f"Test: {N_TEST + 1} items" in page, "the progress bar will count the check: so does the description"
    assert worker.current().json()["progress"]["total"] == N_TEST + 1


def test_the_answer_before_a_check_cannot_be_changed_once_the_check_is_answered(worker):
    first = worker.current().json()["item"]
    example = worker.example(first["id"])
    assert worker.answer(first["id"], gold_answer(example)).status_code == 201
    # Control: right after an item, "Change it" works.
    page = worker.client.get("/work/").content.decode()
    assert 'data-role="undo"' in page
    check = worker.current().json()["item"]
    assert worker.example(check["id"]).pk == AttentionCheck.objects.get().item_id
    assert worker.answer(check["id"], ["negative"]).status_code == 201
    page = worker.client.get("/work/").content.decode()
    assert 'data-role="undo"' not in page, "no Change it for the item before the check"
    assert "can no longer be changed" in worker.client.get("/work/revise/").content.decode()
    posted = worker.client.post(
        "/work/revise/", {"item": first["id"], "label": "negative"}, HTTP_X_CSRFTOKEN=worker.csrf
    )
    assert posted.status_code == 409
    api = worker.send("post", "/api/work/revise/", {"item": first["id"], "answer": ["negative"]})
    assert api.status_code == 409
    assert Answer.objects.get(example=example).texts == [example.gold[0]], "the answer is unchanged"


def test_after_a_check_the_previous_item_is_numbered_as_the_worker_saw_it(worker):
    for _ in range(2):  # item 1, then the check (item 2 as the worker sees it)
        item = worker.current().json()["item"]
        check_id = AttentionCheck.objects.get().item_id
        shown = worker.example(item["id"])
        answer = ["negative"] if shown.pk == check_id else gold_answer(shown)
        assert worker.answer(item["id"], answer).status_code == 201
    third = worker.current().json()["item"]  # test item 2, the worker's item 3
    assert worker.answer(third["id"], gold_answer(worker.example(third["id"]))).status_code == 201
    page = worker.client.get("/work/").content.decode()
    assert "Your answer to item 3:" in page and "item <strong>4</strong> of 5" in page
    revising = worker.client.get("/work/revise/").content.decode()
    assert "Changing your answer to test item 3." in revising
