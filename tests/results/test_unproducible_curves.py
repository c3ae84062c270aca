"""Unproducible training items: flagged in the worker API's training answer, the learning curves and the cohort page."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from tasks_data.models import TrainingSetItem
from tasks_data.selectors import unproducible_training_counts
from tests.annotation.factories import WorkerClient, cohort, gold_answer, make_study, trim_test_set

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clues")]


def test_unproducible_training_items_are_flagged_for_the_worker_and_on_every_curve(researcher):
    counts = unproducible_training_counts()
    if not counts:
        pytest.skip("this copy of the data has no unproducible training item")
    row = counts[0]
    trim_test_set(row["task"], 2)
    study = make_study(
        tasks=[row["task"]],
        shots=[row["shots"]],
        chain=row["chain"],
        created_by=researcher,
        filter_floor=None,
        filter_fraction=None,
    )
    c = cohort(study, row["task"], row["shots"])
    quirks = set(
        TrainingSetItem.objects.filter(training_set=c.training_set, example__gold_unproducible=True).values_list(
            "example_id", flat=True
        )
    )
    worker = WorkerClient(c, "Q1")
    flags = {}
    while (state := worker.current().json())["item"] is not None:
        example = worker.example(state["item"]["id"])
        body = worker.answer(worker.handle(example), gold_answer(example)).json()
        if body["step"] == "training":
            flags[example.pk] = body["gold_unproducible"]
        else:
            assert "gold_unproducible" not in body  # test answers reveal nothing
    assert {pk for pk, flag in flags.items() if flag} == quirks and len(flags) > len(quirks)

    client = Client()
    client.force_login(researcher)
    curves = json.loads(client.get(f"/api/studies/{study.pk}/export/learning_curves/", {"fmt": "json"}).content)
    marked = [r for r in curves["rows"] if r["gold_unproducible"]]
    assert len(marked) == len(quirks) and all(r["s1_percent"] < 100 for r in marked)
    csv = client.get(f"/api/studies/{study.pk}/export/learning_curves/", {"fmt": "csv"}).content.decode()
    assert csv.splitlines()[0].endswith(",running_s1_percent,gold_unproducible")
    html = client.get(f"/dashboard/cohorts/{c.pk}/").content.decode()
    assert html.count('data-role="unproducible"') == len(quirks) and f"{len(quirks)} unproducible" in html
