"""Bad input: oversized bodies, malformed JSON, spans that do not fit the context, hostile and tricky text.

Every refusal is a 4xx with a message, nothing is stored, and nothing is a 5xx. Offsets are
Python code points (one per character outside the BMP too; a browser counts UTF-16 units and
must convert, as the worker page does). The whole API is also fuzzed from its schema: see
test_fuzz_api.py.
"""

from __future__ import annotations

import json

import pytest
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation import services
from annotation.answers import InvalidAnswer, validate_answer
from annotation.models import Answer, Enrollment, Worker
from tasks_data.models import Example
from tasks_data.registry import CLUES_TASKS
from tests.annotation.factories import WorkerClient, cohort, gold_answer, make_study, pid_for
from tests.security.tricky import ASTRAL, COMBINING, EMOJI, RTL, TAG

pytestmark = [pytest.mark.django_db]

LIMIT = 256 * 1024


def bound_worker(task="sst2", shots=0, pid="P1", **study):
    worker = WorkerClient(cohort(make_study(tasks=[task], shots=[shots], **study), task, shots), pid)
    worker.client.raise_request_exception = False
    return worker


def assert_refused(response, status, *words):
    assert response.status_code == status, (response.status_code, response.content[:300])
    detail = response.json()["detail"] if response["Content-Type"] == "application/json" else response.content.decode()
    assert detail and all(w in detail for w in words), detail
    return detail


# ---------------------------------------------------------------- sizes and shapes


@pytest.mark.usefixtures("clues")
def test_oversized_bodies_are_413_with_a_message_before_anything_is_read(researcher, settings):
    assert settings.DATA_UPLOAD_MAX_MEMORY_SIZE == LIMIT
    worker = bound_worker(created_by=researcher)
    item = worker.current().json()["item"]["id"]
    big = json.dumps({"item": item, "answer": ["positive"], "padding": "x" * LIMIT})
    assert_refused(worker.send("post", "/api/work/answer/", raw=big), 413, "bytes", str(LIMIT))
    # The researcher API, the worker form, the login form and the admin: the same.
    client = Client()
    client.force_login(researcher)
    assert_refused(client.post("/api/studies/", big, content_type="application/json"), 413, "bytes")
    page = worker.client.post("/work/answer/", {"item": item, "label": "positive", "pad": "x" * LIMIT})
    assert page.status_code == 413 and "Request too large" in page.content.decode()
    for path in ("/accounts/login/", "/admin/login/"):
        assert Client().post(path, {"username": "x", "password": "x" * LIMIT}).status_code == 413
    assert not Answer.objects.exists()
    # Just under the limit, a well-formed but absurd answer is refused by validation, still with a message.
    many = json.dumps({"item": item, "answer": ["positive"] * 20000})
    assert len(many) < LIMIT
    assert_refused(worker.send("post", "/api/work/answer/", raw=many), 400, "one label")
    assert not Answer.objects.exists()


@pytest.mark.usefixtures("clues")
@pytest.mark.parametrize(
    "raw, words",
    [
        ("[" * 50_000 + "]" * 50_000, ["nested too deeply"]),
        ('{"item": 1, "answer": ["\\ud800"]}', ["lone surrogate"]),
        ('{"item": 1, "answer": [{"start": 0, "end": 1, "text": "\\udfff"}]}', ["lone surrogate"]),
        ('{"item": NaN, "answer": []}', ["JSON parse error"]),
        ('{"item": 1e999, "answer": []}', ["item"]),
        ('{"item": "1", "answer": "positive"}', []),
        ('{"item": 123456789012345678901234567890, "answer": ["positive"]}', ["not the current item"]),
        ('{"item": -1, "answer": ["positive"]}', ["not the current item"]),
        ('{"item": true, "answer": ["positive"]}', ["item"]),
        ('{"item": null, "answer": null}', ["item"]),
        ("\xff\xfe not utf-8", ["JSON parse error"]),
    ],
    ids=[
        "deep nesting",
        "lone surrogate",
        "lone surrogate in text",
        "NaN",
        "infinite",
        "string answer",
        "huge id",
        "negative id",
        "boolean id",
        "nulls",
        "not UTF-8",
    ],
)
def test_malformed_answers_are_4xx_with_a_message_and_store_nothing(raw, words):
    worker = bound_worker()
    response = worker.send("post", "/api/work/answer/", raw=raw)
    assert 400 <= response.status_code < 500, (response.status_code, response.content[:200])
    detail = response.json()["detail"]
    assert detail and all(w in detail for w in words), detail
    assert not Answer.objects.exists()


