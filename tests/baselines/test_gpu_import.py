"""Runs made off the platform (benchmarks/gpu_sweep.py, Django-free) come back through
``import_baseline_runs``, re-scored against the gold; ``run_baselines`` ends with the paper's row."""

import io
import json
import sys

import pytest
from django.core.management import CommandError, call_command

from baselines.models import BaselineRun
from results.cells import model_rows
from tasks_data.registry import CLUES_TASKS
from tests.adapters import tiny_models

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def sweep_file(tmp_path_factory, clues_zip):
    """A real tiny run of the GPU sweep script, on the CPU: tiny BERT, SST-2 10-shot split 1."""
    from benchmarks import gpu_sweep
    from fewshot_models.clues_io import load_split

    tmp = tmp_path_factory.mktemp("sweep")
    task = CLUES_TASKS["sst2"]
    texts = [e.question + " " + e.context for e in load_split(str(clues_zip), task, task.test_filename)]
    model = tiny_models.bert_checkpoint(tmp / "tiny", texts)
    out = tmp / "runs.json"
    assert (
        gpu_sweep.main(
            [
                "--zip",
                str(clues_zip),
                "--model",
                model,
                "--model-name",
                "tiny-bert",
                "--out",
                str(out),
                "--tasks",
                "sst2",
                "--shots",
                "10",
                "--splits",
                "1",
                "--device",
                "cpu",
                "--set",
                "max_steps=1",
            ]
        )
        == 0
    )
    return out


def _import(path) -> str:
    out = io.StringIO()
    call_command("import_baseline_runs", str(path), stdout=out)
    return out.getvalue()


def test_exported_runs_are_imported_rescored_and_shown_as_model_rows(clues_data, sweep_file, tmp_path):
    payload = json.loads(sweep_file.read_text())
    run = payload["runs"][0]
    assert run["device"] == "cpu" and run["train_seconds"] > 0 and run["predict_examples_per_second"] > 0
    payload["runs"][0]["s1"] = 0.99  # a score the predictions do not earn is ignored
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps(payload))
    assert "imported 1 run(s)" in _import(forged)
    stored = BaselineRun.objects.get(task__slug="sst2", method="ft", model="tiny-bert", shots=10, split=1)
    assert stored.status == BaselineRun.Status.COMPLETED and stored.device == "cpu"
    assert stored.s1 == pytest.approx(json.loads(sweep_file.read_text())["runs"][0]["s1"]) != 0.99
    assert stored.s1 == pytest.approx(sum(stored.item_scores) / len(stored.item_scores))
    assert stored.train_seconds == pytest.approx(run["train_seconds"])
    assert stored.notes["imported_from"]["torch"] == payload["torch"]
    rows = model_rows()  # what the human-vs-model page and export_results --with-baselines show
    assert any(r["model"] == "tiny-bert" and r["task"] == "sst2" and r["shots"] == 10 for r in rows)
    # Importing again leaves the completed run alone.
    assert "imported 0 run(s); 1 already completed" in _import(sweep_file)
    assert BaselineRun.objects.filter(model="tiny-bert").count() == 1


def test_a_run_being_run_here_is_left_to_its_runner_until_the_runner_is_gone(clues_data, sweep_file, another_runner):
    """An import does not complete a run a live process is running here: that runner's work, and the requests it
    pays a server for, would be thrown away when it ends. Once the runner is gone, the import takes the run."""
    child, hold, let_go = another_runner
    _import(sweep_file)
    run = BaselineRun.objects.get(model="tiny-bert")
    hold(run)  # marked running by a live process (on PostgreSQL: which holds the run's lock)
    err = io.StringIO()
    out = io.StringIO()
    call_command("import_baseline_runs", str(sweep_file), stdout=out, stderr=err)
    assert "imported 0 run(s); 0 already completed here were left alone; 1 being run here now" in out.getvalue()
    assert f"left alone: {run}: process {child.pid} on " in err.getvalue()
    left = BaselineRun.objects.get(pk=run.pk)
    assert (left.status, left.attempts, left.runner["pid"]) == ("running", run.attempts, child.pid)
    let_go()  # killed: its pid gone (and its connection, with the lock)
    assert "imported 1 run(s)" in _import(sweep_file)
    taken = BaselineRun.objects.get(pk=run.pk)
    assert (taken.status, taken.attempts) == ("completed", run.attempts + 1)


def test_a_bad_file_is_refused_whole(clues_data, sweep_file, tmp_path):
    payload = json.loads(sweep_file.read_text())
    good = payload["runs"][0]
    shuffled = dict(good, split=2, predictions=list(reversed(good["predictions"])))  # ids out of order
    payload["runs"] = [good, shuffled]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(payload))
    with pytest.raises(CommandError, match="run 2: predictions must be"):
        _import(bad)
    assert not BaselineRun.objects.filter(model="tiny-bert").exists()  # run 1 was not kept either
    for text, message in [
        ("{", "is not JSON"),
        ('{"format": "x"}', "not a baseline-runs file"),
        (json.dumps({**payload, "runs": [dict(good, task="nope")]}), "unknown task"),
    ]:
        bad.write_text(text)
        with pytest.raises(CommandError, match=message):
            _import(bad)
    with pytest.raises(CommandError, match="cannot read"):
        _import(tmp_path / "missing.json")


def test_run_baselines_prints_the_papers_row_beside_ft_only(clues_data, sweep_file):
    _import(sweep_file)  # a completed ft run (tiny-bert, SST-2 10-shot split 1): run_baselines finds it done
    out = io.StringIO()
    call_command(
        "run_baselines",
        "--tasks",
        "sst2",
        "--methods",
        "ft",
        "empty",
        "majority",
        "--models",
        "ft=tiny-bert",
        "--shots",
        "10",
        "--splits",
        "1",
        stdout=out,
        stderr=io.StringIO(),
    )
    text = out.getvalue()
    tail = text[text.index("paper (BERT-base, classic fine-tuning) vs ours (ft)") :]
    sst = next(line for line in tail.splitlines() if line.startswith("sst2      ft"))
    assert "46.2 ± 5.6" in sst and "CLUES paper Table 6" in sst
    # the paper's fine-tuning row is never printed beside another method
    assert not any(line.startswith(("sst2      empty", "sst2      majority")) for line in tail.splitlines())
    head = text[: text.index("paper (BERT-base")]
    assert "sst2      majority" in head and "sst2      empty" in head  # their own rows are in the table


def test_the_sweep_script_imports_no_django():
    import subprocess

    code = "import sys; import benchmarks.gpu_sweep; assert 'django' not in sys.modules, 'django imported'"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=str(__import__("pathlib").Path(__file__).parents[2]))
