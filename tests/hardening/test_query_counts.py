"""Every worker-facing request runs a constant number of SQL queries.

"Constant" means: the same at the first item and at a later one, in a small test set and in a
large one, and for each kind of item (training, last training item with the filtering decision,
test, last test item). Each request is also held to a fixed ceiling, so that a change that adds
a query to the hot path shows here (benchmarks/load.py measures what the queries cost).

Counts are of the statements Django runs in the request, a page's session included where it is a query (the database
session backend, without CACHE_URL; with Redis, as in production, the session read is not a query). SAVEPOINT and
RELEASE statements count: in these tests every request runs inside the test's transaction.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from annotation import services
from annotation.models import Enrollment
from tasks_data.models import Example
from tests.annotation.factories import WorkerClient, cohort, gold_answer, make_study, pid_for, prolific, trim_test_set

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clues")]

# The counts (queries per request; see the module docstring for what counts), held exactly where the hot path's.
# The worker API reads no session: the browser's binding is a signed cookie (annotation.session).
PG = connection.vendor == "postgresql"
# progress, state and the item in one statement, which records "served at" on PostgreSQL (an UPDATE of its own on
# SQLite)
CURRENT = 1 if PG else 2
# An answer within a step: the enrollment with its progress and item (one statement), then the INSERT that
# holds only if the enrollment is unchanged: one statement on PostgreSQL, the UPDATE and the INSERT on SQLite, in a
# savepoint here (inside the test's transaction).
ANSWER = 1 + (3 if PG else 4)
# The locking path (the end of a step or a part, a shuffled order, a refusal): savepoint, lock, the step's answer
# count with the item after them (one statement), INSERT, release; the INSERT clears "served at" in its own statement
# on PostgreSQL, with an UPDATE of its own on SQLite.
LOCKED = 5 if PG else 6
# the read, then lock .. INSERT, then training S1, the others' S1, state UPDATE, audit INSERT; the test step's end:
# the part's timing kept, the stored results marked stale
MAX_ANSWER_END_OF_STEP = 14
MAX_PAGE = 21  # any /work/ page or fragment (worker_pages/views.py); the htmx answer stores and re-renders
# cohort, the platform's check (Prolific: the cohort's Prolific study, kept by its app), worker (get or create,
# savepoints), exposure, cohort lock, count, enrollment, audit, session; part 1's time limit as they join (the
# cohort's test and training items, its measured part times, and the longest the platform's listing allows)
MAX_JOIN = 21


def queries(fn) -> tuple[int, object]:
    with CaptureQueriesContext(connection) as captured:
        result = fn()
    return len(captured), result


def walk(worker: WorkerClient) -> list[dict]:
    """Answer every item through the API; per request: the step, the position, the query counts."""
    rows = []
    while True:
        n_current, response = queries(worker.current)
        assert response.status_code == 200
        state = response.json()
        if state["item"] is None:
            rows.append({"step": state["step"], "done": state["progress"]["done"], "current": n_current})
            return rows
        handle = state["item"]["id"]
        example = worker.example(handle)
        n_answer, answered = queries(lambda: worker.answer(handle, gold_answer(example)))  # noqa: B023
        assert answered.status_code == 201, answered.content
        body = answered.json()
        rows.append(
            {
                "step": state["step"],
                "done": state["progress"]["done"],
                "total": state["progress"]["total"],
                "current": n_current,
                "answer": n_answer,
                "next": body["next_step"],
            }
        )


def test_the_worker_api_runs_a_constant_number_of_queries(django_assert_max_num_queries):
    trim_test_set("sst2", 12)
    # The filtering decision needs two other workers who finished training (the fraction rule).
    study = make_study(shots=[10], filter_fraction=0.5)
    sst10 = cohort(study, "sst2", 10)
    for pid in ("OTHER1", "OTHER2"):
        walk(WorkerClient(sst10, pid))
    rows = walk(WorkerClient(sst10, "P1"))
    training = [r for r in rows if r["step"] == "training"]
    test = [r for r in rows if r["step"] == "test"]
    assert len(training) == 10 and len(test) == 12 and rows[-1]["step"] == "done"
    assert training[-1]["next"] == "test" and test[-1]["next"] == "done"

    # Reading the current item: the same at every position of both steps.
    assert len({r["current"] for r in training + test}) == 1, rows
    assert training[0]["current"] == CURRENT
    # Answering: the same for every item but the last of a step, which moves the worker on.
    assert len({r["answer"] for r in training[:-1] + test[:-1]}) == 1, rows
    assert training[0]["answer"] == ANSWER
    assert training[-1]["answer"] > 1 + LOCKED  # the locking path, after the read
    assert training[-1]["answer"] <= MAX_ANSWER_END_OF_STEP and test[-1]["answer"] <= MAX_ANSWER_END_OF_STEP
    # After the last answer: the "done" state, with its completion code (the part's codes).
    assert rows[-1]["current"] <= CURRENT + 1


def test_the_counts_do_not_grow_with_the_test_set_or_the_position():
    """A late item of SST-2's whole test set costs what the first item of a 3-item MNLI test set costs."""
    trim_test_set("mnli", 3)
    full = Example.objects.filter(task__slug="sst2", role=Example.Role.TEST).count()
    study = make_study(tasks=["sst2", "mnli"], shots=[0])
    counts = {}
    for task, skip in (("sst2", full - 2), ("mnli", 0)):
        worker = WorkerClient(cohort(study, task, 0), f"P-{task}")
        enrollment = Enrollment.objects.get(worker__external_id=pid_for(f"P-{task}"))
        for _ in range(skip):  # move the worker far into the test step
            state = services.current_item(enrollment_id=enrollment.pk)
            services.submit_answer(enrollment_id=enrollment.pk, item=state.item_handle, answer=gold_answer(state.item))
        n_current, response = queries(worker.current)
        assert response.json()["progress"]["done"] == skip
        handle = response.json()["item"]["id"]
        example = worker.example(handle)
        n_answer, answered = queries(lambda: worker.answer(handle, gold_answer(example)))  # noqa: B023
        assert answered.status_code == 201
        counts[task] = (n_current, n_answer)
    assert counts["sst2"] == counts["mnli"], counts


