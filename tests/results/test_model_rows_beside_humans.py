"""Model rows stand only beside a human cohort of their task and shots; the rest are listed apart ("no human
cohort"), in the table, the chart, the downloads and the API; the chart draws one series per row identity,
the server included."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from baselines.models import BaselineRun
from results.presentation import chart
from tests.annotation.factories import baseline_runs, cohort, complete, make_study, trim_test_set

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clues")]


@pytest.fixture
def study(researcher):
    """SST-2 humans at 10 shots only; model runs at 10, 20 and 30 shots, the same model on two servers."""
    trim_test_set("sst2", 5)
    s = make_study(tasks=["sst2"], shots=[10], created_by=researcher, filter_floor=None, filter_fraction=None)
    ten = cohort(s, "sst2", 10)
    complete(ten, "A")
    complete(ten, "B", wrong_test={4})
    for shots in (10, 20, 30):
        baseline_runs("sst2", shots, "ft", "bert", [0.6, 0.7])
    for server, s1 in (("http://gpu-a:8000/v1", 0.8), ("http://gpu-b:8000/v1", 0.5)):
        BaselineRun.objects.create(
            task=ten.task,
            method="icl",
            model="qwen",
            server=server,
            shots=10,
            split=1,
            seed=0,
            status=BaselineRun.Status.COMPLETED,
            s1=s1,
        )
    return s


def test_ten_shot_only_humans_show_no_20_or_30_shot_model_row(study, researcher):
    client = Client()
    client.force_login(researcher)
    table = json.loads(
        client.get(f"/api/studies/{study.pk}/export/table/", {"fmt": "json", "with_baselines": "1"}).content
    )
    assert {r["shots"] for r in table["model_rows"]} == {10}
    assert {(r["shots"], r["label"]) for r in table["model_rows_no_human_cohort"]} == {(20, "ft bert"), (30, "ft bert")}
    md = client.get(f"/api/studies/{study.pk}/export/table/", {"fmt": "md", "with_baselines": "1"}).content.decode()
    assert "| ft bert | 10 |" in md and "| ft bert | 20 |" not in md and "| ft bert | 30 |" not in md
    api = client.get(f"/api/studies/{study.pk}/results/").json()
    assert {r["shots"] for r in api["model_rows"]} == {10}
    assert {r["shots"] for r in api["model_rows_no_human_cohort"]} == {20, 30}
    page = client.get(f"/dashboard/studies/{study.pk}/results/").content.decode()
    block = page[page.index('<section class="task-block" data-task="sst2"') :].split("</section>")[0]
    # The SST-2 block: shots as columns, the model row beside the 10-shot humans only.
    assert ">10 shots</th>" in block and ">20 shots</th>" not in block and ">30 shots</th>" not in block
    assert '<th scope="row">ft bert</th>' in block
    assert "Model rows with no human cohort (2)" in page
    assert 'data-unpaired="sst2-20"' in page and 'data-unpaired="sst2-30"' in page
    svg = page[page.index('<figure class="chart">') :].split("</figure>")[0]
    assert "ft bert, 10 shots:" in svg and "20 shots:" not in svg and "30 shots:" not in svg


def test_the_chart_draws_one_series_per_row_identity_with_the_server(study):
    from results.cells import model_rows, table_cells

    rows = [r for r in model_rows(study) if r["beside_humans"]]
    drawn = chart("sst2", table_cells(study), rows)
    names = [s["name"] for s in drawn["series"]]
    assert names == ["Human", "ft bert", "qwen (in context, gpu-a:8000)", "qwen (in context, gpu-b:8000)"]
    assert all(len(s["marks"]) == 1 for s in drawn["series"])  # one point per shot in each series
    assert all(m["label"].startswith("10 shots") for s in drawn["series"] for m in s["marks"])
