"""No response a worker can reach reveals a test-set gold answer, or a training gold answer before it is answered.

How this is shown. A check for gold strings in the responses cannot work: a span task's gold is a
piece of the context the worker must be shown, and a label task's gold is one of the labels on
every page. So the test compares two worlds that differ only in their gold answers:

1. worker A walks the whole journey (join link, description, start, every item of the training
   and the test step, feedback, completion) through every page, htmx fragment and API response
   the worker UI and API offer, answering each item the same, gold-independent way (first label,
   first word, no answer, first candidate: a mix of the UI form and the API), and every response
   body is recorded;
2. every gold answer of the task is then changed in the database (the other label, another span
   of the context, no answer, another candidate entity);
3. worker B walks the same journey with the same answers, in the same cohort (filtering is off,
   so the same answers lead through the same steps), recording every body.

A response that depends on a gold answer differs between the worlds. The only ones allowed to
differ are the answer to a training item (its gold and S1 are the feedback) and the feedback page
shown for it until the worker moves on; every other pair, and every response of the test step,
must be byte-identical once the per-worker tokens (CSRF tokens, answer ids, the worker id) are
masked. Besides, the API's JSON never carries a gold-like key (gold, s1, clues_id, is_impossible,
answers) except ``gold`` and ``s1`` in a training answer's response, and there only that item's.
"""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from annotation.models import Enrollment
from tasks_data.models import Example
from tasks_data.registry import CLUES_TASKS
from tests.annotation.factories import (
    FORBIDDEN_KEYS,
    bound_enrollment_id,
    cohort,
    example_of,
    keys_anywhere,
    make_study,
    prolific,
    trim_test_set,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clues")]

TASK_LIST = ("sst2", "mnli", "conll03", "squad2", "record")
TEST_ITEMS = 3
HTMX = {"HTTP_HX_REQUEST": "true"}
_MASKS = [
    (re.compile(r'(name="csrfmiddlewaretoken" value=")[^"]+'), r"\1CSRF"),
    (re.compile(r'("X-CSRFToken": ")[^"]+'), r"\1CSRF"),
    # Each worker's handle of an item is their own (annotation.handles): the same item, another handle.
    (re.compile(r'(name="item" value=")[a-z2-7]{16}'), r"\1HANDLE"),
    (re.compile(r'("(?:id|item)":")[a-z2-7]{16}"'), r'\1HANDLE"'),
    (re.compile(r"WORKER-[AB]"), "WORKER-X"),
    # The part's clock: the seconds left as each page was made.
    (re.compile(r'(data-seconds-left=")[\d.]+'), r"\1SECONDS"),
    (re.compile(r'(data-role="clock">)[\d:]+'), r"\1CLOCK"),
]


def mask(body: str) -> str:
    for pattern, replacement in _MASKS:
        body = pattern.sub(replacement, body)
    return body


def fixed_answer(example: Example) -> tuple[list, dict]:
    """The same answer whatever the gold: (API answer, UI form fields)."""
    kind = example.task.spec.answer_kind.name
    if kind == "label":
        label = example.task.spec.labels[0]
        return [label], {"label": label}
    if kind == "spans":
        end = example.context.index(" ") if " " in example.context else len(example.context)
        return [{"start": 0, "end": end}], {"spans": json.dumps([[0, end]])}
    if kind == "span_or_none":
        return [], {"none": "1"}
    s, e = example.candidates[0]
    return [{"start": s, "end": e}], {"spans": json.dumps([[s, e]])}


def other_gold(example: Example) -> list[str]:
    """A different, still well-formed gold answer for the same item."""
    spec = example.task.spec
    kind = spec.answer_kind.name
    if kind == "label":
        return [next(label for label in spec.labels if label != example.gold[0])]
    if kind == "spans":
        word = example.context.split()[-1]
        return [word] if list(example.gold) != [word] else []
    if kind == "span_or_none":
        return [] if example.gold else [example.context.split()[0]]
    texts = [example.context[s:e] for s, e in example.candidates]
    return [next(t for t in texts if t not in example.gold)]


class Journey:
    """One worker's walk through every worker page, fragment and API endpoint; records every response."""

    def __init__(self, cohort_, pid: str):
        self.client = Client(enforce_csrf_checks=True)
        self.records: list[tuple[str, str, bool]] = []  # (what, body, may reveal the gold of an answered item)
        self.api_bodies: list[tuple[str, dict]] = []
        self.cohort, self.pid = cohort_, pid

    def record(self, what: str, response, *, reveals: bool = False, expect=(200,)):
        assert response.status_code in expect, (what, response.status_code, response.content[:300])
        body = response.content.decode()
        self.records.append((what, mask(body), reveals))
        if response.get("Content-Type", "").startswith("application/json"):
            self.api_bodies.append((what, json.loads(body)))

    @property
    def csrf(self) -> dict:
        return {"HTTP_X_CSRFTOKEN": self.client.cookies["csrftoken"].value}

    def walk(self):
        c = self.client
        self.record("join", c.get(self.cohort.join_path, prolific(self.pid)), expect=(302,))
        self.record("description page", c.get("/work/"))
        self.record("description fragment", c.get("/work/", **HTMX))
        self.record("api current (before start)", c.get("/api/work/current/"))
        self.record("start", c.post("/work/start/", **HTMX, **self.csrf))
        n = 0
        while True:
            current = c.get("/api/work/current/")
            self.record(f"api current #{n}", current)
            state = current.json()
            if state["item"] is None:
                break
            self.record(f"item page #{n}", c.get("/work/"))
            self.record(f"item fragment #{n}", c.get("/work/", **HTMX))
            handle = state["item"]["id"]
            example = example_of(bound_enrollment_id(c), handle)
            api_answer, form = fixed_answer(example)
            training = state["step"] == "training"
            if n % 2:  # through the API
                response = c.post(
                    "/api/work/answer/",
                    json.dumps({"item": handle, "answer": api_answer}),
                    content_type="application/json",
                    **self.csrf,
                )
                self.record(f"api answer #{n}", response, reveals=training, expect=(201,))
                self.check_answer_payload(response.json(), example, training)
            else:  # through the worker page
                response = c.post("/work/answer/", {"item": handle, **form}, **HTMX, **self.csrf)
                self.record(f"page answer #{n}", response, reveals=training)
            if training:
                self.record(f"feedback page #{n}", c.get("/work/"), reveals=True)
                self.record(f"feedback fragment #{n}", c.get("/work/", **HTMX), reveals=True)
                self.record(f"next #{n}", c.post("/work/next/", {"item": handle}, **HTMX, **self.csrf))
            n += 1
        self.record("done page", c.get("/work/"))
        self.record("done fragment", c.get("/work/", **HTMX))
        self.record("join again (returning)", c.get(self.cohort.join_path, prolific(self.pid)), expect=(302,))
        return n

    def check_answer_payload(self, body: dict, example: Example, training: bool):
        if training:
            assert body["gold"] == list(example.gold), "a training answer returns the gold of that item only"
        else:
            assert "gold" not in body and "s1" not in body


def test_no_worker_response_depends_on_a_gold_answer_before_it_is_due():
    for slug in TASK_LIST:
        trim_test_set(slug, TEST_ITEMS)
    study = make_study(tasks=TASK_LIST, shots=[10], filter_fraction=None, filter_floor=None, workers_per_cohort=2)
    for slug in TASK_LIST:
        target = cohort(study, slug, 10)
        first = Journey(target, "WORKER-A")
        items = first.walk()
        assert items == 10 * CLUES_TASKS[slug].train_rows_per_shot + TEST_ITEMS
        # The other world: every gold answer of the task changed.
        for example in Example.objects.filter(task__slug=slug).select_related("task"):
            example.gold = other_gold(example)
            example.save(update_fields=["gold"])
        second = Journey(target, "WORKER-B")
        assert second.walk() == items
        assert [w for w, _, _ in first.records] == [w for w, _, _ in second.records]
        revealing = 0
        for (what, body_a, reveals), (_, body_b, _) in zip(first.records, second.records, strict=True):
            if reveals:
                revealing += body_a != body_b
                continue
            assert body_a == body_b, (
                f"{slug}: '{what}' depends on the gold answers:\n{body_a[:2000]}\n---\n{body_b[:2000]}"
            )
        assert revealing, f"{slug}: the feedback never showed the gold (the test would prove nothing)"
        # Both workers finished, with the same answers and different scores.
        states = set(Enrollment.objects.filter(cohort=target).values_list("state", flat=True))
        assert states == {Enrollment.State.COMPLETED}
        for what, body in first.api_bodies + second.api_bodies:
            keys = keys_anywhere(body)
            allowed = {"gold", "s1"} if what.startswith("api answer") and body.get("step") == "training" else set()
            assert not (keys & FORBIDDEN_KEYS) - allowed, (slug, what, body)