@pytest.mark.usefixtures("clues")
def test_nul_characters_in_addresses_and_join_parameters_are_400(researcher):
    sst0 = cohort(make_study(shots=[0], created_by=researcher), "sst2", 0)
    client = Client(raise_request_exception=False)
    for params in (
        {"PROLIFIC_PID": "a\x00b"},
        {"PROLIFIC_PID": pid_for("P1"), "SESSION_ID": "s\x00"},
        {"PROLIFIC_PID": pid_for("P1"), "STUDY_ID": "\x00"},
    ):
        response = client.get(sst0.join_path, params)
        assert response.status_code == 400 and "NUL" in response.content.decode()
    # The services refuse it too, whoever calls them.
    with pytest.raises(services.JoinRefused) as refused:
        services.join(token=sst0.join_token, params={"PROLIFIC_PID": pid_for("P1"), "SESSION_ID": "s\x00"})
    assert refused.value.reason == "bad_parameter"  # annotation.protocol.JoinRefusal (the view answers 400)
    assert not Worker.objects.exists()
    client.force_login(researcher)
    study = sst0.study
    assert_refused(client.get(f"/api/studies/{study.pk}/audit/", {"q": "\x00"}), 400, "NUL")
    assert_refused(client.get(f"/api/studies/{study.pk}/enrollments/", {"state": "\x00"}), 400)


@pytest.mark.usefixtures("clues")
def test_unknown_api_addresses_and_methods_are_json_with_a_message(researcher):
    client = Client()
    client.force_login(researcher)
    assert_refused(client.get("/api/nothing/here/"), 404, "Not found")
    assert_refused(client.get("/api/studies/999999999/"), 404)
    assert_refused(client.delete("/api/studies/"), 405, "not allowed")


# ---------------------------------------------------------------- spans


SPAN_VALUES = st.one_of(
    st.integers(min_value=-5, max_value=300),
    st.integers(),
    st.booleans(),
    st.none(),
    st.floats(allow_nan=True),
    st.text(max_size=3),
)
SPAN = st.fixed_dictionaries(
    {"start": SPAN_VALUES, "end": SPAN_VALUES}, optional={"text": st.text(max_size=5), "extra": st.integers()}
)


@pytest.mark.usefixtures("tricky")
@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(answer=st.one_of(st.lists(SPAN, max_size=4), st.lists(st.integers() | st.text(), max_size=3), st.text()))
def test_any_span_answer_is_either_exact_context_slices_or_invalid(answer):
    """validate_answer never fails otherwise, and what it accepts are slices of the context, in code points."""
    for slug in ("conll03", "squad2", "record"):
        example = Example.objects.filter(task__slug=slug, role=Example.Role.TEST).order_by("position").first()
        try:
            valid = validate_answer(CLUES_TASKS[slug], example, answer)
        except InvalidAnswer as exc:
            assert str(exc)
            continue
        for start, end in valid.spans:
            assert 0 <= start < end <= len(example.context)
        assert valid.texts == list(dict.fromkeys(example.context[s:e] for s, e in valid.spans))


@pytest.mark.usefixtures("tricky")
@pytest.mark.parametrize(
    "span, words",
    [
        ({"start": -1, "end": 3}, ["outside the context"]),
        ({"start": 0, "end": 10_000}, ["outside the context"]),
        ({"start": 5, "end": 5}, ["outside the context"]),
        ({"start": 7, "end": 3}, ["outside the context"]),
        ({"start": 0, "end": 3, "text": "Bob"}, ["does not match"]),
        ({"start": 0, "end": 3.0}, ["integers"]),
        ({"start": "0", "end": 3}, ["integers"]),
        ({"start": 0, "end": True}, ["integers"]),
        ({"start": 0, "end": 3, "label": "PER"}, ["unknown field"]),
        ({"start": 3, "end": 5}, ["whitespace"]),
    ],
    ids=[
        "negative",
        "past the end",
        "empty",
        "reversed",
        "text mismatch",
        "float",
        "string",
        "boolean",
        "unknown field",
        "whitespace",
    ],
)
def test_spans_outside_the_context_or_not_matching_it_are_400(span, words):
    worker = bound_worker(task="conll03")
    context = worker.current().json()["item"]["context"]
    assert context.startswith("Ann Lee")
    assert_refused(worker.answer(worker.current().json()["item"]["id"], [span]), 400, *words)
    assert not Answer.objects.exists()


