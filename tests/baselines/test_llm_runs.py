"""Runs over an OpenAI-compatible server, end to end through run_baselines, export_baselines, the API and the
results page, against the real HTTP fake (tests/baselines/fake_openai.py) on 127.0.0.1."""

from __future__ import annotations

import io
import json
import logging

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from baselines.models import BaselineResponse, BaselineRun
from baselines.selectors import model_cells
from tasks_data.models import Example
from tests.annotation.factories import cohort, complete, make_study
from tests.baselines.fake_openai import TOKEN, FakeOpenAI

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("demo")]


def run_command(*args) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("run_baselines", *args, stdout=out, stderr=err)
    finally:
        run_command.last = (out.getvalue(), err.getvalue())
    return out.getvalue(), err.getvalue()


def sweep(fake, *extra, methods=("worker",), model="tiny-model"):
    return run_command(
        "--tasks",
        "sst2",
        "--methods",
        *methods,
        "--models",
        model,
        "--api-base",
        fake.base_url,
        "--shots",
        "10",
        "--splits",
        "1",
        *extra,
    )


def test_worker_and_icl_through_run_baselines(fake, caplog):
    caplog.set_level(logging.DEBUG)
    n_test = Example.objects.filter(task__slug="sst2", role="test").count()
    out, err = sweep(fake, methods=("worker", "icl"))
    worker, icl = BaselineRun.objects.get(method="worker"), BaselineRun.objects.get(method="icl")
    for run in (worker, icl):
        assert run.status == "completed" and run.server == fake.base_url and run.model == "tiny-model"
        assert run.backend == "openai" and run.config["concurrency"] == 8
    assert worker.usage["requests"] == 10 + n_test and worker.usage["resumed"] == 0
    assert worker.usage["prompt_tokens"] > 0 and worker.usage["completion_tokens"] == 10 + n_test
    # the echo's check (the model's own continuation, its echo), the fit's measure, then both labels of every item
    assert icl.usage["requests"] == 2 + 1 + 2 * n_test and icl.notes["echo_logprobs"] is True
    assert worker.predictions == [{"id": p["id"], "prediction": ["positive"]} for p in worker.predictions]
    assert BaselineResponse.objects.filter(run=worker).count() == 10 + n_test
    assert "tiny-model" in out and "worker" in out and "icl" in out
    assert "paper (BERT-base" not in out  # the paper's fine-tuning row only beside ft
    # the key went out as a header, and nowhere else: not in output, logs, stored requests or runs
    assert all(c["authorization"] == f"Bearer {TOKEN}" for c in fake.calls)
    stored = json.dumps([r.record for r in BaselineResponse.objects.all()])
    runs = json.dumps([[r.config, r.notes, r.usage, r.error, r.server] for r in BaselineRun.objects.all()])
    for text in (out, err, caplog.text, stored, runs):
        assert TOKEN not in text and "SECRET" not in text


def test_a_failed_run_restarted_pays_for_nothing_twice(fake):
    fake.fail_after = 6  # the server goes away after 6 answers
    with pytest.raises(CommandError, match="1 of 1 run"):
        sweep(fake, "--max-retries", "1")
    run = BaselineRun.objects.get()
    assert run.status == "failed" and "503" in run.error and run.predictions is None
    assert BaselineResponse.objects.filter(run=run).count() == 6
    first = len(fake.answered)
    fake.fail_after = None
    out, _ = sweep(fake)
    run.refresh_from_db()
    assert run.status == "completed" and run.attempts == 2
    assert run.usage["resumed"] == 6 and run.usage["requests"] == len(fake.answered) - first
    bodies = [json.dumps(b, sort_keys=True) for b in fake.answered]
    assert len(bodies) == len(set(bodies))  # no request answered twice
    # a third time: nothing to run, nothing sent
    sent = len(fake.calls)
    out, _ = sweep(fake)
    assert "1 already completed, 0 to run" in out and len(fake.calls) == sent + 1  # only GET /models


