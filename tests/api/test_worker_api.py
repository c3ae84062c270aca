"""The worker API contract: training step (rule 3), test step (rule 5), answer validation (rule 6)."""

import re

import pytest
from django.db import IntegrityError, transaction
from django.test import Client

from annotation import services
from annotation.models import Answer, Enrollment, ImmutableAnswer
from annotation.session import BINDING_COOKIE, binding
from tasks_data.models import Example, TrainingSetItem
from tests.annotation.factories import (
    FORBIDDEN_KEYS,
    WorkerClient,
    cohort,
    done_code,
    gold_answer,
    keys_anywhere,
    make_study,
    name_of,
    pid_for,
    trim_test_set,
    wrong_answer,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clues")]


def training_ids(cohort_) -> list[int]:
    return list(
        TrainingSetItem.objects.filter(training_set=cohort_.training_set)
        .order_by("position")
        .values_list("example_id", flat=True)
    )


def test_current_item_shape_for_a_label_task_and_no_gold_or_clues_id():
    sst10 = cohort(make_study(shots=[10]), "sst2", 10)
    worker = WorkerClient(sst10, "P1")
    body = worker.current().json()
    first = Example.objects.get(pk=training_ids(sst10)[0])
    assert body["step"] == "training"
    assert body["progress"] == {"done": 0, "total": 10}
    assert body["item"] == {
        "id": worker.handle(first),
        "kind": "label",
        "question": first.question,
        "context": first.context,
        "labels": ["positive", "negative"],
    }
    assert body["completion"] is None
    assert not keys_anywhere(body) & FORBIDDEN_KEYS
    assert body["item"]["id"] not in (first.clues_id, str(first.pk))  # a handle: neither the CLUES nor the row id


@pytest.mark.parametrize(
    "task, kind", [("mnli", "label"), ("conll03", "spans"), ("squad2", "span_or_none"), ("record", "entity")]
)
def test_current_item_shape_per_kind(task, kind):
    c = cohort(make_study(tasks=[task], shots=[0]), task, 0)
    worker = WorkerClient(c, "P1")
    body = worker.current().json()
    item = body["item"]
    example = worker.example(item["id"])
    assert body["step"] == "test"
    assert item["kind"] == kind
    assert not keys_anywhere(body) & FORBIDDEN_KEYS
    if task == "mnli":
        assert "context" not in item
        assert (item["premise"], item["hypothesis"]) == (example.context, example.hypothesis)
        assert item["labels"] == ["entailment", "neutral", "contradiction"]
    else:
        assert item["context"] == example.context
    if kind == "entity":
        assert item["candidates"] == [
            {"start": s, "end": e, "text": example.context[s:e]} for s, e in example.candidates
        ]
    else:
        assert "candidates" not in item


def test_training_items_come_one_at_a_time_in_file_order_with_gold_only_after_each_answer():
    sst10 = cohort(make_study(shots=[10]), "sst2", 10)
    worker = WorkerClient(sst10, "P1")
    served = []
    for position in range(10):
        current = worker.current().json()
        assert current["step"] == "training" and current["progress"]["done"] == position
        assert not keys_anywhere(current) & FORBIDDEN_KEYS, "no gold before the answer"
        item = worker.example(current["item"]["id"])
        served.append(item.pk)
        answer = gold_answer(item) if position % 2 else wrong_answer(item)
        response = worker.answer(worker.handle(item), answer)
        assert response.status_code == 201, response.json()
        body = response.json()
        assert body["gold"] == item.gold
        assert body["s1"] == (1.0 if position % 2 else 0.0)
        assert body["progress"] == {"done": position + 1, "total": 10}
    assert served == training_ids(sst10)
    assert body["next_step"] == "test"  # the filter's fraction rule needs 2 others; no floor set
    assert worker.current().json()["step"] == "test"


def test_a_second_submission_of_the_same_item_is_409_and_changes_nothing():
    sst10 = cohort(make_study(shots=[10]), "sst2", 10)
    worker = WorkerClient(sst10, "P1")
    item = worker.example(worker.current().json()["item"]["id"])
    assert worker.answer(worker.handle(item), wrong_answer(item)).status_code == 201
    before = list(Answer.objects.values_list("pk", "texts", "s1", "answered_at"))
    again = worker.answer(worker.handle(item), gold_answer(item))
    assert again.status_code == 409
    assert "already answered" in again.json()["detail"]
    assert "gold" not in again.json()
    assert list(Answer.objects.values_list("pk", "texts", "s1", "answered_at")) == before


def test_items_cannot_be_skipped_or_answered_out_of_order():
    sst10 = cohort(make_study(shots=[10]), "sst2", 10)
    worker = WorkerClient(sst10, "P1")
    later = Example.objects.get(pk=training_ids(sst10)[3])
    response = worker.answer(worker.handle(later), gold_answer(later))
    assert response.status_code == 409
    assert "not the current item" in response.json()["detail"]
    test_item = Example.objects.filter(task__slug="sst2", role="test").first()
    assert worker.answer(worker.handle(test_item), ["positive"]).status_code == 409
    assert not Answer.objects.exists()


@pytest.mark.parametrize("method", ["put", "patch", "delete"])
def test_answers_have_no_update_or_delete_path(method):
    sst10 = cohort(make_study(shots=[10]), "sst2", 10)
    worker = WorkerClient(sst10, "P1")
    item = worker.example(worker.current().json()["item"]["id"])
    worker.answer(worker.handle(item), wrong_answer(item))
    response = worker.send(method, "/api/work/answer/", {"item": worker.handle(item), "answer": gold_answer(item)})
    assert response.status_code == 405
    assert response.json()["detail"]
    assert list(Answer.objects.values_list("texts", flat=True)) == [wrong_answer(item)]


def test_a_stored_answer_cannot_be_saved_again_or_deleted_and_is_unique_per_item():
    sst10 = cohort(make_study(shots=[10]), "sst2", 10)
    worker = WorkerClient(sst10, "P1")
    item = worker.example(worker.current().json()["item"]["id"])
    worker.answer(worker.handle(item), ["positive"])
    answer = Answer.objects.get()
    answer.texts = ["negative"]
    with pytest.raises(ImmutableAnswer):
        answer.save()
    with pytest.raises(ImmutableAnswer):
        answer.delete()
    duplicate = Answer(
        enrollment=answer.enrollment, example=item, step="training", position=5, texts=["negative"], s1=0
    )
    with pytest.raises(IntegrityError), transaction.atomic():
        duplicate.save()
    assert Answer.objects.get().texts == ["positive"]


def test_zero_shot_workers_go_straight_to_the_test_step_and_never_see_gold():
    n = trim_test_set("sst2", 6)
    sst0 = cohort(make_study(shots=[0]), "sst2", 0)
    worker = WorkerClient(sst0, "P1")
    order = services.item_order(enrollment=Enrollment.objects.get(), step="test")
    for position in range(n):
        current = worker.current().json()
        assert current["step"] == "test"
        assert worker.example(current["item"]["id"]).pk == order[position]
        item = worker.example(current["item"]["id"])
        response = worker.answer(worker.handle(item), gold_answer(item))
        assert response.status_code == 201
        body = response.json()
        assert not keys_anywhere(body) & FORBIDDEN_KEYS, "no gold and no S1 in the test step"
        assert body["progress"] == {"done": position + 1, "total": n}
        again = worker.answer(worker.handle(item), gold_answer(item))
        assert again.status_code == 409
    done = worker.current().json()
    assert done["step"] == "done" and done["item"] is None
    assert done["progress"] == {"done": n, "total": n}
    assert Answer.objects.filter(step="test").count() == n


def test_test_order_is_the_file_order_by_default_and_a_fixed_per_worker_shuffle_when_asked():
    file_order = list(
        Example.objects.filter(task__slug="sst2", role="test").order_by("position").values_list("pk", flat=True)
    )
    plain = cohort(make_study(shots=[0]), "sst2", 0)
    a = WorkerClient(plain, "A")
    assert a.example(a.current().json()["item"]["id"]).pk == file_order[0]
    shuffled = cohort(make_study(tasks=["mnli", "sst2"], shots=[0], test_order="shuffle"), "sst2", 0)
    b, c = WorkerClient(shuffled, "B"), WorkerClient(shuffled, "C")
    orders = {
        name_of(e.worker.external_id): services.item_order(enrollment=e, step="test")
        for e in Enrollment.objects.filter(cohort=shuffled).select_related("cohort__study", "worker")
    }
    assert orders["B"] != orders["C"]
    assert sorted(orders["B"]) == sorted(file_order) and orders["B"] != file_order
    first_b = b.current().json()["item"]["id"]
    assert b.example(first_b).pk == orders["B"][0]
    assert b.current().json()["item"]["id"] == first_b, "the same worker always gets the same order"
    b.answer(first_b, ["positive"])
    assert b.example(b.current().json()["item"]["id"]).pk == orders["B"][1]
    enrollment_b = Enrollment.objects.select_related("cohort__study").get(worker__external_id=pid_for("B"))
    assert services.item_order(enrollment=enrollment_b, step="test") == orders["B"]
    assert c.example(c.current().json()["item"]["id"]).pk == orders["C"][0]


def test_completion_gives_the_code_and_the_prolific_redirect():
    n = trim_test_set("sst2", 3)
    study = make_study(shots=[0], completion_code="CDONE", screenout_code="CSCREEN")
    worker = WorkerClient(cohort(study, "sst2", 0), "P1")
    for _ in range(n):
        last = worker.answer(worker.current().json()["item"]["id"], ["positive"]).json()
    code = done_code(cohort(study, "sst2", 0))
    assert code.startswith("CDONE") and code != "CDONE"
    expected = {
        "code": code,
        "redirect_url": f"https://app.prolific.com/submissions/complete?cc={code}",
        "post_url": None,
        "post_fields": {},
    }
    assert last["next_step"] == "done" and last["completion"] == expected
    assert worker.current().json()["completion"] == expected


def test_completion_on_mturk_posts_back_to_external_submit_with_the_assignment():
    n = trim_test_set("sst2", 2)
    study = make_study(shots=[0], platform="mturk", completion_code="CDONE")
    params = {"assignmentId": "A9", "hitId": "H", "workerId": "W1", "turkSubmitTo": "https://www.mturk.com/"}
    worker = WorkerClient(cohort(study, "sst2", 0), params=params)
    for _ in range(n):
        worker.answer(worker.current().json()["item"]["id"], ["positive"])
    completion = worker.current().json()["completion"]
    assert completion["post_url"] == "https://www.mturk.com/mturk/externalSubmit"
    assert completion["post_fields"]["assignmentId"] == "A9"
    assert completion["code"] == done_code(cohort(study, "sst2", 0))


# ---------------------------------------------------------------- rule 6: validation per kind


def word(example, i=0) -> dict:
    """The i-th word (3+ letters) of the context as a span."""
    match = list(re.finditer(r"\w{3,}", example.context))[i]
    return {"start": match.start(), "end": match.end()}


def inner(span: dict) -> dict:
    return {"start": span["start"] + 1, "end": span["end"]}


INVALID = [
    ("sst2", lambda e: ["great"], "is not a label"),
    ("sst2", lambda e: ["positive", "negative"], "one label"),
    ("sst2", lambda e: [], "empty answer is not allowed"),
    ("sst2", lambda e: "positive", "must be a list"),
    ("conll03", lambda e: [{"start": 0, "end": len(e.context) + 5}], "outside the context"),
    ("conll03", lambda e: [{**word(e), "text": "zzz"}], "does not match"),
    ("conll03", lambda e: [word(e), inner(word(e))], "overlap"),
    ("conll03", lambda e: [word(e), word(e)], "twice"),
    ("conll03", lambda e: [{"start": "0", "end": 4}], "integers"),
    ("conll03", lambda e: [{**word(e), "label": "PER"}], "unknown field"),
    ("conll03", lambda e: [{"start": 0, "end": len(e.context)}, {"start": 0, "end": 0}], "outside the context"),
    ("squad2", lambda e: [word(e, 0), word(e, 1)], "at most 1 span"),
    ("record", lambda e: [], "empty answer is not allowed"),
    ("record", lambda e: [inner({"start": e.candidates[0][0], "end": e.candidates[0][1]})], "not one of the candidate"),
]


@pytest.mark.parametrize("task, make, message", INVALID, ids=[f"{t}-{m}" for t, _, m in INVALID])
def test_invalid_answers_are_400_with_a_message_naming_the_problem_and_nothing_is_stored(task, make, message):
    c = cohort(make_study(tasks=[task], shots=[0]), task, 0)
    worker = WorkerClient(c, "P1")
    item = worker.example(worker.current().json()["item"]["id"])
    response = worker.answer(worker.handle(item), make(item))
    assert response.status_code == 400
    assert message in response.json()["detail"]
    assert not Answer.objects.exists()
    assert worker.current().json()["item"]["id"] == worker.handle(item)


@pytest.mark.parametrize("task", ["conll03", "squad2"])
def test_the_empty_answer_is_allowed_where_the_kind_allows_none(task):
    c = cohort(make_study(tasks=[task], shots=[0]), task, 0)
    worker = WorkerClient(c, "P1")
    item = worker.current().json()["item"]
    assert worker.answer(item["id"], []).status_code == 201
    assert Answer.objects.get().texts == []


def test_spans_are_stored_as_context_slices_and_record_takes_a_candidate():
    c = cohort(make_study(tasks=["record"], shots=[0]), "record", 0)
    worker = WorkerClient(c, "P1")
    item = worker.example(worker.current().json()["item"]["id"])
    s, e = item.candidates[-1]
    assert worker.answer(worker.handle(item), [{"start": s, "end": e, "text": item.context[s:e]}]).status_code == 201
    answer = Answer.objects.get()
    assert answer.texts == [item.context[s:e]] and answer.spans == [[s, e]]


@pytest.mark.parametrize(
    "raw, message",
    [
        ("{not json", "JSON parse error"),
        ('["a list"]', "dictionary"),
        ('{"answer": ["positive"]}', "item"),
        ('{"item": ["x"], "answer": ["positive"]}', "item"),
        ('{"item": 1}', "answer"),
    ],
)
def test_malformed_bodies_are_400_with_a_message(raw, message):
    worker = WorkerClient(cohort(make_study(shots=[0]), "sst2", 0), "P1")
    response = worker.send("post", "/api/work/answer/", raw=raw)
    assert response.status_code == 400
    assert message in response.json()["detail"]
    assert not Answer.objects.exists()


# ---------------------------------------------------------------- who can reach what


def test_without_an_enrollment_in_the_session_the_worker_api_is_403():
    for response in (
        Client().get("/api/work/current/"),
        Client().post("/api/work/answer/", {"item": 1, "answer": []}, content_type="application/json"),
    ):
        assert response.status_code == 403
        assert "no enrollment" in response.json()["detail"]


def test_csrf_is_enforced_for_session_bound_workers():
    worker = WorkerClient(cohort(make_study(shots=[0]), "sst2", 0), "P1")
    item = worker.current().json()["item"]["id"]
    response = worker.send("post", "/api/work/answer/", {"item": item, "answer": ["positive"]}, csrf=False)
    assert response.status_code == 403
    assert "CSRF" in response.json()["detail"]
    assert not Answer.objects.exists()
    assert worker.answer(item, ["positive"]).status_code == 201


def test_a_worker_cannot_read_or_answer_another_workers_items():
    study = make_study(shots=[10])
    sst10 = cohort(study, "sst2", 10)
    alice, bob = WorkerClient(sst10, "ALICE"), WorkerClient(sst10, "BOB")
    alice_enrollment = Enrollment.objects.get(worker__external_id=pid_for("ALICE"))
    first = alice.current().json()["item"]["id"]
    alice.answer(first, ["positive"])
    # Bob sees his own progress, not Alice's.
    assert bob.current().json()["progress"]["done"] == 0
    second = alice.current().json()["item"]["id"]
    # Bob answering Alice's current item acts on Bob's enrollment: it is not his current item.
    assert bob.answer(second, ["positive"]).status_code == 409
    # Naming Alice's enrollment in the body or the query string changes nothing.
    sneaky = bob.send(
        "post",
        f"/api/work/answer/?enrollment={alice_enrollment.pk}",
        {"item": second, "answer": ["positive"], "enrollment": alice_enrollment.pk},
    )
    assert sneaky.status_code == 409
    assert bob.client.get(f"/api/work/current/?enrollment={alice_enrollment.pk}").json()["progress"]["done"] == 0
    assert Answer.objects.filter(enrollment=alice_enrollment).count() == 1
    assert not Answer.objects.exclude(enrollment=alice_enrollment).exists()
    # Alice's handle of the first item is not Bob's: refused as any other item; Bob's own lands in his enrollment.
    bob_first = bob.current().json()["item"]["id"]
    assert bob.example(bob_first) == alice.example(first) and bob_first != first
    refused = bob.answer(first, ["negative"])
    assert refused.status_code == 409 and "not the current item" in refused.json()["detail"]
    assert bob.answer(bob_first, ["negative"]).status_code == 201
    assert Answer.objects.get(enrollment=alice_enrollment).texts == ["positive"]


def test_a_worker_can_withdraw_and_the_place_is_freed():
    sst0 = cohort(make_study(shots=[0], workers_per_cohort=1), "sst2", 0)
    worker = WorkerClient(sst0, "P1")
    assert WorkerClient(sst0, "P2").join_response.status_code == 409
    response = worker.send("post", "/api/work/withdraw/", {"reason": "no time"})
    assert response.status_code == 200 and response.json()["step"] == "withdrawn"
    assert worker.answer(worker.handle(Example.objects.filter(role="test").first()), ["positive"]).status_code == 409
    assert WorkerClient(sst0, "P2").join_response.status_code == 302


def test_a_session_bound_to_a_vanished_enrollment_is_403():
    worker = WorkerClient(cohort(make_study(shots=[0]), "sst2", 0), "P1")
    worker.client.cookies[BINDING_COOKIE] = binding(10**12)
    response = worker.current()
    assert response.status_code == 403 and "no longer exists" in response.json()["detail"]


def test_the_worker_api_answers_json_whatever_the_accept_header_asks():
    worker = WorkerClient(cohort(make_study(shots=[0]), "sst2", 0), "P1")
    for accept in ("text/html", "application/xml", "*/*", "application/json; q=0.1, text/plain"):
        response = worker.client.get("/api/work/current/", HTTP_ACCEPT=accept)
        assert response.status_code == 200 and response["Content-Type"] == "application/json", accept
        assert response.json()["step"] == "test"
    # The body is still read only as JSON: a form is refused, not misread.
    handle = worker.current().json()["item"]["id"]
    form = worker.client.post("/api/work/answer/", {"item": handle, "answer": "positive"}, HTTP_X_CSRFTOKEN=worker.csrf)
    assert form.status_code == 415 and form["Content-Type"] == "application/json"
