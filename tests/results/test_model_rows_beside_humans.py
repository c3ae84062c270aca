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


def _llama(task, server: str, model: str, s1: float, backend: str = "openai"):
    return BaselineRun.objects.create(
        task=task,
        method="worker",
        model=model,
        backend=backend,
        server=server,
        shots=10,
        split=1,
        seed=0,
        status=BaselineRun.Status.COMPLETED,
        s1=s1,
    )


def test_no_model_row_is_dropped_or_merged_in_the_table_the_chart_or_the_files(study, researcher):
    """Two owners' llama-7b on one server path, one on another path, one on another backend: four rows, each
    with a label of its own that says what tells it apart, each in every output with its own S1."""
    task = BaselineRun.objects.filter(method="icl").first().task
    _llama(task, "http://gpu-a:8000/v1", "alice/llama-7b", 0.67)
    _llama(task, "http://gpu-a:8000/v1", "bob/llama-7b", 0.8295)
    _llama(task, "http://gpu-a:8000/v2", "alice/llama-7b", 0.739)
    _llama(task, "http://gpu-a:8000/v2", "alice/llama-7b", 0.5, backend="vllm")
    client = Client()
    client.force_login(researcher)
    table = json.loads(
        client.get(f"/api/studies/{study.pk}/export/table/", {"fmt": "json", "with_baselines": "1"}).content
    )
    llamas = {r["label"]: round(r["mean"], 2) for r in table["model_rows"] if "llama" in r["model"]}
    assert llamas == {
        "alice/llama-7b (as a worker, gpu-a:8000/v1, openai)": 67.0,
        "bob/llama-7b (as a worker, gpu-a:8000/v1, openai)": 82.95,
        "alice/llama-7b (as a worker, gpu-a:8000/v2, openai)": 73.9,
        "alice/llama-7b (as a worker, gpu-a:8000/v2, vllm)": 50.0,
    }
    # The two servers of the same model name elsewhere keep their short labels (nothing to tell apart there).
    assert {r["label"] for r in table["model_rows"] if r["model"] == "qwen"} == {
        "qwen (in context, gpu-a:8000)",
        "qwen (in context, gpu-b:8000)",
    }
    md = client.get(f"/api/studies/{study.pk}/export/table/", {"fmt": "md", "with_baselines": "1"}).content.decode()
    csv = client.get(f"/api/studies/{study.pk}/export/table/", {"fmt": "csv", "with_baselines": "1"}).content.decode()
    for label, s1 in llamas.items():
        assert f"| {label} | 10 | {s1:.1f} (n=1) |" in md
        assert f"{label},10,{s1:.1f}," in csv or f'"{label}",10,{s1:.1f},' in csv
    page = client.get(f"/dashboard/studies/{study.pk}/results/").content.decode()
    for label in llamas:
        assert f'<th scope="row">{label}</th>' in page
    from results.cells import model_rows, table_cells

    drawn = chart("sst2", table_cells(study), [r for r in model_rows(study) if r["beside_humans"]])
    series = [s for s in drawn["series"] if "llama" in s["name"]]
    assert sorted(s["name"] for s in series) == sorted(llamas) and all(len(s["marks"]) == 1 for s in series)


def test_a_cohort_without_a_completed_annotator_is_not_beside_humans(researcher):
    """A cohort that exists but has no completed annotator: its model rows are listed apart, with no gap, and no
    table row shows them next to "-"."""
    trim_test_set("sst2", 5)
    s = make_study(tasks=["sst2"], shots=[0, 10], created_by=researcher, filter_floor=None, filter_fraction=None)
    complete(cohort(s, "sst2", 0), "A")
    cohort(s, "sst2", 10)  # exists, nobody completed it
    baseline_runs("sst2", 10, "ft", "bert", [0.6, 0.7])
    client = Client()
    client.force_login(researcher)
    table = json.loads(client.get(f"/api/studies/{s.pk}/export/table/", {"fmt": "json", "with_baselines": "1"}).content)
    assert table.get("model_rows", []) == []
    (apart,) = table["model_rows_no_human_cohort"]
    assert apart["label"] == "ft bert" and apart["beside_humans"] is False and "diff" not in apart
    md = client.get(f"/api/studies/{s.pk}/export/table/", {"fmt": "md", "with_baselines": "1"}).content.decode()
    assert "ft bert" not in md