def test_a_retried_request_is_counted_once(fake):
    fake.faults = ["429", "500", "drop"]
    fake.retry_after = "0"
    sweep(fake)
    run = BaselineRun.objects.get()
    n = 10 + Example.objects.filter(task__slug="sst2", role="test").count()
    assert run.status == "completed" and BaselineResponse.objects.filter(run=run).count() == n
    assert run.usage["requests"] == n + 3 and run.usage["retries"] == 3 and run.usage["completion_tokens"] == n
    assert run.notes["unanswered_sends"] == 1


def test_same_model_on_two_servers_never_collides(fake, monkeypatch):
    with FakeOpenAI() as other:
        other.reply = lambda body: "negative"
        sweep(fake)
        sweep(other)
    runs = BaselineRun.objects.order_by("pk")
    assert [r.server for r in runs] == [fake.base_url, other.base_url]
    rows = model_cells(runs.select_related("task"))
    assert len(rows) == 2 and rows[0]["label"] != rows[1]["label"]
    assert all(row["label"].startswith("tiny-model (as a worker, 127.0.0.1:") for row in rows)


@pytest.mark.parametrize("problem", ["unknown model", "wrong key", "unreachable", "credentials in url"])
def test_bad_server_input_is_a_clear_error_and_stores_nothing(fake, monkeypatch, problem):
    model, base = "tiny-model", fake.base_url
    if problem == "unknown model":
        model = "qwen-72b"
    elif problem == "wrong key":
        monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
    elif problem == "unreachable":
        base = "http://127.0.0.1:9/v1"
    else:
        base = base.replace("http://", "http://me:hunter2@")
    with pytest.raises(CommandError) as err:
        run_command("--tasks", "sst2", "--methods", "worker", "--models", model, "--api-base", base, "--shots", "10")
    message = str(err.value)
    expected = {
        "unknown model": "does not serve qwen-72b; it offers: tiny-model",
        "wrong key": "refused the key",
        "unreachable": "cannot reach http://127.0.0.1:9/v1",
        "credentials in url": "OPENAI_API_KEY",
    }[problem]
    assert expected in message and "hunter2" not in message
    assert not BaselineRun.objects.exists() and not BaselineResponse.objects.exists()


@pytest.mark.parametrize("where", ["a key-like part", "the key itself", "a long token", "an encoded key"])
def test_a_key_anywhere_in_the_server_url_is_refused_without_echoing_it(fake, where):
    """Keys go in OPENAI_API_KEY: one in the URL's path would be stored with every run, listed and shown."""
    secret = {
        "a key-like part": "sk-proj-Zx81QqLm",
        "the key itself": TOKEN,
        "a long token": "0f3A9c2B7d1E5f8a6B4c0D2e9F7a1b3C",
        "an encoded key": "sk%2Dproj%2DZx81QqLm",
    }[where]
    base = fake.base_url.replace("/v1", f"/{secret}/v1")
    with pytest.raises(CommandError) as err:
        run_command(
            "--tasks", "sst2", "--methods", "worker", "--models", "tiny-model", "--api-base", base, "--shots", "10"
        )
    message = str(err.value)
    assert "OPENAI_API_KEY" in message and "may not carry a key" in message
    assert secret not in message and secret.replace("%2D", "-") not in message and "127.0.0.1" not in message
    assert not BaselineRun.objects.exists() and not fake.calls, "refused before anything was sent"


