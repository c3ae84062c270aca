"""Results and exports: Table 5, per-annotator rows, predictions, agreement, learning curves."""

import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
from django.contrib.auth.models import Group, User
from django.core.management import CommandError, call_command
from django.test import Client

from annotation import selectors, services
from results import agreement, exports, formats
from results.cells import human_cells
from results.table import build_table
from tasks_data.registry import CLUES_TASKS
from tests.annotation.factories import (
    baseline_runs,
    cohort,
    complete,
    fake_model_rows,
    join,
    make_study,
    name_of,
    pid_for,
    trim_test_set,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clues")]


@pytest.fixture(scope="module")
def study(clues, django_db_blocker):
    """SST-2 with 5 test items: 10 shots done by A (S1 1.0), B (0.8) and C (0.6); 0 shots by nobody finished.

    Built once for the module, inside the module's transaction (each test rolls back its own changes).
    """
    with django_db_blocker.unblock():
        owner = User.objects.create_user("results-owner")
        owner.groups.add(Group.objects.get_or_create(name="researchers")[0])
        trim_test_set("sst2", 5)
        study = make_study(tasks=["sst2"], shots=[0, 10], created_by=owner, filter_floor=None, filter_fraction=None)
        sst10, sst0 = cohort(study, "sst2", 10), cohort(study, "sst2", 0)
        complete(sst10, "A")
        complete(sst10, "B", wrong_test={4}, wrong_training={0, 1})
        complete(sst10, "C", wrong_test={3, 4})
        unfinished = join(sst0, "U")  # in the test step: not in any result
        item = services.current_item(enrollment_id=unfinished.pk).item
        handle = services.item_handle(enrollment_id=unfinished.pk, item_id=item.pk)
        services.submit_answer(enrollment_id=unfinished.pk, item=handle, answer=["positive"])
        gone = join(sst0, "W")
        services.withdraw(enrollment_id=gone.pk, actor="worker")
    return study


def run(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_human_table_mean_and_sample_std_of_completed_annotators_only(study):
    cells = human_cells(study)
    assert [(c["task"], c["shots"]) for c in cells] == [("sst2", 0), ("sst2", 10)]
    zero, ten = cells
    assert zero == {"task": "sst2", "shots": 0, "mean": None, "std": None, "n": 0}
    assert ten["n"] == 3
    assert ten["mean"] == pytest.approx(80.0)
    assert ten["std"] == pytest.approx(np.std([100, 80, 60], ddof=1)) == pytest.approx(20.0)


def test_a_single_annotator_has_no_std(study):
    complete(cohort(study, "sst2", 0), "Z", wrong_test={0})
    zero = human_cells(study)[0]
    assert (zero["n"], zero["mean"], zero["std"]) == (1, pytest.approx(80.0), None)
    assert formats.table_frame(build_table([zero])).iloc[0, 0] == "80.0"


def test_table_frame_has_the_shape_of_table_5():
    cells = [
        {"task": t, "shots": k, "mean": 50.0 + k, "std": 1.24, "n": 3}
        for t in ("conll03", "sst2")
        for k in (30, 0, 10, 20)
    ]
    frame = formats.table_frame(build_table(cells))
    assert list(frame.columns) == ["SST-2", "CoNLL03"]  # registry order, display names
    assert list(frame.index) == ["0", "10", "20", "30"] and frame.index.name == "#Shots"
    assert frame.loc["10", "SST-2"] == "60.0 ± 1.2"


def test_render_formats(study):
    cells = human_cells(study)
    as_json = json.loads(formats.render(build_table(cells), "json"))
    assert as_json["std_ddof"] == 1
    assert as_json["cells"] == [
        {"task": "sst2", "shots": 0, "mean": None, "std": None, "n": 0},
        {"task": "sst2", "shots": 10, "mean": pytest.approx(80.0), "std": pytest.approx(20.0), "n": 3},
    ]
    md = formats.render(build_table(cells), "md")
    assert md.splitlines()[0] == "| #Shots | SST-2 |"
    assert "| 10 | 80.0 ± 20.0 (n=3) |" in md and "| 0 | - (n=0) |" in md and "ddof=1" in md
    csv = formats.render(build_table(cells), "csv")  # plain: the header row first, n as columns
    assert csv.splitlines() == ["#Shots,SST-2,SST-2 n", "0,-,0", "10,80.0 ± 20.0,3"]
    tex = formats.render(build_table(cells), "tex")
    assert r"\begin{table}" in tex and r"80.0 $\pm$ 20.0 (n=3)" in tex and r"\#Shots" in tex and "ddof=1" in tex
    with pytest.raises(formats.ExportError):
        formats.render(build_table(cells), "xls")


def test_model_rows_are_appended_below_the_human_rows(study):
    table = build_table(human_cells(study), fake_model_rows(study))
    frame = formats.table_frame(table)
    assert list(frame.index) == [("Human", "0"), ("Human", "10"), ("fine-tuning BERT-base", "10")]
    assert frame.loc[("fine-tuning BERT-base", "10"), "SST-2"] == "61.2 ± 2.5"
    payload = json.loads(formats.render(table, "json"))
    assert payload["model_rows"][0]["model"] == "BERT-base" and len(payload["cells"]) == 2
    assert "fine-tuning BERT-base" in formats.render(table, "md")
    assert "fine-tuning BERT-base" in formats.render(table, "tex")


def test_export_results_command_with_baselines(study):
    baseline_runs("sst2", 10, "fine-tuning", "BERT-base", [0.60, 0.62, 0.64])
    baseline_runs("mnli", 10, "fine-tuning", "BERT-base", [0.40])  # not a task of the study: left out
    out = run("export_results", "--study", str(study.pk), "--format", "md", "--with-baselines")
    assert "| Human | 10 | 80.0 ± 20.0 [" in out and "(n=3) |" in out
    assert "| fine-tuning BERT-base | 10 | 62.0 ± 2.0 (n=3) |" in out
    assert "MNLI" not in out


def test_model_rows_of_other_tasks_are_left_out(study):
    other = {**fake_model_rows(study)[0], "task": "mnli"}
    frame = formats.table_frame(build_table(human_cells(study), [*fake_model_rows(study), other]))
    assert list(frame.columns) == ["SST-2"] and len(frame) == 3


def test_the_configured_baselines_provider_loads(study):
    out = run("export_results", "--study", str(study.pk), "--format", "json", "--with-baselines")
    assert json.loads(out)["cells"][1]["n"] == 3


def test_export_results_command_formats_and_errors(study):
    payload = json.loads(run("export_results", "--study", str(study.pk), "--format", "json"))
    assert payload["cells"][1]["n"] == 3
    assert "SST-2" in run("export_results", "--study", str(study.pk))  # markdown by default
    with pytest.raises(CommandError, match="no study"):
        run("export_results", "--study", "999999")
    with pytest.raises(CommandError, match="--format"):
        run("export_results", "--study", str(study.pk), "--format", "xlsx")
    with pytest.raises(CommandError, match="--out"):
        run("export_results", "--study", str(study.pk), "--kind", "predictions")


def test_export_results_writes_out_atomically(study, tmp_path, monkeypatch):
    target = tmp_path / "table.csv"
    call_command(
        "export_results", "--study", str(study.pk), "--format", "csv", "--out", str(target), stderr=io.StringIO()
    )
    assert "80.0 ± 20.0" in target.read_text()
    target.write_text("previous")

    def broken_fsync(fd):
        raise OSError("disk full")

    monkeypatch.setattr("results.exports.os.fsync", broken_fsync)
    with pytest.raises(CommandError, match="disk full"):
        call_command("export_results", "--study", str(study.pk), "--format", "json", "--out", str(target))
    assert target.read_text() == "previous"
    new = tmp_path / "new.json"
    with pytest.raises(CommandError):
        call_command("export_results", "--study", str(study.pk), "--format", "json", "--out", str(new))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["table.csv"], "no half-written or temporary file left"


def test_per_annotator_rows(study):
    rows = json.loads(run("export_results", "--study", str(study.pk), "--annotators", "--format", "json"))["rows"]
    by_worker = {name_of(r["worker"]): r for r in rows}
    assert sorted(by_worker) == ["A", "B", "C"]
    # S1 in percent, as every table, the unit in the column's name.
    assert by_worker["B"]["test_s1_percent"] == pytest.approx(80.0)
    assert by_worker["B"]["training_s1_percent"] == pytest.approx(80.0)
    assert by_worker["A"]["items_answered"] == 10 + 5 and by_worker["A"]["shots"] == 10
    assert set(by_worker["A"]) >= {
        "worker",
        "task",
        "shots",
        "state",
        "training_s1_percent",
        "test_s1_percent",
        "items_answered",
        "active_seconds",
        "pay",
    }
    csv = run("export_results", "--study", str(study.pk), "--kind", "annotators", "--format", "csv", "--all")
    assert csv.splitlines()[0].startswith(
        "enrollment_id,worker,platform,task,shots,state,training_s1_percent,test_s1_percent,"
    )
    assert {name_of(line.split(",")[1]) for line in csv.splitlines()[1:]} == {"A", "B", "C", "U", "W"}


def test_one_annotators_prediction_file_scores_to_their_s1_in_the_table(study, tmp_path):
    b = study.cohorts.get(shots=10).enrollments.get(worker__external_id=pid_for("B"))
    path = tmp_path / "b.jsonl"
    call_command(
        "export_results",
        "--study",
        str(study.pk),
        "--kind",
        "predictions",
        "--enrollment",
        str(b.pk),
        "--out",
        str(path),
        stderr=io.StringIO(),
    )
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(lines) == 5 and set(lines[0]) == {"id", "prediction"}
    assert run("score", str(path), "--task", "sst2").strip() == "SST-2 S1 = 80.0 over 5 test items"
    row = next(r for r in selectors.annotator_rows(study) if name_of(r["worker"]) == "B")
    assert f"{100 * row['test_s1']:.1f}" == "80.0"


def test_predictions_zip_has_one_file_per_completed_annotator(study):
    archive = zipfile.ZipFile(io.BytesIO(exports.predictions_zip(study)))
    names = archive.namelist()
    assert len(names) == 3 and all(n.startswith("sst2_10shot_") and n.endswith(".jsonl") for n in names)
    assert all(len(archive.read(n).decode().splitlines()) == 5 for n in names)


def test_fleiss_kappa_matches_the_textbook_example():
    # Fleiss (1971) as worked on Wikipedia: 10 items, 14 raters, 5 categories, kappa = 0.210.
    counts = np.array(
        [
            [0, 0, 0, 0, 14],
            [0, 2, 6, 4, 2],
            [0, 0, 3, 5, 6],
            [0, 3, 9, 2, 0],
            [2, 2, 8, 1, 1],
            [7, 7, 0, 0, 0],
            [3, 2, 6, 3, 0],
            [2, 5, 3, 2, 2],
            [6, 5, 2, 1, 0],
            [0, 2, 2, 3, 7],
        ]
    )
    assert agreement.fleiss_kappa(counts) == pytest.approx(0.20993, abs=1e-4)
    assert agreement.fleiss_kappa(np.array([[3, 0], [3, 0]])) is None  # all in one category: undefined
    assert agreement.fleiss_kappa(np.array([[3, 0], [0, 3]])) == pytest.approx(1.0)


def test_pairwise_s1_is_symmetric():
    a = {1: ["x", "y"], 2: [], 3: ["z"]}
    b = {1: ["x"], 2: [], 3: ["q"], 4: ["only b"]}
    assert agreement.pairwise_s1(a, b) == agreement.pairwise_s1(b, a) == pytest.approx((2 / 3 + 1 + 0) / 3)


def test_cohort_agreement(study):
    ten = next(r for r in agreement.cohort_agreement(study) if r["shots"] == 10)
    # A-B agree on 4 of 5 items, A-C on 3, B-C on 4 (both wrong on the last, with the same other label).
    assert ten["n"] == 3 and ten["mean_pairwise_s1_percent"] == pytest.approx(100 * (0.8 + 0.6 + 0.8) / 3)
    answers = {
        name_of(e.worker.external_id): dict(e.answers.filter(step="test").values_list("example_id", "texts"))
        for e in study.cohorts.get(shots=10).enrollments.select_related("worker")
    }
    labels = CLUES_TASKS["sst2"].labels
    items = sorted(answers["A"])
    p_i, totals = [], {label: 0 for label in labels}
    for item in items:  # Fleiss' kappa by hand
        n_ij = {label: sum(answers[w][item] == [label] for w in answers) for label in labels}
        p_i.append((sum(v * v for v in n_ij.values()) - 3) / 6)
        for label in labels:
            totals[label] += n_ij[label]
    p_e = sum((t / (3 * len(items))) ** 2 for t in totals.values())
    assert ten["fleiss_kappa"] == pytest.approx((sum(p_i) / len(items) - p_e) / (1 - p_e))
    zero = next(r for r in agreement.cohort_agreement(study) if r["shots"] == 0)
    assert zero == {
        "cohort": zero["cohort"],
        "task": "sst2",
        "shots": 0,
        "n": 0,
        "mean_pairwise_s1_percent": None,
        "fleiss_kappa": None,
        "krippendorff_alpha": None,
        "alpha_distance": None,
    }


def test_span_tasks_have_pairwise_s1_but_no_kappa(researcher):
    trim_test_set("conll03", 4)
    study = make_study(tasks=["conll03"], shots=[0])
    c = cohort(study, "conll03", 0)
    complete(c, "A")
    complete(c, "B")
    row = agreement.cohort_agreement(study)[0]
    assert row["mean_pairwise_s1_percent"] == pytest.approx(100.0) and row["fleiss_kappa"] is None
    # Both gave the gold everywhere: no disagreement within items, some between them: alpha 1.
    assert row["krippendorff_alpha"] == pytest.approx(1.0) and row["alpha_distance"] == "jaccard"


def test_learning_curves(study):
    rows = agreement.learning_curves(study)
    b = [r for r in rows if name_of(r["worker"]) == "B"]
    assert [r["position"] for r in b] == list(range(10))
    assert [r["s1_percent"] for r in b] == [0.0, 0.0] + [100.0] * 8
    assert b[-1]["running_s1_percent"] == pytest.approx(80.0)
    csv = run("export_results", "--study", str(study.pk), "--kind", "learning_curves")
    assert csv.splitlines()[0] == (
        "enrollment_id,worker,task,shots,position,s1_percent,running_s1_percent,gold_unproducible"
    )
    assert len(csv.splitlines()) == 1 + 30


def test_results_and_exports_over_the_api(study):
    client = Client()
    client.force_login(study.created_by)
    results = client.get(f"/api/studies/{study.pk}/results/").json()
    assert results["std_ddof"] == 1 and results["cells"][1]["n"] == 3
    assert sorted(name_of(r["worker"]) for r in results["annotators"]) == ["A", "B", "C"]
    assert results["agreement"][1]["n"] == 3
    for fmt, content_type in [
        ("csv", "text/csv"),
        ("json", "application/json"),
        ("md", "text/markdown"),
        ("tex", "application/x-tex"),
    ]:
        response = client.get(f"/api/studies/{study.pk}/export/table/?fmt={fmt}")
        assert response.status_code == 200 and response["Content-Type"].startswith(content_type)
        assert "attachment" in response["Content-Disposition"]
    assert json.loads(client.get(f"/api/studies/{study.pk}/export/table/?fmt=json").content)["cells"][1]["n"] == 3
    for kind in ("annotators", "learning_curves", "agreement"):
        assert client.get(f"/api/studies/{study.pk}/export/{kind}/?fmt=json").status_code == 200
    archive = client.get(f"/api/studies/{study.pk}/export/predictions/")
    assert archive["Content-Type"] == "application/zip"
    assert len(zipfile.ZipFile(io.BytesIO(archive.content)).namelist()) == 3
    b = study.cohorts.get(shots=10).enrollments.get(worker__external_id=pid_for("B"))
    jsonl = client.get(f"/api/enrollments/{b.pk}/predictions/")
    assert jsonl.status_code == 200 and jsonl.content.decode() == exports.prediction_jsonl(b)
    bad = client.get(f"/api/studies/{study.pk}/export/table/?fmt=xls")
    assert bad.status_code == 400 and "fmt" in bad.json()["detail"]
    unknown = client.get(f"/api/studies/{study.pk}/export/everything/")
    assert unknown.status_code == 404 and unknown.json()["detail"]


def test_write_atomic_replaces_whole_files(tmp_path):
    target = Path(tmp_path) / "x.txt"
    exports.write_atomic(target, "one")
    exports.write_atomic(target, b"two")
    assert target.read_text() == "two" and [p.name for p in tmp_path.iterdir()] == ["x.txt"]
