"""Answer-time signals: fast test answers per task minimum and the longest idle gaps, per worker."""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta

import pytest
from django.db.models import F
from django.test import Client

from annotation.models import Answer
from tasks_data.registry import CLUES_TASKS
from tests.annotation.factories import WorkerClient, cohort, gold_answer, make_study, name_of, pid_for, trim_test_set

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clues")]


def _walk(c, pid: str) -> None:
    worker = WorkerClient(c, pid)
    while (state := worker.current().json())["item"] is not None:
        example = worker.example(state["item"]["id"])
        assert worker.answer(worker.handle(example), gold_answer(example)).status_code == 201


def test_every_clues_task_declares_its_minimum():
    assert all(spec.min_answer_seconds > 0 for spec in CLUES_TASKS.values())
    assert CLUES_TASKS["squad2"].min_answer_seconds > CLUES_TASKS["sst2"].min_answer_seconds  # a paragraph takes longer


def test_fast_answers_and_idle_gaps_on_the_cohort_page_and_in_the_export(researcher):
    trim_test_set("sst2", 4)
    study = make_study(tasks=["sst2"], shots=[0], created_by=researcher, filter_floor=None, filter_fraction=None)
    c = cohort(study, "sst2", 0)
    _walk(c, "FAST")
    _walk(c, "SLOW")
    slow = Answer.objects.filter(enrollment__worker__external_id=pid_for("SLOW"), step="test").order_by("position")
    # SLOW took 10 s per item but the first (1 s: too fast), then left for 15 minutes before the last.
    slow.exclude(position=0).update(served_at=F("answered_at") - timedelta(seconds=10))
    slow.filter(position=0).update(served_at=F("answered_at") - timedelta(seconds=1))
    slow.filter(position=3).update(
        answered_at=F("answered_at") + timedelta(minutes=15), served_at=F("served_at") + timedelta(minutes=15)
    )

    client = Client()
    client.force_login(researcher)
    rows = json.loads(client.get(f"/api/studies/{study.pk}/export/annotators/", {"fmt": "json"}).content)["rows"]
    by = {name_of(r["worker"]): r for r in rows}
    assert by["FAST"]["fast_answer_share"] == 1.0  # the test client answers within milliseconds
    assert by["SLOW"]["fast_answer_share"] == pytest.approx(0.25)
    assert 900 <= by["SLOW"]["longest_idle_seconds"] < 905 and by["SLOW"]["longest_idle_gaps"][0] >= 900
    assert by["FAST"]["longest_idle_seconds"] < 60
    header = client.get(f"/api/studies/{study.pk}/export/annotators/", {"fmt": "csv"}).content.decode()
    table = list(csv.DictReader(io.StringIO(header)))
    assert {name_of(r["worker"]): float(r["fast_answer_share"]) for r in table} == {"FAST": 1.0, "SLOW": 0.25}

    html = client.get(f"/dashboard/cohorts/{c.pk}/").content.decode()
    assert "100% &lt; 1.5 s" in html and "25% &lt; 1.5 s" in html and "15 min" in html
