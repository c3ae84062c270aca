"""A worker addresses items by an opaque per-enrollment handle, never a database id: an attention check cannot be
told from a test item by its address, another worker's address of the same item is refused, and a made-up one is
refused exactly as a wrong item is. Everything here goes through the worker pages and the worker API."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from annotation import attention
from annotation.models import Answer, AttentionCheck, Enrollment
from tasks_data.models import Example
from tests.annotation.factories import WorkerClient, cohort, gold_answer, make_study, trim_test_set

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clues")]

N_TEST = 4
CHECK = {
    "task": "sst2",
    "position": "2",
    "question": "For this item choose negative.",
    "context": "Please read the instruction above and follow it.",
    "expected": "negative",
}
HANDLE = re.compile(r"^[a-z2-7]{16}$")
FORM_ITEM = re.compile(r'name="item" value="([^"]*)"')
NOT_CURRENT = "this is not the current item: items are answered one at a time, in order"


@pytest.fixture
def study(researcher):
    trim_test_set("sst2", N_TEST)
    study = make_study(
        tasks=["sst2"], shots=[0], created_by=researcher, filter_floor=None, filter_fraction=None, workers_per_cohort=5
    )
    client = Client()
    client.force_login(researcher)
    assert client.post(f"/dashboard/studies/{study.pk}/attention-checks/", CHECK).status_code == 302
    return study


def _worker(study, name: str, *, check_at: int = int(CHECK["position"])) -> WorkerClient:
    """A worker who meets the check before test item ``check_at`` (each worker has a place of their own, drawn
    from their enrollment's seed: the seed is chosen here so that the walk below knows it)."""
    worker = WorkerClient(cohort(study, "sst2", 0), name)
    check = AttentionCheck.objects.get()
    seed = next(k for k in range(1, 1000) if attention.shown_before(check, seed=k, test_items=N_TEST) == check_at)
    Enrollment.objects.filter(pk=worker.enrollment_id).update(order_seed=seed)
    worker.client.defaults["HTTP_X_CSRFTOKEN"] = worker.csrf
    assert worker.client.post("/work/start/").status_code in (200, 302)
    return worker


def _page_handle(worker: WorkerClient) -> tuple[str, str]:
    """(the page, the handle its answer form posts), as the worker's browser reads it."""
    page = worker.client.get("/work/").content.decode()
    (handle,) = FORM_ITEM.findall(page)
    return page, handle


def _label(worker: WorkerClient, handle: str) -> str:
    shown = worker.example(handle)  # the test's oracle
    return "negative" if shown.pk == AttentionCheck.objects.get().item_id else gold_answer(shown)[0]


def test_no_worker_response_carries_a_database_id_and_a_check_looks_like_any_item(study):
    worker = _worker(study, "walker")
    check = AttentionCheck.objects.get()
    bodies, handles, shown = [], [], []
    n = 0
    while (state := worker.current()).json()["item"] is not None:
        bodies.append(state.content.decode())
        api_handle = state.json()["item"]["id"]
        page, page_handle = _page_handle(worker)
        bodies.append(page)
        bodies.append(worker.client.get("/work/", HTTP_HX_REQUEST="true").content.decode())
        assert page_handle == api_handle, "the page and the API address the item alike"
        handles.append(api_handle)
        shown.append(worker.example(api_handle).pk)
        if n % 2:  # through the API
            response = worker.answer(api_handle, [_label(worker, api_handle)])
            assert response.status_code == 201, response.content
            assert response.json()["item"] == api_handle
        else:  # through the worker page
            response = worker.client.post("/work/answer/", {"item": page_handle, "label": _label(worker, page_handle)})
            assert response.status_code == 302, response.content
        bodies.append(response.content.decode())
        if n >= 1:
            bodies.append(worker.client.get("/work/revise/").content.decode())
        n += 1
    bodies.append(worker.client.get("/work/").content.decode())
    assert len(handles) == N_TEST + 1 and shown[2] == check.item_id  # the check was served, third
    # Every handle has one form: 16 base32 letters, no digits 0, 1, 8 or 9; never a number.
    assert all(HANDLE.match(h) for h in handles), handles
    assert len(set(handles)) == len(handles)
    ids = {str(pk) for pk in Example.objects.values_list("pk", flat=True)} | {str(check.item_id)}
    assert not set(handles) & ids
    # No item address in any response is a database id, and the check's id appears nowhere.
    for body in bodies:
        assert not set(FORM_ITEM.findall(body)) & ids
        assert not re.search(rf"\b{check.item_id}\b", body), body[:300]
        if body.startswith("{"):
            data = json.loads(body)
            for value in (
                data.get("item"),
                (data.get("item") or {}).get("id") if isinstance(data.get("item"), dict) else None,
            ):
                assert not isinstance(value, int) and str(value) not in ids
    # The check's handle is made like the others (nothing in it tells it apart).
    check_handle = handles[2]
    assert {len(h) for h in handles} == {len(check_handle)}
    assert set(check_handle) <= set("abcdefghijklmnopqrstuvwxyz234567")


def test_another_workers_handle_of_the_same_item_is_refused(study):
    alice, bob = _worker(study, "alice"), _worker(study, "bob")
    alice_handle, bob_handle = (w.current().json()["item"]["id"] for w in (alice, bob))
    assert alice.example(alice_handle) == bob.example(bob_handle), "both are at the same first item"
    assert alice_handle != bob_handle
    api = bob.answer(alice_handle, ["positive"])
    assert api.status_code == 409 and api.json()["detail"] == NOT_CURRENT
    form = bob.client.post("/work/answer/", {"item": alice_handle, "label": "positive"})
    assert form.status_code == 409 and form["X-Answer-Status"] == "409"
    assert not Answer.objects.exists()
    # The same holds at the check: Alice's handle of the check is not Bob's.
    for worker in (alice, bob):
        for _ in range(2):
            handle = worker.current().json()["item"]["id"]
            assert worker.answer(handle, [_label(worker, handle)]).status_code == 201
    alice_check, bob_check = (w.current().json()["item"]["id"] for w in (alice, bob))
    assert alice.example(alice_check).pk == bob.example(bob_check).pk == AttentionCheck.objects.get().item_id
    refused = bob.answer(alice_check, ["negative"])
    assert refused.status_code == 409 and refused.json()["detail"] == NOT_CURRENT
    assert bob.answer(bob_check, ["negative"]).status_code == 201


def test_a_forged_handle_is_refused_as_a_wrong_item_is(study):
    worker = _worker(study, "forger")
    current = worker.current().json()["item"]["id"]
    example = worker.example(current)
    later = Example.objects.filter(task__slug="sst2", role="test").exclude(pk=example.pk).first()
    wrong_item = worker.answer(worker.handle(later), ["positive"])  # a real handle of a later item
    assert wrong_item.status_code == 409 and wrong_item.json()["detail"] == NOT_CURRENT
    forged = [
        "a" * 16,
        current[:-1] + ("b" if current[-1] != "b" else "c"),
        current.upper(),
        str(example.pk),
        str(AttentionCheck.objects.get().item_id),
        " " + current,
    ]
    for handle in forged:
        response = worker.answer(handle, ["positive"])
        assert response.status_code == 409 and response.json() == wrong_item.json(), (handle, response.content)
    for value in (example.pk, -1, 2**70):  # a number as an item address: also just "not the current item"
        response = worker.send("post", "/api/work/answer/", {"item": value, "answer": ["positive"]})
        assert response.status_code == 409 and response.json() == wrong_item.json()
    page_wrong = worker.client.post("/work/answer/", {"item": worker.handle(later), "label": "positive"})
    page_forged = worker.client.post("/work/answer/", {"item": "a" * 16, "label": "positive"})
    assert page_wrong.status_code == page_forged.status_code == 409

    def shown(response) -> str:  # the page without its (per-response masked) CSRF token, nor its clock's seconds
        page = re.sub(r'(csrfmiddlewaretoken" value=|X-CSRFToken": )"[^"]*"', "", response.content.decode())
        return re.sub(r'data-seconds-left="[\d.]+"|data-role="clock">[\d:]+', "", page)

    assert "That answer was not saved" in shown(page_forged) and shown(page_forged) == shown(page_wrong)
    assert not Answer.objects.exists()
    assert worker.answer(current, gold_answer(example)).status_code == 201  # the real one still works


def test_revision_goes_by_the_handle_and_after_a_check_only_the_check_can_be_changed(study):
    worker = _worker(study, "reviser")
    first = worker.current().json()["item"]["id"]
    assert worker.answer(first, ["positive"]).status_code == 201
    # Through the API and the page, the last answer is changed by its handle; any other handle is refused.
    changed = worker.send("post", "/api/work/revise/", {"item": first, "answer": ["negative"]})
    assert changed.status_code == 200 and changed.json() == {"item": first, "position": 0, "answer": ["negative"]}
    page = worker.client.get("/work/revise/").content.decode()
    assert FORM_ITEM.findall(page) == [first]
    assert worker.client.post("/work/revise/", {"item": first, "label": "positive"}).status_code == 302
    assert Answer.objects.get().texts == ["positive"]
    current = worker.current().json()["item"]["id"]
    for other in (current, "a" * 16, str(worker.example(first).pk)):
        refused = worker.send("post", "/api/work/revise/", {"item": other, "answer": ["negative"]})
        assert refused.status_code == 409 and "only your last test answer" in refused.json()["detail"]
    # The item just before the check, then the check: the answer before it is final, by its handle too.
    second = current
    assert worker.answer(second, [_label(worker, second)]).status_code == 201
    check = worker.current().json()["item"]["id"]
    assert worker.example(check).pk == AttentionCheck.objects.get().item_id
    assert worker.answer(check, ["negative"]).status_code == 201
    before = list(Answer.objects.order_by("pk").values_list("texts", flat=True))
    api = worker.send("post", "/api/work/revise/", {"item": second, "answer": ["negative"]})
    assert api.status_code == 409 and "only your last test answer" in api.json()["detail"]
    form = worker.client.post("/work/revise/", {"item": second, "label": "negative"})
    assert form.status_code == 409
    assert list(Answer.objects.order_by("pk").values_list("texts", flat=True)) == before
    # The check is now the last answer: changed by its handle, as any item's would be (it is scored on the final
    # answer); the test answers are untouched.
    changed = worker.send("post", "/api/work/revise/", {"item": check, "answer": ["positive"]})
    assert changed.status_code == 200 and changed.json() == {"item": check, "position": 2, "answer": ["positive"]}
    assert list(Answer.objects.order_by("pk").values_list("texts", flat=True)) == before
    assert worker.send("post", "/api/work/revise/", {"item": check, "answer": ["negative"]}).status_code == 200
    # A repeated check answer is told "already answered", as a repeated test answer is: nothing sets it apart.
    again_check = worker.answer(check, ["negative"])
    again_item = worker.answer(second, ["positive"])
    assert again_check.status_code == again_item.status_code == 409
    assert again_check.json() == again_item.json() == {"detail": "this item was already answered; answers are final"}
