"""The worker pages through Django's test client: state from the server, no gold early, escaping, 409."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from annotation import services
from annotation.models import Answer, Enrollment
from annotation.session import ACK_KEY
from tasks_data.models import Example
from tests.annotation.factories import done_code, pid_for, screen_out_code
from tests.worker_pages.factories import answer_current, bind, cohort_of, enroll, handle, make_study

ALL_TASKS = ("sst2", "mnli", "conll03", "wikiann", "squad2", "record")
NASTY = "<script>alert('x')</script> Tom & \"Jerry\" <b>bold</b>"
SENTINEL = "ZZGOLDSENTINELZZ"


def _page(client, **headers):
    response = client.get("/work/", **headers)
    return response, response.content.decode()


def _worker(task="sst2", shots=10, **study_kwargs):
    study = make_study(tasks=(task,), shots=(shots,), **study_kwargs)
    enrollment = enroll(cohort_of(study, task, shots))
    return enrollment, bind(Client(), enrollment)


# ---------------------------------------------------------------- reaching the pages


def test_without_a_bound_enrollment_the_worker_is_sent_to_the_study_link(client, db):
    response = client.get("/work/")
    assert response.status_code == 403
    assert "use your study link" in response.content.decode()
    htmx = client.post("/work/answer/", {"item": "1"}, HTTP_HX_REQUEST="true")
    assert htmx.status_code == 204 and htmx["HX-Redirect"] == "/work/"


def test_join_link_then_description_then_start_then_first_item(demo_data):
    study = make_study(tasks=("conll03",), shots=(10,))
    cohort = cohort_of(study, "conll03", 10)
    client = Client()
    params = {"PROLIFIC_PID": pid_for("P1"), "STUDY_ID": "S", "SESSION_ID": "X"}
    response = client.get(f"/join/{cohort.join_token}/", params)
    assert response.status_code == 302 and response["Location"] == "/work/"
    response, html = _page(client)
    assert response.status_code == 200 and 'data-view="description"' in html
    assert "Training: 30 items" in html and "Test: 12 items" in html and "Each text comes 3 times" in html
    assert 'name="item"' not in html  # no item before Start
    enrollment = Enrollment.objects.get(worker__external_id=pid_for("P1"))
    assert enrollment.current_served_at is None  # reading the description is not time on an item
    assert client.post("/work/start/").status_code == 302
    response, html = _page(client)
    assert 'data-view="item"' in html and "item <strong>1</strong> of 30" in html
    assert response["Cache-Control"].startswith("no-store") or "no-store" in response["Cache-Control"]


def test_a_returning_worker_lands_where_they_are(demo_data):
    enrollment, client = _worker("sst2", 10)
    for _ in range(3):
        result = answer_current(enrollment)
    # The last answer's feedback has not been left with Next: it is shown again, from the stored answer.
    _, html = _page(client)
    assert (
        'data-view="feedback"' in html and f'name="item" value="{handle(enrollment, result.answer.example_id)}"' in html
    )
    assert "answer_id" not in html, "the form names the item by its handle, not the answer's database id"
    client.post("/work/next/", {"item": handle(enrollment, result.answer.example_id)})
    _, html = _page(client)
    assert 'data-view="item"' in html and "item <strong>4</strong> of 10" in html
    assert f'value="{services.current_item(enrollment_id=enrollment.pk).item_handle}"' in html
    # Another browser the next day (a new session bound to the same enrollment) resumes too.
    other = bind(Client(), enrollment, started=False)
    _, html = _page(other)
    assert 'data-view="feedback"' in html  # answers exist: no description again; last feedback first
    other.post("/work/next/", {"item": handle(enrollment, result.answer.example_id)})
    _, html = _page(other)
    assert "item <strong>4</strong> of 10" in html


def test_next_only_acknowledges_an_answer_of_the_bound_enrollment(demo_data):
    enrollment, client = _worker("sst2", 10)
    other, _ = _worker("sst2", 10)
    theirs = answer_current(other).answer
    mine = answer_current(enrollment).answer
    client.post("/work/next/", {"item": handle(other, theirs.example_id)})
    client.post("/work/next/", {"answer_id": mine.pk})  # a database id is not how a page names an answer
    assert client.session.get(ACK_KEY) is None
    _, html = _page(client)
    assert 'data-view="feedback"' in html
    client.post("/work/next/", {"item": handle(enrollment, mine.example_id)})
    assert client.session.get(ACK_KEY) == mine.pk and 'data-view="item"' in _page(client)[1]


def test_no_worker_page_carries_a_database_id(demo_data):
    """Every page of a whole journey, answered through the pages' own forms: each form names an item by its handle,
    never by a database id (an answer's id is a platform-wide activity counter)."""
    import re

    enrollment, client = _worker("sst2", 10)
    pages = []
    client.post("/work/start/")
    for _ in range(60):
        html = _page(client)[1]
        pages.append(html)
        view = re.search(r'data-view="(\w+)"', html)[1]
        if view not in ("item", "feedback"):
            break
        handle = re.search(r'name="item" value="([a-z2-7]{16})"', html)[1]
        if view == "feedback":
            client.post("/work/next/", {"item": handle})
        else:
            assert client.post("/work/answer/", {"item": handle, "label": "positive"}).status_code == 302
    assert view == "done" and Answer.objects.filter(enrollment=enrollment).count() > 10
    ids = {str(pk) for pk in Answer.objects.filter(enrollment=enrollment).values_list("pk", flat=True)}
    ids |= {str(enrollment.pk), str(enrollment.worker_id), str(enrollment.cohort_id)}
    ids |= {str(pk) for pk in Answer.objects.filter(enrollment=enrollment).values_list("example_id", flat=True)}
    for html in pages:
        assert not re.search(r"answer_id|enrollment_id|example_id", html)
        for name, value in re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', html):
            assert name in {"csrfmiddlewaretoken", "item", "spans"}, name
            assert value not in ids, (name, value)


# ---------------------------------------------------------------- gold is never shown early


@pytest.mark.parametrize("task", ALL_TASKS)
def test_no_gold_on_any_page_before_the_item_is_answered(demo_data, task):
    enrollment, client = _worker(task, 10)
    for step_items in range(2):
        item = services.current_item(enrollment_id=enrollment.pk).item
        gold = [SENTINEL] if task not in ("sst2", "mnli") else item.gold
        Example.objects.filter(pk=item.pk).update(gold=gold)
        for headers in ({}, {"HTTP_HX_REQUEST": "true"}):
            _, html = _page(client, **headers)
            assert 'data-view="item"' in html
            assert SENTINEL not in html
            for marker in ("Correct answer", 'class="chip gold', "blank gold", "verdict", "<mark"):
                assert marker not in html, marker
        result = answer_current(enrollment, right=step_items == 0)
        _, html = _page(client)
        assert 'data-view="feedback"' in html and "Correct answer" in html
        if task not in ("sst2", "mnli"):
            assert SENTINEL in html  # the gold of the answered item, now
        # the next item's gold is not on the feedback page
        next_item = services.current_item(enrollment_id=enrollment.pk).item
        Example.objects.filter(pk=next_item.pk).update(gold=["NEXTGOLDSENTINEL"])
        _, html = _page(client)
        assert "NEXTGOLDSENTINEL" not in html
        Example.objects.filter(pk=next_item.pk).update(gold=next_item.gold)
        client.post("/work/next/", {"item": handle(enrollment, result.answer.example_id)})


def test_no_gold_in_the_test_step_even_after_answering(demo_data):
    enrollment, client = _worker("conll03", 0)
    item = services.current_item(enrollment_id=enrollment.pk).item
    Example.objects.filter(pk=item.pk).update(gold=[SENTINEL])
    answer_current(enrollment)
    _, html = _page(client)
    assert 'data-view="item"' in html and SENTINEL not in html and "Correct answer" not in html


# ---------------------------------------------------------------- escaping


@pytest.mark.parametrize("task", ALL_TASKS)
def test_dataset_text_is_escaped_on_item_and_feedback_pages(demo_data, task):
    enrollment, client = _worker(task, 10)
    item = services.current_item(enrollment_id=enrollment.pk).item
    context = f"{NASTY} in Paris ."
    fields = {"context": context, "question": f"{NASTY} @placeholder ?"}
    if task == "mnli":
        fields["hypothesis"] = NASTY
    if task == "record":
        start = context.index("Paris")
        fields.update(candidates=[[context.index("Tom"), context.index("Tom") + 3], [start, start + 5]], gold=["Paris"])
    if task in ("conll03", "wikiann", "squad2"):
        fields["gold"] = ["Paris"]
    Example.objects.filter(pk=item.pk).update(**fields)
    for page in ("item", "feedback"):
        _, html = _page(client)
        assert f'data-view="{page}"' in html
        assert "<script>alert" not in html and "<b>bold</b>" not in html
        assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in html
        assert "Tom &amp; &quot;Jerry&quot;" in html
        if page == "item":
            answer_current(enrollment)


def test_offsets_are_python_code_points_in_the_page(demo_data):
    enrollment, client = _worker("squad2", 10)
    item = services.current_item(enrollment_id=enrollment.pk).item
    context = "Fans 😀🎉 cheered as Zoë Ñúñez arrived."
    Example.objects.filter(pk=item.pk).update(context=context, gold=["Zoë Ñúñez"], is_impossible=False)
    _, html = _page(client)
    start = context.index("Zoë")  # code points: the emoji count 1 each (UTF-16 would say 2)
    assert f'data-s="{start}" data-e="{start + 3}">Zoë</span>' in html
    response = client.post(
        "/work/answer/", {"item": handle(enrollment, item), "spans": json.dumps([[start, start + 9]])}
    )
    assert response.status_code == 302
    assert Answer.objects.get(enrollment=enrollment, example=item).texts == ["Zoë Ñúñez"]


# ---------------------------------------------------------------- refused answers


def test_a_second_answer_is_refused_and_the_current_state_shown(demo_data):
    enrollment, client = _worker("sst2", 10)
    item = services.current_item(enrollment_id=enrollment.pk).item
    wrong = "negative" if item.gold[0] == "positive" else "positive"
    assert client.post("/work/answer/", {"item": handle(enrollment, item), "label": item.gold[0]}).status_code == 302
    # The back button, a second tab or a replayed form: the same item again, with another label.
    response = client.post("/work/answer/", {"item": handle(enrollment, item), "label": wrong})
    html = response.content.decode()
    assert response.status_code == 409 and response["X-Answer-Status"] == "409"
    assert "already been answered" in html and 'data-view="feedback"' in html
    assert Answer.objects.get(enrollment=enrollment, example=item).texts == [item.gold[0]]
    # Through htmx: a normal (200) rendering of where the worker is, the refusal in the page and a header.
    response = client.post("/work/answer/", {"item": handle(enrollment, item), "label": wrong}, HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert response.status_code == 200 and response["X-Answer-Status"] == "409"
    assert html.lstrip().startswith('<div id="stage"') and "already been answered" in html
    # An item ahead of the current one is refused too.
    later = services.item_order(enrollment=enrollment, step="training")[3]
    response = client.post("/work/answer/", {"item": handle(enrollment, later), "label": "positive"})
    assert response.status_code == 409 and not Answer.objects.filter(enrollment=enrollment, example_id=later).exists()


def test_an_invalid_answer_is_refused_with_the_reason(demo_data):
    enrollment, client = _worker("conll03", 10)
    item = services.current_item(enrollment_id=enrollment.pk).item
    response = client.post("/work/answer/", {"item": handle(enrollment, item), "spans": "[]"})
    assert response.status_code == 400 and "nothing is marked" in response.content.decode()
    response = client.post("/work/answer/", {"item": handle(enrollment, item), "spans": "[[0, 2], [1, 3]]"})
    assert response.status_code == 400 and "overlap" in response.content.decode()
    response = client.post(
        "/work/answer/", {"item": handle(enrollment, item), "spans": "not json"}, HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 200 and response["X-Answer-Status"] == "400"
    assert not Answer.objects.filter(enrollment=enrollment).exists()
    response = client.post("/work/answer/", {"item": handle(enrollment, item), "none": "1"})
    assert response.status_code == 302 and Answer.objects.get(enrollment=enrollment).texts == []


# ---------------------------------------------------------------- the end


def test_completion_pages_for_each_platform(demo_data):
    enrollment, client = _worker("sst2", 0)
    while Enrollment.objects.get(pk=enrollment.pk).state != Enrollment.State.COMPLETED:
        answer_current(enrollment)
    _, html = _page(client)
    code = done_code(enrollment.cohort)
    assert 'data-view="done"' in html and code in html
    assert f'data-auto-redirect="https://app.prolific.com/submissions/complete?cc={code}"' in html

    generic, client = _worker("mnli", 0, platform="generic", worker_id_param="wid")
    while Enrollment.objects.get(pk=generic.pk).state != Enrollment.State.COMPLETED:
        answer_current(generic)
    _, html = _page(client)
    assert done_code(generic.cohort) in html and "data-auto-redirect" not in html and "data-autosubmit" not in html


def test_mturk_completion_posts_back_and_the_last_htmx_answer_reloads(demo_data):
    study = make_study(tasks=("sst2",), shots=(0,), platform="mturk")
    cohort = cohort_of(study, "sst2", 0)
    outcome = services.join(
        token=cohort.join_token,
        params={
            "workerId": "A1",
            "assignmentId": "AS1",
            "hitId": "H",
            "turkSubmitTo": "https://workersandbox.mturk.com",
        },
    )
    enrollment = outcome.enrollment
    client = bind(Client(), enrollment)
    total = len(services.item_order(enrollment=enrollment, step="test"))
    for _ in range(total - 1):
        answer_current(enrollment)
    item = services.current_item(enrollment_id=enrollment.pk).item
    response = client.post(
        "/work/answer/", {"item": handle(enrollment, item), "label": item.gold[0]}, HTTP_HX_REQUEST="true"
    )
    assert response["HX-Redirect"].endswith("/work/")
    _, html = _page(client)
    assert 'action="https://workersandbox.mturk.com/mturk/externalSubmit"' in html and "data-autosubmit" in html
    code = done_code(enrollment.cohort)
    assert code.startswith("DONE123")
    assert 'name="assignmentId" value="AS1"' in html and f'name="completion_code" value="{code}"' in html


def test_filtered_worker_sees_the_screenout_code_after_the_last_feedback(demo_data):
    enrollment, client = _worker("sst2", 10)
    result = answer_current(enrollment)
    services.filter_enrollment(enrollment_id=enrollment.pk, actor="r", reason="test")
    _, html = _page(client)
    assert 'data-view="feedback"' in html
    client.post("/work/next/", {"item": handle(enrollment, result.answer.example_id)})
    _, html = _page(client)
    code = screen_out_code(enrollment.cohort)
    assert 'data-view="filtered"' in html and code in html and "DONE123" not in html
    assert f"https://app.prolific.com/submissions/complete?cc={code}" in html
    response = client.post("/work/answer/", {"item": handle(enrollment, result.answer.example_id), "label": "positive"})
    assert response.status_code == 409 and 'data-view="filtered"' in response.content.decode()


def test_withdrawn_and_expired_workers_see_that_the_session_ended(demo_data):
    from datetime import timedelta

    from django.utils import timezone

    enrollment, client = _worker("sst2", 0)
    services.withdraw(enrollment_id=enrollment.pk, actor="worker")
    _, html = _page(client)
    assert 'data-view="ended"' in html and "You have withdrawn" in html and 'name="item"' not in html
    late, client = _worker("mnli", 0, time_limit_minutes=5)
    Enrollment.objects.filter(pk=late.pk).update(enrolled_at=timezone.now() - timedelta(minutes=6))
    _, html = _page(client)
    assert 'data-view="ended"' in html and "time allowed for this study has passed" in html
    assert "there is no code for it" in html and 'data-role="stopped"' not in html, "nothing answered: no code"


# ---------------------------------------------------------------- changing the last test answer


def _revision_events(enrollment):
    from annotation.models import AuditEvent

    return [json.loads(e.reason) for e in AuditEvent.objects.filter(enrollment=enrollment, action="revise test answer")]


def test_only_the_latest_test_answer_can_be_changed_through_http(demo_data):
    enrollment, client = _worker("sst2", shots=0)
    first = answer_current(enrollment, right=True).answer
    wrong = next(x for x in ("positive", "negative") if x != first.example.gold[0])

    # The page offers it, with the answer chosen, and the form posts to /work/revise/.
    response, html = _page(client)
    assert 'data-role="undo"' in html and "Your answer to item 1" in html
    html = client.get("/work/revise/").content.decode()
    assert f'name="item" value="{handle(enrollment, first.example_id)}"' in html and 'action="/work/revise/"' in html
    assert f'value="{first.example.gold[0]}" data-key' in html and " checked>" in html

    # Changed: stored, S1 recomputed, audited with both values.
    response = client.post("/work/revise/", {"item": handle(enrollment, first.example_id), "label": wrong})
    assert response.status_code == 302
    stored = Answer.objects.get(pk=first.pk)
    assert stored.texts == [wrong] and stored.s1 == 0.0 and stored.position == 0
    (event,) = _revision_events(enrollment)
    assert event["before"]["texts"] == [first.example.gold[0]] and event["after"]["texts"] == [wrong]
    assert event["example_id"] == first.example_id
    # ... and back again (still the latest): S1 back to 1.
    assert (
        client.post(
            "/work/revise/",
            {"item": handle(enrollment, first.example_id), "label": first.example.gold[0]},
            HTTP_HX_REQUEST="true",
        ).status_code
        == 200
    )
    assert Answer.objects.get(pk=first.pk).s1 == 1.0 and len(_revision_events(enrollment)) == 2

    # Once the next answer is in, the first one is final: refused (409), nothing changes.
    second = answer_current(enrollment, right=True).answer
    response = client.post("/work/revise/", {"item": handle(enrollment, first.example_id), "label": wrong})
    assert response.status_code == 409 and "can no longer be changed" in response.content.decode()
    htmx = client.post(
        "/work/revise/", {"item": handle(enrollment, first.example_id), "label": wrong}, HTTP_HX_REQUEST="true"
    )
    assert htmx.status_code == 200 and htmx["X-Answer-Status"] == "409"
    assert Answer.objects.get(pk=first.pk).texts == [first.example.gold[0]]
    # An item not answered yet (the current one) cannot be "revised" into an answer either.
    current = services.current_item(enrollment_id=enrollment.pk).item
    assert client.post("/work/revise/", {"item": handle(enrollment, current), "label": "positive"}).status_code == 409
    assert not Answer.objects.filter(enrollment=enrollment, example=current).exists()
    # An invalid answer for the latest one: 400, nothing changes.
    response = client.post("/work/revise/", {"item": handle(enrollment, second.example_id), "label": "maybe"})
    assert response.status_code == 400 and Answer.objects.get(pk=second.pk).texts == second.texts
    assert len(_revision_events(enrollment)) == 2


def test_training_answers_and_others_answers_cannot_be_changed(demo_data):
    enrollment, client = _worker("sst2", shots=10)
    training = answer_current(enrollment, right=True).answer
    client.post("/work/next/", {"item": handle(enrollment, training.example_id)})
    html = _page(client)[1]
    assert 'data-role="undo"' not in html  # training answers are final: nothing offered
    wrong = next(x for x in ("positive", "negative") if x != training.example.gold[0])
    response = client.post("/work/revise/", {"item": handle(enrollment, training.example_id), "label": wrong})
    assert response.status_code == 409
    assert "can no longer be changed" in client.get("/work/revise/").content.decode()
    assert Answer.objects.get(pk=training.pk).texts == training.texts

    # Another worker's latest test answer: this client is bound to its own enrollment, so it is refused.
    other, _ = _worker("sst2", shots=0)
    theirs = answer_current(other, right=True).answer
    response = client.post("/work/revise/", {"item": handle(enrollment, theirs.example_id), "label": wrong})
    assert response.status_code == 409
    assert Answer.objects.get(pk=theirs.pk).texts == theirs.texts and not _revision_events(other)


def test_the_last_test_answer_is_final_once_the_study_is_completed(demo_data):
    enrollment, client = _worker("sst2", shots=0)
    total = Example.objects.filter(task__slug="sst2", role="test").count()
    for _ in range(total):
        last = answer_current(enrollment, right=True).answer
    enrollment.refresh_from_db()
    assert enrollment.state == Enrollment.State.COMPLETED
    wrong = next(x for x in ("positive", "negative") if x != last.example.gold[0])
    response = client.post("/work/revise/", {"item": handle(enrollment, last.example_id), "label": wrong})
    assert response.status_code == 409
    assert Answer.objects.get(pk=last.pk).texts == last.texts


def test_spans_answer_changed_keeps_offsets_and_rescored(demo_data):
    enrollment, client = _worker("squad2", shots=0)
    state = services.current_item(enrollment_id=enrollment.pk)
    first = services.submit_answer(enrollment_id=enrollment.pk, item=state.item_handle, answer=[]).answer  # "no answer"
    html = client.get("/work/revise/").content.decode()
    assert 'data-initial="[]"' in html and "Change answer" in html
    item = first.example
    raw = {"none": "1"} if not item.gold else {}
    if item.gold:
        start = item.context.find(item.gold[0])
        raw = {"spans": json.dumps([[start, start + len(item.gold[0])]])}
    assert client.post("/work/revise/", {"item": handle(enrollment, item), **raw}).status_code == 302
    stored = Answer.objects.get(pk=first.pk)
    assert stored.s1 == 1.0
    if item.gold:
        html = client.get("/work/revise/").content.decode()
        assert f'data-initial="[[{start}, {start + len(item.gold[0])}]]"' in html


def test_the_worker_api_changes_only_the_latest_test_answer(demo_data):
    from tests.annotation.factories import WorkerClient

    study = make_study(tasks=("sst2",), shots=(0,))
    worker = WorkerClient(cohort_of(study, "sst2", 0), "API-REV")
    enrollment = Enrollment.objects.get(worker__external_id=pid_for("API-REV"))
    first_handle = worker.current().json()["item"]["id"]  # as the worker was shown the item
    first = answer_current(enrollment, right=True).answer
    wrong = next(x for x in ("positive", "negative") if x != first.example.gold[0])
    response = worker.send("post", "/api/work/revise/", {"item": first_handle, "answer": [wrong]})
    assert response.status_code == 200, response.content
    assert response.json() == {"item": first_handle, "position": 0, "answer": [wrong]}  # no S1, no gold
    assert Answer.objects.get(pk=first.pk).s1 == 0.0
    answer_current(enrollment, right=True)
    response = worker.send("post", "/api/work/revise/", {"item": first_handle, "answer": [first.example.gold[0]]})
    assert response.status_code == 409 and "last test answer" in response.json()["detail"]
    assert Answer.objects.get(pk=first.pk).texts == [wrong]
    assert (
        worker.send("post", "/api/work/revise/", {"item": first_handle, "answer": [wrong]}, csrf=False).status_code
        == 403
    )


def test_consent_brand_instructions_cookie_and_exact_match_note(demo_data):
    study = make_study(tasks=("conll03",), shots=(10,))
    enrollment = enroll(cohort_of(study, "conll03", 10))
    client = bind(Client(), enrollment, started=False)
    html = _page(client)[1]
    assert "can end early after the training step" in html and "screen-out payment" in html
    assert "<title>CoNLL03 · Annotation study</title>" in html and "Annotation study · CoNLL03" in html
    assert "change your last answer until you submit the next one" in html and "matched exactly" in html
    bind(client, enrollment)
    html = _page(client)[1]
    assert "data-remember open>" in html  # open until the worker closes them
    client.cookies["clues_instructions"] = "closed"
    html = _page(client)[1]
    assert "data-remember>" in html and "data-remember open" not in html
    context = services.current_item(enrollment_id=enrollment.pk).item.context
    assert 'class="tok punct' in html or not any(not c.isalnum() and not c.isspace() for c in context)
    zero = enroll(cohort_of(make_study(tasks=("sst2",), shots=(0,)), "sst2", 0))
    zero_client = bind(Client(), zero, started=False)
    assert "can end early" not in _page(zero_client)[1]  # no training step, no screen-out after it
