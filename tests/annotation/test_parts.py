"""Parts that keep the sitting cap, through the real HTTP surface: every part's estimate within the cap, none below half
the largest, the training step in part 1 (a cap too short for it is refused where the study is made), and attention
checks counted as items in the part that holds them, so that no count a worker reads tells a check from an item."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from annotation.estimates import cohort_estimate, split
from annotation.models import Answer, AttentionAnswer, Enrollment, Study
from tasks_data.registry import CLUES_TASKS
from tests.annotation.factories import WorkerClient, cohort, gold_answer, make_study, trim_test_set

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clues")]


def _form(**extra) -> dict:
    form = {"name": "sittings", "tasks": ["record"], "shots": ["10"], "chain": "1", "workers_per_cohort": "3"}
    form.update(pay_rate="12", platform="generic", worker_id_param="worker_id", test_order="file")
    form.update(idle_cap_seconds="300", filter_fraction="0.5")
    form.update(extra)
    return form


def test_a_sitting_cap_too_short_for_the_training_step_is_refused_with_the_cap_that_fits(researcher_client):
    """ReCoRD 10-shot at a 10-minute cap: its training step alone is 10 minutes, so part 1 (the training step and a
    first test item) cannot keep the cap; it used to give 19 parts of 11 minutes and a part 20 of one item."""
    api = researcher_client.post(
        "/api/studies/",
        {"name": "tight", "tasks": ["record"], "shots": [10], "sitting_minutes": 10, "platform": "generic"},
        content_type="application/json",
    )
    assert api.status_code == 400, api.content
    message = " ".join(api.json()["sitting_minutes"])
    assert "record 10-shot: its training step (10 items, about 10 min)" in message
    assert "make the sitting cap at least 11 minutes" in message
    form = researcher_client.post("/dashboard/studies/new/", _form(sitting_minutes="10"))
    assert form.status_code == 400 and "make the sitting cap at least 11 minutes" in form.content.decode()
    assert not Study.objects.exists()


@pytest.mark.parametrize(("slug", "shots", "cap"), [("record", 10, 11), ("record", 30, 40), ("conll03", 30, 25)])
def test_every_part_keeps_the_cap_and_none_is_below_half_the_largest(researcher_client, slug, shots, cap):
    response = researcher_client.post(
        "/dashboard/studies/new/", _form(tasks=[slug], shots=[str(shots)], sitting_minutes=str(cap)), follow=True
    )
    assert response.status_code == 200
    study = Study.objects.get()
    c = study.cohorts.select_related("task", "study").get()
    estimate = cohort_estimate(c)
    minutes = [p.minutes for p in estimate.parts]
    assert max(p.listed_minutes for p in estimate.parts) <= cap, minutes
    assert min(minutes) >= max(minutes) / 2, minutes
    first = estimate.parts[0]
    assert first.training_items == shots * CLUES_TASKS[slug].train_rows_per_shot and first.test_items >= 1
    assert sum(p.items for p in estimate.parts) == estimate.training_items + estimate.test_items
    # The study page lists the same parts, each within the cap.
    page = researcher_client.get(f"/dashboard/studies/{study.pk}/").content.decode()
    listed = [int(m) for m in re.findall(r'data-minutes="(\d+)"', page)]
    assert listed == [p.listed_minutes for p in estimate.parts] and max(listed) <= cap


def test_the_split_shares_the_items_out_evenly_at_every_cap():
    """The split alone, over caps and sizes: within the cap, no part below half the largest, part 1 starting with
    the training step and holding a test item."""
    for training, test, per_item in ((0, 200, 60), (10, 200, 60), (30, 200, 60), (90, 600, 15), (0, 210, 8)):
        for cap in range(10, 181, 7):
            if training + 1 > cap * 60 // per_item:
                continue
            bounds = split(training_items=training, test_items=test, seconds_per_item=per_item, sitting_minutes=cap)
            sizes = [end - first + (training if i == 0 else 0) for i, (first, end) in enumerate(bounds)]
            assert bounds[0][0] == 0 and bounds[-1][1] == test and sizes[0] > training
            assert all(b[0] == a[1] for a, b in zip(bounds, bounds[1:], strict=False))
            assert max(sizes) * per_item <= cap * 60, (training, test, cap, sizes)
            if training * 3 <= training + test:  # the training step not most of the work
                assert min(sizes) >= max(sizes) / 2, (training, test, cap, sizes)


def test_attention_checks_count_in_the_part_that_holds_them_and_the_counts_agree(researcher):
    """Two checks, one in each of two parts: the description's test count, each part's count and the answers a
    worker gives in each part agree, checks and items alike (a worker cannot count where the checks are)."""
    trim_test_set("sst2", 140)
    study = make_study(
        tasks=["sst2"],
        shots=[0],
        created_by=researcher,
        platform="generic",
        worker_id_param="worker_id",
        sitting_minutes=10,  # 75 items of 8 s a sitting
        workers_per_cohort=2,
        filter_fraction=None,
    )
    client = Client()
    client.force_login(researcher)
    for position in (10, 100):
        check = {"task": "sst2", "position": str(position), "question": "Choose negative.", "context": "Please."}
        response = client.post(f"/dashboard/studies/{study.pk}/attention-checks/", {**check, "expected": "negative"})
        assert response.status_code == 302
    c = cohort(study, "sst2", 0)
    estimate = cohort_estimate(c)
    assert [p.checks for p in estimate.parts] == [1, 1] and [p.items for p in estimate.parts] == [71, 71]
    assert all(p.listed_minutes <= 10 for p in estimate.parts)

    worker = WorkerClient(c, params={"worker_id": "ann"})
    description = worker.client.get("/work/").content.decode()
    assert "Test: 142 items." in description
    assert "part 1: 71 items" in description and "part 2: 71 items" in description
    enrollment = Enrollment.objects.get(pk=worker.enrollment_id)
    answered_in_part = 0
    while (state := worker.current().json())["step"] == "test":
        assert state["progress"]["total"] == 142
        handle = state["item"]["id"]
        shown = worker.example(handle)
        assert worker.answer(handle, gold_answer(shown)).status_code == 201
        answered_in_part += 1
    assert state["step"] == "between" and answered_in_part == 71, "part 1 took the answers it said"
    assert Answer.objects.filter(enrollment=enrollment).count() + AttentionAnswer.objects.count() == 71
    assert AttentionAnswer.objects.filter(enrollment=enrollment).count() == 1, "its check met in part 1"
    between = worker.client.get("/work/").content.decode()
    assert "71 more test items" in between