def test_worker_needs_a_server(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(CommandError, match="--api-base"):
        run_command("--tasks", "sst2", "--methods", "worker", "--models", "m", "--shots", "10")


def test_api_base_from_the_environment(fake, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url + "/")
    run_command("--tasks", "sst2", "--methods", "worker", "--models", "tiny-model", "--shots", "10", "--splits", "1")
    assert BaselineRun.objects.get().server == fake.base_url


def test_context_window_too_small_says_how_many_fit(fake):
    fake.window = 400
    with pytest.raises(CommandError):
        sweep(fake)
    run = BaselineRun.objects.get()
    assert run.status == "failed" and "context window (400 tokens)" in run.error
    assert "training item(s) fit" in run.error and run.s1 is None


def test_zero_shots_and_several_seeds_form_one_row(fake):
    run_command(
        "--tasks",
        "sst2",
        "--methods",
        "worker",
        "--models",
        "tiny-model",
        "--api-base",
        fake.base_url,
        "--shots",
        "0",
        "--splits",
        "1",
        "2",
        "--seed",
        "1",
        "2",
        "--set",
        "temperature=0.7",
    )
    runs = BaselineRun.objects.all()
    assert sorted((r.shots, r.split, r.seed) for r in runs) == [(0, 1, 1), (0, 1, 2)]  # 0 shots: one split
    assert {b["seed"] for b in fake.answered} == {1, 2} and {b["temperature"] for b in fake.answered} == {0.7}
    assert all(len(b["messages"]) == 1 for b in fake.answered)  # the description, then the item
    (row,) = model_cells(runs.select_related("task"))
    assert row["n"] == 2 and row["seeds"] == [1, 2] and row["shots"] == 0


def test_models_per_method(fake):
    fake.models = ["tiny-model", "other-model"]
    run_command(
        "--tasks",
        "sst2",
        "--methods",
        "worker",
        "icl",
        "--models",
        "worker=tiny-model",
        "icl=other-model",
        "--api-base",
        fake.base_url,
        "--shots",
        "10",
        "--splits",
        "1",
    )
    assert sorted(BaselineRun.objects.values_list("method", "model")) == [
        ("icl", "other-model"),
        ("worker", "tiny-model"),
    ]
    with pytest.raises(CommandError, match="either every model names its method"):
        run_command(
            "--tasks",
            "sst2",
            "--methods",
            "worker",
            "icl",
            "--models",
            "worker=tiny-model",
            "other-model",
            "--api-base",
            fake.base_url,
        )
    with pytest.raises(CommandError, match="ft is not among --methods"):
        run_command("--tasks", "sst2", "--methods", "worker", "--models", "ft=x", "--api-base", fake.base_url)


def test_export_baselines_and_the_api(fake, researcher, plain_user, caplog):
    sweep(fake)
    run = BaselineRun.objects.get()
    out = io.StringIO()
    call_command("export_baselines", "--format", "json", stdout=out)
    (row,) = json.loads(out.getvalue())
    assert row["task"] == "sst2" and row["method"] == "worker" and row["server"] == fake.base_url
    assert row["s1_percent"] == pytest.approx(100 * run.s1) and row["requests"] == run.usage["requests"]
    assert row["tokens"] == run.usage["prompt_tokens"] + run.usage["completion_tokens"] and row["seconds"] > 0
    out = io.StringIO()
    call_command("export_baselines", "--format", "csv", stdout=out)
    header, line = out.getvalue().splitlines()
    assert header.startswith(
        "id,task,method,model,backend,server,shots,split,seed,status,attempts,s1_percent,demonstrations_min,"
        "demonstrations_median,demonstrations_max,demonstrations_of,scoring,requests,tokens,seconds"
    )
    assert f",openai,{fake.base_url},10,1,42,completed,1," in line
    out = io.StringIO()
    call_command("export_baselines", "--transcript", str(run.pk), stdout=out)
    entries = [json.loads(line) for line in out.getvalue().splitlines()]
    assert len(entries) == run.usage["requests"]
    # each answered request by its hash, with what scoring read of the answer: never the request's text
    assert {e["answer"] for e in entries} == {"positive"} and all(len(e["key"]) == 64 for e in entries)
    assert "messages" not in out.getvalue() and "Training item" not in out.getvalue()
    assert TOKEN not in out.getvalue()
    with pytest.raises(CommandError, match="no baseline run 999"):
        call_command("export_baselines", "--transcript", "999", stdout=io.StringIO())

    client = Client()
    assert client.get("/api/baselines/runs/").status_code == 401
    client.force_login(plain_user)
    assert client.get("/api/baselines/runs/").status_code == 403
    assert client.get(f"/api/baselines/runs/{run.pk}/transcript/").status_code == 403
    client.force_login(researcher)
    listed = client.get("/api/baselines/runs/").json()["runs"]
    assert listed == [json.loads(json.dumps(r)) for r in [row]] or listed[0]["id"] == run.pk
    assert listed[0]["requests"] == run.usage["requests"] and listed[0]["server"] == fake.base_url
    got = client.get(f"/api/baselines/runs/{run.pk}/transcript/").json()
    assert len(got["transcript"]) == len(entries) and got["run"]["id"] == run.pk
    assert client.get("/api/baselines/runs/999/transcript/").status_code == 404
    assert client.post("/api/baselines/runs/", {}).status_code in (403, 405)  # nothing starts a run on the web


# --------------------------------------------------------------------------- nothing downgraded in silence


def test_prompts_that_held_fewer_demonstrations_are_said_everywhere(fake, researcher):
    """A 10-shot icl run on a server whose window holds about half the demonstrations: the run, the command's
    closing table, the listing and the results page all say how many its prompts held."""
    from tasks_data.models import TrainingSet

    demos = TrainingSet.objects.get(task__slug="sst2", shots=10, split=1).examples.all()
    tests = Example.objects.filter(task__slug="sst2", role="test")
    longest = max(len(e.context.split()) + len(e.question.split()) for e in tests)
    fake.window = sum(len(d.context.split()) + len(d.question.split()) + 4 for d in demos) // 2 + longest + 20
    fake.advertise_window = True  # vLLM's max_model_len
    out, _ = sweep(fake, methods=("icl",))
    run = BaselineRun.objects.get()
    held = run.demonstrations
    assert run.status == "completed" and run.scoring == "log-likelihood" and held["of"] == 10
    assert 0 < held["min"] <= held["median"] <= held["max"] < 10 and run.fewer_demonstrations
    assert held["min"] == min(run.notes["demonstrations_used"]) and held["max"] == max(run.notes["demonstrations_used"])
    span = f"{held['min']}-{held['max']}" if held["min"] < held["max"] else str(held["min"])
    assert f"note: sst2 icl tiny-model 10-shot: its prompts held {span} of 10 demonstrations" in out
    assert f"{held['min']}/{held['median']:g}/{held['max']} of 10" in out and "log-likelihood" in out
    listed = io.StringIO()
    call_command("export_baselines", stdout=listed)
    (row,) = json.loads(listed.getvalue())
    assert (row["demonstrations_min"], row["demonstrations_max"], row["demonstrations_of"]) == (
        held["min"],
        held["max"],
        10,
    )
    assert row["scoring"] == "log-likelihood"
    study = make_study(tasks=["sst2"], shots=[10], created_by=researcher, filter_floor=None, filter_fraction=None)
    complete(cohort(study, "sst2", 10), "A")
    client = Client()
    client.force_login(researcher)
    page = client.get(f"/dashboard/studies/{study.pk}/results/").content.decode()
    assert f"{span} of 10 demonstrations" in page and "scored by log-likelihood" in page


def test_a_choice_scored_by_generation_says_why(fake):
    fake.no_completions = True  # a chat-only server: no log-probabilities to score a label with
    out, _ = sweep(fake, methods=("icl", "worker"))
    icl, worker = BaselineRun.objects.get(method="icl"), BaselineRun.objects.get(method="worker")
    assert icl.scoring == "generation" and worker.scoring == "chat"
    assert icl.demonstrations == worker.demonstrations == {"min": 10, "median": 10, "max": 10, "of": 10}
    (note,) = [line for line in out.splitlines() if line.startswith("note:")]  # all 10 held: no note of it
    assert note.startswith("note: sst2 icl tiny-model 10-shot: scored by generation, not log-likelihood: /completions")
