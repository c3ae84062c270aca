"""The baselines on a task of one's own, as on a CLUES task: ``run_baselines --tasks <slug>`` with the reference
predictors where its kind allows them, ``icl`` and ``worker`` over an OpenAI-compatible server (the real HTTP fake
on 127.0.0.1), ``ft`` in process; with no ``--tasks``, every task with data, the others named as skipped; and a
GPU box that runs it from its folder alone (its card travels with the data), with Django unimportable there."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command

from baselines.models import BaselineRun
from results.cells import model_rows
from tasks_data.card_import import import_task
from tasks_data.registry import CLUES_TASKS

pytestmark = pytest.mark.django_db
REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "reviews"


def run(*args) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("run_baselines", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.fixture
def reviews(researcher):
    return import_task(EXAMPLE, owner=researcher).task


def test_with_no_tasks_every_task_with_data_runs_and_the_others_are_named(reviews, own_task):
    own_task(kind="spans", slug="names", shots=(2,), splits=(1,))
    out, err = run("--methods", "empty", "majority")
    for slug in CLUES_TASKS:  # no CLUES data in this database
        assert f"skipped: {slug}: no data imported" in err
    # reviews: 4/8 shots x 2 splits; names: majority needs a label set; its one size and split.
    assert "skipped: majority on names: the majority baseline needs a label set" in err
    runs = BaselineRun.objects.filter(status=BaselineRun.Status.COMPLETED)
    assert sorted(runs.filter(task=reviews).values_list("method", "shots", "split")) == [
        (m, k, s) for m in ("empty", "majority") for k in (4, 8) for s in (1, 2)
    ]
    assert sorted(runs.filter(task__slug="names").values_list("method", "shots", "split")) == [("empty", 2, 1)]
    empty = runs.get(task=reviews, method="empty", shots=4, split=1)
    assert empty.s1 == 0.0  # a label is never empty
    assert "reviews" in out and "names" in out  # the table of completed runs


def test_run_baselines_tasks_slug_over_a_server_and_in_process(reviews, fake, tmp_path):
    fake.reply = lambda body: "negative"
    out, err = run(
        "--tasks",
        "reviews",
        "--methods",
        "icl",
        "worker",
        "--models",
        "tiny-model",
        "--api-base",
        fake.base_url,
        "--shots",
        "0",
        "4",
        "--splits",
        "1",
    )
    runs = BaselineRun.objects.filter(task=reviews, status=BaselineRun.Status.COMPLETED)
    assert sorted(runs.values_list("method", "shots")) == [("icl", 0), ("icl", 4), ("worker", 0), ("worker", 4)]
    # The fake answers "negative" to everything: half the test items (5 of 10) are negative.
    assert {r.s1 for r in runs} == {0.5}
    prompts = "\n".join(json.dumps(b) for b in fake.answered)
    assert "pleased" in prompts  # the card's instructions are the task's description for the model
    assert "The kettle boils in two minutes" in prompts
    # The prediction file of a run, in the official format.
    out = io.StringIO()
    call_command("export_baselines", "--predictions", str(runs.get(method="worker", shots=4).pk), stdout=out)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [line["id"] for line in lines] == [f"r-t{n:02}" for n in range(1, 11)]
    assert {tuple(line["prediction"]) for line in lines} == {("negative",)}
    # pt declares no template for a card: skipped with the reason.
    _, err = run("--tasks", "reviews", "--methods", "pt", "--shots", "4", "--splits", "1")
    assert "skipped: pt on reviews: prompt-based fine-tuning needs a template and verbalizers" in err


@pytest.mark.slow
def test_a_gpu_box_runs_the_task_from_its_folder_without_django(reviews, tmp_path, researcher):
    """benchmarks/gpu_sweep.py in a process where Django cannot be imported: the card and JSONL of the folder are
    all it reads; its runs come back through import_baseline_runs and sit beside the humans."""
    from tests.adapters import tiny_models

    texts = [json.loads(line)["context"] for line in (EXAMPLE / "test.jsonl").read_text().splitlines()]
    model = tiny_models.bert_checkpoint(tmp_path / "tiny", [*texts, "positive negative"])
    out = tmp_path / "runs.json"
    script = (
        "import sys; sys.modules['django'] = None  # no Django on the GPU box\n"
        f"sys.path.insert(0, {str(REPO)!r})\n"
        "from benchmarks import gpu_sweep\n"
        f"raise SystemExit(gpu_sweep.main(['--task-dir', {str(EXAMPLE)!r}, '--model', {model!r}, '--model-name',"
        f" 'tiny-bert', '--out', {str(out)!r}, '--shots', '4', '--splits', '1', '--device', 'cpu', '--set',"
        " 'max_steps=1']))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "reviews   4-shot split 1" in done.stdout
    payload = json.loads(out.read_text())
    assert [(r["task"], r["shots"], r["split"]) for r in payload["runs"]] == [("reviews", 4, 1)]
    imported = io.StringIO()
    call_command("import_baseline_runs", str(out), stdout=imported)
    assert "imported 1 run(s)" in imported.getvalue()
    assert any(r["task"] == "reviews" and r["model"] == "tiny-bert" and r["shots"] == 4 for r in model_rows())


def test_the_papers_row_stands_only_beside_a_task_the_paper_has(reviews):
    from baselines.management.commands.run_baselines import paper_comparison

    rows = [
        {"task": "sst2", "method": "ft", "model": "m", "shots": 10, "mean": 50.0, "std": 1.0},
        {"task": "reviews", "method": "ft", "model": "m", "shots": 4, "mean": 70.0, "std": 2.0},
    ]
    lines = paper_comparison(rows).splitlines()
    sst2, own = (next(line for line in lines if line.startswith(slug)) for slug in ("sst2", "reviews"))
    assert "46.2 ± 5.6" in sst2 and sst2.endswith("CLUES paper Table 6")
    assert own.endswith("70.0 ± 2.0  not in the paper") and " - " in own and "Table" not in own