# ---------------------------------------------------------------- unicode


@pytest.mark.usefixtures("tricky")
def test_tricky_unicode_round_trips_and_offsets_are_code_points():
    """Contexts with combining marks, right-to-left text, a bidi override and emoji (ZWJ, outside the BMP)."""
    worker = bound_worker(task="squad2", shots=10)
    state = worker.current().json()
    example = worker.example(state["item"]["id"])
    assert state["item"]["context"] == example.context  # exactly the stored text, through JSON
    for piece in (COMBINING, RTL, EMOJI, ASTRAL):
        assert piece in example.context
    gold = next(g for g in example.gold if TAG in g)
    start = example.context.index(gold)
    # In code points: accepted, stored as the very gold string, full marks.
    utf16 = len(example.context[:start].encode("utf-16-le")) // 2
    assert utf16 > start  # characters outside the BMP before the answer: the two counts differ
    wrong = worker.answer(worker.handle(example), [{"start": utf16, "end": utf16 + len(gold), "text": gold}])
    assert_refused(wrong, 400, "does not match")
    right = worker.answer(worker.handle(example), [{"start": start, "end": start + len(gold), "text": gold}])
    assert right.status_code == 201, right.content
    assert right.json()["s1"] == 1.0
    assert Answer.objects.get().texts == [gold]


@pytest.mark.usefixtures("tricky")
@pytest.mark.parametrize("task", ["conll03", "record", "sst2"])
def test_a_whole_journey_on_tricky_text_scores_every_gold_answer_fully(task):
    worker = bound_worker(task=task, shots=10, filter_fraction=None)
    enrollment = Enrollment.objects.get()
    while (state := worker.current().json())["item"] is not None:
        item = state["item"]
        example = worker.example(item["id"])
        if task == "record":  # candidates carry their text, sliced in code points
            assert all(c["text"] == example.context[c["start"] : c["end"]] for c in item["candidates"])
        response = worker.answer(worker.handle(example), gold_answer(example))
        assert response.status_code == 201, response.content
    enrollment.refresh_from_db()
    assert enrollment.state == Enrollment.State.COMPLETED and enrollment.training_s1 == 1.0
    assert {a.s1 for a in Answer.objects.filter(enrollment=enrollment)} == {1.0}


@pytest.mark.usefixtures("tricky")
def test_a_span_may_split_a_grapheme_it_is_valid_but_not_the_gold():
    """Offsets are code points: ending between "e" and its combining accent is a (wrong) answer, not an error."""
    worker = bound_worker(task="conll03")
    item = worker.current().json()["item"]
    accent = item["context"].index(COMBINING) + 1  # just after the "e", before U+0301
    start = item["context"].rindex(" ", 0, accent) + 1
    response = worker.answer(item["id"], [{"start": start, "end": accent}])
    assert response.status_code == 201
    assert Answer.objects.get().texts == [item["context"][start:accent]] and Answer.objects.get().s1 == 0.0


@pytest.mark.usefixtures("tricky")
def test_join_parameters_in_any_script_are_kept_as_given():
    pid = f"W{COMBINING}{RTL}{EMOJI}"
    # A generic link without a pattern keeps any id; a Prolific PID must be 24 hexadecimal characters.
    assert Client().get(cohort(make_study(shots=[0]), "sst2", 0).join_path, {"PROLIFIC_PID": pid}).status_code == 400
    sst0 = cohort(make_study(shots=[0], platform="generic"), "sst2", 0)
    response = Client().get(sst0.join_path, {"worker_id": pid})
    assert response.status_code == 302
    assert Worker.objects.get(platform="generic").external_id == pid
