"""A task of one's own on the worker's pages, for every answer kind: its instructions (Markdown, written by a
researcher: shown formatted, never run), its kind's widget, the training step with the gold after each answer
and the filtering after it, the test step, the completion code; and the time estimate, from the card's figure
until the cohort's first workers are measured."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from annotation.estimates import MEASURED_AFTER, cohort_estimate
from annotation.models import Enrollment
from tests.worker_pages.factories import answer_current, bind, cohort_of, enroll, make_study

pytestmark = pytest.mark.django_db
WIDGETS = {"label": "label", "spans": "spans", "span_or_none": "spans", "entity": "entity"}
INSTRUCTIONS = (
    "Read each text.\n\n* Give **the answer** it asks for.\n* Exactly as written.\n\n"
    '<script>alert("x")</script> [a link](javascript:alert(1))'
)


def _view(html: str) -> str:
    return re.search(r'data-view="(\w+)"', html).group(1)


@pytest.mark.parametrize("kind", list(WIDGETS))
def test_a_worker_does_a_task_of_ones_own_of_every_kind(kind, own_task, researcher):
    task = own_task(kind=kind, slug="toy", shots=(2, 4), instructions=INSTRUCTIONS)
    study = make_study(tasks=("toy",), shots=(4,), created_by=researcher, filter_floor=0.5)
    enrollment = enroll(cohort_of(study, "toy", 4))
    client = bind(Client(), enrollment, started=False)
    html = client.get("/work/").content.decode()
    assert _view(html) == "description"
    assert "<li>Give <strong>the answer</strong> it asks for.</li>" in html  # the researcher's Markdown
    assert '<script>alert("x")</script>' not in html and "&lt;script&gt;" in html  # raw HTML is text
    assert 'href="javascript' not in html
    assert f"(about {round(task.spec.seconds_per_item)} seconds an item)" in html
    assert "Training: 4 items" in html and "Test: 6 items" in html
    bind(client, enrollment)
    seen = {"feedback": 0, "item": 0}
    while True:
        html = client.get("/work/").content.decode()
        view = _view(html)
        if view == "item":
            assert f'data-widget="{WIDGETS[kind]}"' in html and "<strong>the answer</strong>" in html
            seen["item"] += 1
            answer_current(enrollment, right=True)
        elif view == "feedback":  # training: the gold after each answer, then on
            seen["feedback"] += 1
            item = re.search(r'name="item" value="([^"]*)"', html).group(1)
            assert client.post("/work/next/", {"item": item}).status_code == 302
        else:
            break
    assert view == "done" and "DONE123" in html
    assert seen == {"feedback": 4, "item": 10}
    enrollment.refresh_from_db()
    assert enrollment.state == Enrollment.State.COMPLETED and enrollment.training_s1 == 1.0


def test_a_worker_below_the_floor_is_filtered_after_training(own_task, researcher):
    own_task(kind="spans", slug="toy", shots=(2, 4))
    study = make_study(tasks=("toy",), shots=(2,), created_by=researcher, filter_floor=0.9)
    enrollment = enroll(cohort_of(study, "toy", 2))
    for _ in range(2):
        answer_current(enrollment, right=False)
    enrollment.refresh_from_db()
    assert enrollment.state == Enrollment.State.FILTERED
    client = bind(Client(), enrollment)
    html = client.get("/work/").content.decode()
    assert _view(html) == "feedback"  # the last training item's gold first
    client.post("/work/next/", {"item": re.search(r'name="item" value="([^"]*)"', html).group(1)})
    html = client.get("/work/").content.decode()
    assert _view(html) == "filtered" and "OUT456" in html  # the screen-out code


def test_the_time_estimate_is_measured_after_the_first_workers(own_task, researcher, clock):
    task = own_task(kind="label", slug="toy", shots=(2, 4), card="seconds_per_item = 40\n")
    assert task.spec.seconds_per_item == 40.0  # the card's own figure
    study = make_study(tasks=("toy",), shots=(0,), created_by=researcher, workers_per_cohort=5)
    cohort = cohort_of(study, "toy", 0)
    assert cohort_estimate(cohort).seconds_per_item == 40.0
    for _ in range(MEASURED_AFTER):
        enrollment = enroll(cohort)
        for _ in range(6):
            clock.advance(12)
            answer_current(enrollment)
    estimate = cohort_estimate(cohort)
    assert estimate.measured and estimate.seconds_per_item == pytest.approx(12, abs=0.5)
    html = bind(Client(), enroll(cohort), started=False).get("/work/").content.decode()
    assert "(about 12 seconds an item)" in html
