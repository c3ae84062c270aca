"""Attention checks: written in the dashboard, shown as a normal item, excluded from every result."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from annotation import attention, selectors
from annotation.models import Answer, AttentionAnswer, AttentionCheck, Enrollment
from annotation.pay import worked_seconds
from tasks_data.models import Example
from tests.annotation.factories import WorkerClient, cohort, gold_answer, make_study, name_of, pid_for, trim_test_set

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clues")]

N_TEST = 4
CHECK = {
    "task": "sst2",
    "position": "1",
    "question": "This is an attention check: for this item choose negative.",
    "context": "Please read the instruction above and follow it.",
    "expected": "negative",
}


def _researcher_client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _walk(c, pid: str, check_answer: list) -> list[dict]:
    """Answer every item through the worker API: gold, and ``check_answer`` to the check; what was seen."""
    worker = WorkerClient(c, pid)
    check = AttentionCheck.objects.get(study=c.study)
    seen = []
    while (state := worker.current().json())["item"] is not None:
        item = state["item"]
        shown = worker.example(item["id"])  # the test's oracle: the handle alone says nothing
        seen.append({"item": item, "progress": state["progress"], "pk": shown.pk})
        if shown.pk == check.item_id:
            answer = check_answer
        else:
            answer = gold_answer(shown)
        response = worker.answer(item["id"], answer)
        assert response.status_code == 201, response.content
    assert state["step"] == "done"
    return seen


@pytest.fixture
def study(researcher):
    trim_test_set("sst2", N_TEST)
    study = make_study(
        tasks=["sst2"], shots=[0], created_by=researcher, filter_floor=None, filter_fraction=None, workers_per_cohort=2
    )
    assert not study.has_attention_checks  # off by default, as in the paper
    client = _researcher_client(researcher)
    response = client.post(f"/dashboard/studies/{study.pk}/attention-checks/", CHECK)
    assert response.status_code == 302
    study.refresh_from_db()
    assert study.has_attention_checks
    c = cohort(study, "sst2", 0)
    seen = _walk(c, "PASS", ["negative"])
    _walk(c, "FAIL", ["positive"])
    return study, seen


def test_an_example_imported_after_a_check_never_takes_its_item_id(study):
    study, _ = study
    check = AttentionCheck.objects.get(study=study)
    model = Example.objects.filter(task__slug="sst2").first()
    later = Example.objects.create(
        task=model.task,
        role=Example.Role.TEST,
        position=10_000,
        clues_id="later",
        context="imported after the check",
        gold=["positive"],
    )
    assert later.pk != check.item_id and later.pk > check.item_id  # the id came from the same sequence


def test_the_check_is_shown_as_a_normal_item_at_the_workers_own_place(study):
    study, seen = study
    check = AttentionCheck.objects.get(study=study)
    seed = Enrollment.objects.get(worker__external_id=pid_for("PASS")).order_seed
    place = attention.shown_before(check, seed=seed, test_items=N_TEST)
    assert abs(place - check.position) <= attention.MIN_SPREAD
    assert [s["pk"] == check.item_id for s in seen] == [i == place for i in range(N_TEST + 1)]
    shown = seen[place]["item"]
    assert set(shown) == set(seen[place - 1 if place else 1]["item"]) and shown["question"] == CHECK["question"]
    assert shown["context"] == CHECK["context"] and shown["kind"] == "label"
    assert [s["progress"] for s in seen] == [{"done": i, "total": N_TEST + 1} for i in range(N_TEST + 1)]
    assert not Example.objects.filter(pk=check.item_id, task__slug="sst2", role="test").exists()


def test_checks_are_excluded_from_every_result(study, researcher):
    study, _ = study
    client = _researcher_client(researcher)
    assert AttentionAnswer.objects.filter(enrollment__cohort__study=study).count() == 2
    assert Answer.objects.filter(enrollment__cohort__study=study).count() == 2 * N_TEST
    table = json.loads(client.get(f"/api/studies/{study.pk}/export/table/", {"fmt": "json"}).content)
    # Both workers gave the gold on every test item: 100.0 each, whatever FAIL did on the check.
    assert table["cells"] == [{"task": "sst2", "shots": 0, "mean": 100.0, "std": 0.0, "n": 2}]
    assert table["majority"][0]["s1"] == 100.0
    rows = json.loads(client.get(f"/api/studies/{study.pk}/export/annotators/", {"fmt": "json"}).content)["rows"]
    seen = {
        (name_of(r["worker"]), r["test_done"], r["test_total"], r["items_answered"], r["test_s1_percent"]) for r in rows
    }
    assert seen == {("PASS", N_TEST, N_TEST, N_TEST, 100.0), ("FAIL", N_TEST, N_TEST, N_TEST, 100.0)}
    archive = zipfile.ZipFile(io.BytesIO(client.get(f"/api/studies/{study.pk}/export/predictions/").content))
    check = AttentionCheck.objects.get(study=study)
    for name in archive.namelist():
        lines = [json.loads(line) for line in archive.read(name).decode().splitlines()]
        assert len(lines) == N_TEST and check.item_id not in {line["id"] for line in lines}
    agreement = json.loads(client.get(f"/api/studies/{study.pk}/export/agreement/", {"fmt": "json"}).content)
    assert agreement["rows"][0]["mean_pairwise_s1_percent"] == 100.0
    results = client.get(f"/api/studies/{study.pk}/results/").json()
    assert results["cells"][0]["mean"] == 100.0
    (grid,) = selectors.study_grid(study)
    assert grid["test_items_done"] == grid["test_items_total"] == 2 * N_TEST


def test_a_failure_shows_on_the_cohort_page_and_rejects_nobody(study, researcher):
    study, _ = study
    c = cohort(study, "sst2", 0)
    html = _researcher_client(researcher).get(f"/dashboard/cohorts/{c.pk}/").content.decode()
    fail_row = html[html.index(f'data-worker="{pid_for("FAIL")}"') :]
    fail_row = fail_row[: fail_row.index("</tr>")]
    assert "failed 1 of 1" in fail_row and "<code>positive</code>" in fail_row
    pass_row = html[html.index(f'data-worker="{pid_for("PASS")}"') :]
    assert "passed 1" in pass_row[: pass_row.index("</tr>")]
    assert set(Enrollment.objects.filter(cohort=c).values_list("state", flat=True)) == {"completed"}


def test_writing_checks_is_the_owner_s_and_bad_checks_are_refused(researcher):
    trim_test_set("sst2", N_TEST)
    study = make_study(tasks=["sst2"], shots=[0], created_by=researcher)
    other = User.objects.create_user("other-researcher")
    other.groups.add(Group.objects.get_or_create(name="researchers")[0])
    url = f"/dashboard/studies/{study.pk}/attention-checks/"
    assert _researcher_client(other).get(url).status_code == 404
    assert _researcher_client(other).post(url, CHECK).status_code == 404
    client = _researcher_client(researcher)
    for change, message in [
        ({"expected": "maybe"}, "labels"),
        ({"position": str(N_TEST)}, "position"),
        ({"position": "x"}, "whole number"),
        ({"task": "mnli"}, "not a task of this study"),
        ({"context": "x" * 5001}, "at most 5000"),
        ({"question": "q" * 501}, "at most 500"),
    ]:
        response = client.post(url, {**CHECK, **change})
        assert response.status_code == 400 and message in response.content.decode(), change
    assert not AttentionCheck.objects.filter(study=study).exists()
    # A worker who joined first (the researcher trying the link) does not stop a check: it is added, and it is met
    # by the workers whose test step begins after it; the early one is never shown it, so the count they were told
    # (the description's, the progress total) never changes under them.
    early = WorkerClient(cohort(study, "sst2", 0), "EARLY")
    told = early.current().json()["progress"]
    assert client.post(url, CHECK).status_code == 302
    study.refresh_from_db()
    assert study.has_attention_checks and AttentionCheck.objects.filter(study=study).count() == 1
    check = AttentionCheck.objects.get(study=study)
    shown = []
    while (state := early.current().json())["item"] is not None:
        assert state["progress"]["total"] == told["total"] == N_TEST
        shown.append(early.example(state["item"]["id"]).pk)
        assert early.answer(state["item"]["id"], gold_answer(early.example(state["item"]["id"]))).status_code == 201
    assert check.item_id not in shown and len(shown) == N_TEST
    late = WorkerClient(cohort(study, "sst2", 0), "LATE")
    assert late.current().json()["progress"]["total"] == N_TEST + 1


def test_a_span_check_marks_a_word(researcher):
    trim_test_set("conll03", 2)
    study = make_study(tasks=["conll03"], shots=[0], created_by=researcher)
    client = _researcher_client(researcher)
    url = f"/dashboard/studies/{study.pk}/attention-checks/"
    bad = client.post(
        url,
        {
            "task": "conll03",
            "position": "0",
            "question": "Mark the word 'river'.",
            "context": "The boat went down the stream.",
            "expected": "river",
        },
    )
    assert bad.status_code == 400 and "not in the text" in bad.content.decode()
    ok = client.post(
        url,
        {
            "task": "conll03",
            "position": "0",
            "question": "Mark the word 'river'.",
            "context": "The boat went down the river.",
            "expected": "river",
        },
    )
    assert ok.status_code == 400 and "whole words" in ok.content.decode()  # "river." is the word shown
    ok = client.post(
        url,
        {
            "task": "conll03",
            "position": "0",
            "question": "Mark the word 'river'.",
            "context": "The boat went down the river today.",
            "expected": "river",
        },
    )
    assert ok.status_code == 302
    worker = WorkerClient(cohort(study, "conll03", 0), "W")
    worker.send("post", "/work/start/", {})
    check = AttentionCheck.objects.get(study=study)
    if attention.shown_before(check, seed=Enrollment.objects.get().order_seed, test_items=2):  # its place: item 2
        real = worker.example(worker.current().json()["item"]["id"])
        assert worker.answer(worker.handle(real), gold_answer(real)).status_code == 201
    page = worker.client.get("/work/").content.decode()
    assert "Mark the word &#x27;river&#x27;." in page and 'data-e="28">river</span>' in page  # the worker page
    item = worker.current().json()["item"]
    answered = Answer.objects.values_list("example_id", flat=True)
    real = Example.objects.filter(task__slug="conll03", role="test").exclude(pk__in=answered).first()
    before = Answer.objects.count()
    skipped = worker.answer(worker.handle(real), [])  # a worker who tries to skip the check
    assert skipped.status_code == 409 and Answer.objects.count() == before
    start = item["context"].index("river")
    assert worker.answer(item["id"], [{"start": start, "end": start + 5}]).status_code == 201
    assert worker.answer(item["id"], []).status_code == 409  # answered once, like any item
    assert AttentionAnswer.objects.get().passed and Answer.objects.count() == before
    assert worker.current().json()["item"] is None or worker.current().json()["item"]["id"] != item["id"]


def test_a_study_with_checks_costs_one_query_more_per_test_request(researcher):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    trim_test_set("sst2", N_TEST)
    study = make_study(tasks=["sst2"], shots=[0], created_by=researcher)
    assert (
        _researcher_client(researcher).post(f"/dashboard/studies/{study.pk}/attention-checks/", CHECK).status_code
        == 302
    )
    worker = WorkerClient(cohort(study, "sst2", 0), "Q")
    counts, at = [], None
    while True:
        with CaptureQueriesContext(connection) as current:
            state = worker.current().json()
        if state["item"] is None:
            break
        item = state["item"]
        if item["question"] == CHECK["question"]:
            at, answer = len(counts), ["negative"]
        else:
            answer = gold_answer(worker.example(item["id"]))
        with CaptureQueriesContext(connection) as answered:
            assert worker.answer(item["id"], answer).status_code == 201
        counts.append((len(current), len(answered)))
    # One statement more than tests/hardening/test_query_counts.py's ceilings (the checks' lookup), the
    # same at every item; the check itself costs no more (it is not read from the test file). The last
    # answer also completes the step.
    items = [c for i, c in enumerate(counts[:-1]) if i != at]
    (current, answer), (check_current, check_answer) = items[0], counts[at]
    assert len(set(items)) == 1 and check_current <= current and check_answer <= answer, counts
    assert current <= 4 + 1 and answer <= 8 + 1, counts


def test_the_time_of_a_check_s_answer_is_paid_as_an_item_s(researcher, clock):
    """A worker answers every 200 s, a check among the items (they cannot tell it apart). With an idle cap of 300 s,
    the check's answer splits what would be one 400-second gap into two: every second is paid, on the researcher's
    rows and in the bonus's figure alike."""
    trim_test_set("sst2", N_TEST)
    study = make_study(
        tasks=["sst2"],
        shots=[0],
        created_by=researcher,
        filter_floor=None,
        filter_fraction=None,
        idle_cap_seconds=300,
    )
    response = _researcher_client(researcher).post(f"/dashboard/studies/{study.pk}/attention-checks/", CHECK)
    assert response.status_code == 302
    c = cohort(study, "sst2", 0)
    check = AttentionCheck.objects.get(study=study)
    worker = WorkerClient(c, "steady")
    while (state := worker.current().json())["item"] is not None:
        clock.advance(200)
        shown = worker.example(state["item"]["id"])
        answer = ["negative"] if shown.pk == check.item_id else gold_answer(shown)
        assert worker.answer(state["item"]["id"], answer).status_code == 201
    enrollment = Enrollment.objects.select_related("cohort__study", "cohort__task", "worker").get(
        pk=worker.enrollment_id
    )
    assert AttentionAnswer.objects.filter(enrollment=enrollment).count() == 1
    assert worked_seconds(enrollment) == {1: 200.0 * (N_TEST + 1)}
    (row,) = selectors.enrollment_rows([enrollment])
    assert row["active_seconds"] == 200.0 * (N_TEST + 1)