def test_a_shuffled_test_order_runs_a_constant_number_of_queries_too():
    trim_test_set("sst2", 6)
    worker = WorkerClient(cohort(make_study(shots=[0], test_order="shuffle"), "sst2", 0), "P1")
    rows = walk(worker)
    assert len({r["current"] for r in rows[:-1]}) == 1 and len({r["answer"] for r in rows[:-2]}) == 1, rows
    # The order's ids, then the item by its id, in the read and in the answer.
    assert rows[0]["current"] == CURRENT + 2 and rows[0]["answer"] == ANSWER + 2


def test_joining_runs_a_constant_number_of_queries(django_assert_max_num_queries):
    sst10 = cohort(make_study(shots=[10], workers_per_cohort=50), "sst2", 10)
    first, _ = queries(lambda: Client().get(sst10.join_path, prolific("J1")))
    for n in range(2, 12):
        WorkerClient(sst10, f"J{n}")
    later, response = queries(lambda: Client().get(sst10.join_path, prolific("J99")))
    assert response.status_code == 302
    assert first == later <= MAX_JOIN
    # A returning worker (same browser) and a refused one cost no more.
    worker = WorkerClient(sst10, "BACK")
    again, response = queries(lambda: worker.client.get(sst10.join_path, prolific("BACK")))
    assert response.status_code == 302 and again <= MAX_JOIN
    back = {"PROLIFIC_PID": pid_for("BACK"), "SESSION_ID": "x"}
    refused, response = queries(lambda: Client().get(sst10.join_path, back))
    assert response.status_code == 403 and refused <= MAX_JOIN


# ---------------------------------------------------------------- the worker pages (worker_pages/views.py)


def page_counts(client: Client, example_answer) -> dict[str, int]:
    """Query counts of the worker pages at the worker's current position (htmx fragments and full pages)."""
    htmx = {"HTTP_HX_REQUEST": "true"}
    counts = {
        "GET /work/": queries(lambda: client.get("/work/"))[0],
        "GET /work/ (htmx)": queries(lambda: client.get("/work/", **htmx))[0],
    }
    handle, form = example_answer()
    n, response = queries(lambda: client.post("/work/answer/", {"item": handle, **form}, **htmx))
    assert response.status_code == 200 and response.get("X-Answer-Status") is None, response.content[:300]
    counts["POST /work/answer/ (htmx)"] = n
    return counts


def test_the_worker_pages_run_a_constant_number_of_queries():
    """GET /work/ (item and feedback views) and the htmx answer, at the first and at later items of each step."""
    trim_test_set("sst2", 6)
    study = make_study(shots=[10], filter_fraction=None)
    worker = WorkerClient(cohort(study, "sst2", 10), "P1")
    client = worker.client
    client.defaults["HTTP_X_CSRFTOKEN"] = worker.csrf
    enrollment = Enrollment.objects.get(worker__external_id=pid_for("P1"))
    description = queries(lambda: client.get("/work/"))[0]
    start = queries(lambda: client.post("/work/start/"))[0]

    def current_answer():
        handle = worker.current().json()["item"]["id"]  # as the worker is shown it
        return handle, {"label": worker.example(handle).gold[0]}

    seen = {}
    for _ in range(16):
        state = services.current_item(enrollment_id=enrollment.pk)
        counts = page_counts(client, current_answer)
        seen.setdefault(state.step, []).append(counts)
        if state.step == "training":  # the feedback page, then Next
            last = enrollment.answers.order_by("-pk").first()
            handle = services.item_handle(enrollment_id=enrollment.pk, item_id=last.example_id)
            counts["GET /work/ (feedback)"] = queries(lambda: client.get("/work/"))[0]
            counts["POST /work/next/"] = queries(
                lambda: client.post("/work/next/", {"item": handle}, HTTP_HX_REQUEST="true")  # noqa: B023
            )[0]
        if services.current_item(enrollment_id=enrollment.pk).item is None:
            break
    training, test = seen["training"], seen["test"]
    assert len(training) == 10 and len(test) == 6
    # Constant along each step: the same from the second item to the one before the last. The first test item's
    # page costs one query more (the page checks whether the last training feedback is still to be shown), and the
    # last item of a step moves the worker on: both are bounded like every other request.
    for step in (training[1:-1], test[1:-1]):
        for key in step[0]:
            assert len({c[key] for c in step}) == 1, (key, [c[key] for c in step])
    every = [description, start, *(n for counts in training + test for n in counts.values())]
    assert max(every) <= MAX_PAGE, {"description": description, "start": start, "training": training, "test": test}
