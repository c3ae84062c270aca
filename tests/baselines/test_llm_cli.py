"""`run_baselines` as typed in a shell (`--set`, `--seed`), backends chosen by name, what a killed or failed attempt
cost, exports in the official format, and answers kept compactly: through the command, against the real HTTP fake
(tests/baselines/fake_openai.py) on 127.0.0.1."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from baselines.models import BaselineResponse, BaselineRun
from tasks_data.models import Example
from tests.tasks_data.official_s1 import eval_S1

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("demo")]
ROOT = Path(__file__).resolve().parents[2]


def run(*args) -> str:
    out = io.StringIO()
    call_command("run_baselines", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def sweep(fake, *extra, tasks=("sst2",), methods=("worker",)):
    return run(
        *("--tasks", *tasks, "--methods", *methods, "--models", "tiny-model", "--api-base", fake.base_url),
        *("--shots", "10", "--splits", "1", *extra),
    )


# --------------------------------------------------------------------------- as typed in a shell

SAMPLING = ("--set", "temperature=0.7", "--seed", "1", "2")


def test_set_and_seed_parsed_as_a_shell_passes_them(fake, capsys):
    """Django's argv path as `manage.py` runs it (``BaseCommand.run_from_argv``, without its closing of the
    database connections, which the test's transaction needs), where --set once collided with --settings."""
    from django.core.management import load_command_class
    from django.core.management.base import handle_default_options

    argv = ["--tasks", "sst2", "--methods", "worker", "--models", "tiny-model"]
    argv += ["--api-base", fake.base_url, "--shots", "0", *SAMPLING]
    command = load_command_class("baselines", "run_baselines")
    options = command.create_parser("manage.py", "run_baselines").parse_args(argv)
    handle_default_options(options)  # reads options.settings: a list here once crashed the command
    kwargs = vars(options)
    command.execute(*kwargs.pop("args", ()), **kwargs)
    assert sorted(BaselineRun.objects.values_list("seed", flat=True)) == [1, 2]
    assert {b["temperature"] for b in fake.answered} == {0.7} and {b["seed"] for b in fake.answered} == {1, 2}
    assert "2 run(s)" in capsys.readouterr().out


# --------------------------------------------------------------------------- backends by name


def test_the_backend_is_chosen_by_name_and_is_part_of_the_runs_identity(fake, capsys):
    err = io.StringIO()
    call_command(
        "run_baselines",
        *("--tasks", "sst2", "--methods", "worker", "ft", "--backend", "openai", "--models", "tiny-model"),
        *("--api-base", fake.base_url, "--shots", "10", "--splits", "1"),
        stdout=io.StringIO(),
        stderr=err,
    )
    assert "skipped: ft on sst2: runs on transformers, not openai" in err.getvalue()
    (worker,) = BaselineRun.objects.all()
    assert (worker.method, worker.backend, worker.server) == ("worker", "openai", fake.base_url)
    listed = io.StringIO()
    call_command("export_baselines", stdout=listed)
    assert json.loads(listed.getvalue())[0]["backend"] == "openai"
    err = io.StringIO()
    call_command(
        "run_baselines",
        *("--tasks", "sst2", "--methods", "worker", "--backend", "transformers", "--shots", "10"),
        stdout=io.StringIO(),
        stderr=err,
    )
    assert "skipped: worker on sst2: runs on openai, not transformers" in err.getvalue()
    with pytest.raises(CommandError, match="give its base URL with --api-base"):
        run("--tasks", "sst2", "--methods", "icl", "--backend", "openai", "--models", "m", "--shots", "10")
    with pytest.raises(CommandError, match="invalid choice: 'vllm'"):
        run("--tasks", "sst2", "--methods", "icl", "--backend", "vllm")
    assert BaselineRun.objects.count() == 1


def test_no_backend_is_named_outside_its_registry():
    """A backend is one object: only its own module and the registry say its name (migrations freeze history)."""
    from fewshot_models.backends import BACKENDS

    allowed = {ROOT / "fewshot_models" / "backends" / f"{name}.py" for name in BACKENDS}
    for folder in ("fewshot_models", "baselines"):
        for path in (ROOT / folder).rglob("*.py"):
            if "migrations" in path.parts or path in allowed:
                continue
            # (an imported run's package versions name the transformers library, not the backend)
            text = "\n".join(line for line in path.read_text().splitlines() if "imported_from" not in line)
            for name in BACKENDS:
                assert not re.search(rf"[\"']{name}[\"']", text), f"{path.relative_to(ROOT)} names the {name} backend"


# --------------------------------------------------------------------------- what an attempt cost


def test_a_failed_attempt_is_counted_apart_when_the_run_is_retried(fake):
    fake.fail_after = 6
    with pytest.raises(CommandError):
        sweep(fake, "--max-retries", "0")
    failed = BaselineRun.objects.get()
    assert failed.status == "failed" and failed.usage["requests"] == 7 and failed.usage["attempt"] == 1
    fake.fail_after = None
    sweep(fake)
    done = BaselineRun.objects.get()
    assert done.status == "completed" and done.usage["killed_attempt_requests"] == 7
    assert done.usage["resumed"] == 6 and done.usage["requests"] == len(fake.answered) - 6


# --------------------------------------------------------------------------- exports and the kept answers


def test_predictions_export_in_the_official_format_and_score_as_the_platform_does(fake):
    fake.reply = lambda body: "none"  # no entity anywhere: the NER empty set, [""] in the official files
    sweep(fake, tasks=("conll03",))
    run_ = BaselineRun.objects.get()
    out = io.StringIO()
    call_command("export_baselines", "--predictions", str(run_.pk), stdout=out)
    rows = [json.loads(line) for line in out.getvalue().splitlines()]
    tests = list(Example.objects.filter(task=run_.task, role="test").order_by("position"))
    assert [r["id"] for r in rows] == [e.clues_id for e in tests]
    assert all(r["prediction"] == [""] for r in rows)
    from tasks_data.management.commands.import_clues import DEMO_DATA

    published = [json.loads(line)["answer"] for line in (DEMO_DATA / "CoNLL2003" / "conll_test.jsonl").open()]
    assert run_.s1 > 0 and eval_S1([r["prediction"] for r in rows], published) == pytest.approx(run_.s1, abs=1e-12)
    assert eval_S1([[] for _ in rows], published) == 0.0  # what `[]` scored with the official function
    with pytest.raises(CommandError, match="no completed baseline run 999"):
        call_command("export_baselines", "--predictions", "999", stdout=io.StringIO())


def test_predictions_export_ids_as_the_official_file_writes_them(fake):
    """SST-2's ids are JSON numbers in its test file (and in the human export): the run's file joins it by id."""
    from tasks_data.management.commands.import_clues import DEMO_DATA

    sweep(fake, tasks=("sst2",))
    out = io.StringIO()
    call_command("export_baselines", "--predictions", str(BaselineRun.objects.get().pk), stdout=out)
    ids = [json.loads(line)["id"] for line in out.getvalue().splitlines()]
    official = [json.loads(line)["id"] for line in (DEMO_DATA / "SST-2" / "sst_test.jsonl").open()]
    assert ids == official and all(type(i) is int for i in ids)


def test_answers_are_kept_compactly(fake):
    sweep(fake, methods=("icl",))
    rows = list(BaselineResponse.objects.all())
    run_ = BaselineRun.objects.get()
    assert len(rows) == run_.usage["requests"]
    scored = [r.record for r in rows if isinstance(r.record["answer"], list)]
    assert scored and all(all(isinstance(p, float) for p in r["answer"]) for r in scored)  # the continuation's only
    assert max(len(bytes(r.data)) for r in rows) < 200  # a hash and a few numbers: no prompt, no echoed tokens
    assert "Context:" not in json.dumps([r.record for r in rows])


def test_the_workers_notes_name_items_by_clues_id_and_count_the_second_try(fake):
    fake.reply = lambda body: "Banana Republic"  # no text of any CoNLL03 sentence, twice
    sweep(fake, tasks=("conll03",))
    run_ = BaselineRun.objects.get()
    tests = list(Example.objects.filter(task=run_.task, role="test").order_by("position"))
    training = run_.task.training_sets.get(shots=10, split=1).items.count()
    assert all("_" in e.clues_id for e in tests)  # CoNLL03's ids ("5426_1"): never a row id
    assert sorted(run_.notes["unparseable_items"]) == sorted(e.clues_id for e in tests)
    assert set(run_.notes["re_asked_items"]) >= {e.clues_id for e in tests}
    # each item asked twice (the reply, then the validation message and one more try), all counted
    assert run_.usage["requests"] == 2 * (training + len(tests)) == len(fake.answered)
    assert "'Banana Republic' is not text of the passage" in fake.answered[1]["messages"][-1]["content"]


# --------------------------------------------------------------------------- retrying, and one runner per run


def test_a_run_that_failed_many_times_runs_again_once_the_cause_is_fixed(fake):
    """Failed (or stopped) attempts are counted and shown, never a wall: the fifth try of a run runs."""
    fake.fail_after = 0  # the server answers every request with 503
    for attempt in range(1, 5):
        err = io.StringIO()
        with pytest.raises(CommandError, match=rf"1 of 1 run\(s\) failed \(attempts so far: {attempt};"):
            call_command(
                "run_baselines",
                *("--tasks", "sst2", "--methods", "worker", "--models", "tiny-model", "--api-base", fake.base_url),
                *("--shots", "10", "--splits", "1", "--max-retries", "0"),
                stdout=io.StringIO(),
                stderr=err,
            )
        assert f"(attempt {attempt}): BackendError" in err.getvalue()
    assert BaselineRun.objects.get().attempts == 4
    fake.fail_after = None
    out = sweep(fake)
    assert "1 to run (1 tried before: attempts so far: 4)" in out
    run_ = BaselineRun.objects.get()
    assert run_.status == "completed" and run_.attempts == 5 and run_.usage["requests"] > 0
    listed = io.StringIO()
    call_command("export_baselines", stdout=listed)
    assert json.loads(listed.getvalue())[0]["attempts"] == 5


def test_a_second_command_leaves_a_running_run_to_its_runner_and_names_it(fake, another_runner):
    child, hold, let_go = another_runner
    fake.fail_after = 5  # a first attempt that kept five answers, then failed
    with pytest.raises(CommandError):
        sweep(fake, "--max-retries", "0")
    fake.fail_after = None
    run_ = BaselineRun.objects.get()
    kept = BaselineResponse.objects.filter(run=run_).count()
    hold(run_)
    sent = len([c for c in fake.calls if c["body"] is not None])
    err = io.StringIO()
    with pytest.raises(
        CommandError, match=rf"1 run\(s\) left to the process already running them \(process {child.pid} on "
    ):
        call_command(
            "run_baselines",
            *("--tasks", "sst2", "--methods", "worker", "--models", "tiny-model", "--api-base", fake.base_url),
            *("--shots", "10", "--splits", "1"),
            stdout=io.StringIO(),
            stderr=err,
        )
    assert f"left alone: sst2 worker tiny-model at {fake.base_url} 10-shot split 1 seed 42: process {child.pid}" in (
        err.getvalue()
    )
    # nothing was sent, taken over or discarded
    left = BaselineRun.objects.get()
    assert len([c for c in fake.calls if c["body"] is not None]) == sent and (
        left.status,
        left.attempts,
        left.runner["pid"],
    ) == ("running", 1, child.pid)
    assert BaselineResponse.objects.filter(run=run_).count() == kept == 5
    # the runner gone (killed: its connection closed, its pid gone), the next command takes the run over
    let_go()
    sweep(fake)
    done = BaselineRun.objects.get()
    assert (done.status, done.attempts, done.usage["resumed"]) == ("completed", 2, 5)


# --------------------------------------------------------------------------- settings per method


def test_a_setting_goes_to_the_methods_that_take_it_and_each_says_what_it_took(fake):
    out = sweep(fake, "--set", "temperature=0.7", "--set", "icl.max_new_tokens=8", methods=("icl", "worker"))
    assert "settings: icl took max_new_tokens=8; ignored temperature=0.7" in out
    assert "settings: worker took temperature=0.7\n" in out
    icl, worker = BaselineRun.objects.get(method="icl"), BaselineRun.objects.get(method="worker")
    assert icl.status == worker.status == "completed"
    assert icl.config["extra"] == {"max_new_tokens": 8} and worker.config["extra"] == {"temperature": 0.7}
    chats = [b for b in fake.answered if "messages" in b]
    assert chats and {b["temperature"] for b in chats} == {0.7} and {b["max_tokens"] for b in chats} == {64}


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        (
            "temprature=0.7",
            "--set temprature: no method of this sweep takes 'temprature' (icl takes eval_batch_size",
        ),
        ("icl.temperature=0.7", "--set icl.temperature: icl has no setting 'temperature'; icl takes eval_batch_size"),
        ("ft.epochs=1", "--set ft.epochs: ft is not among --methods icl worker"),
    ],
)
def test_a_setting_no_method_takes_is_refused_before_anything_runs(fake, setting, message):
    with pytest.raises(CommandError) as err:
        sweep(fake, "--set", setting, methods=("icl", "worker"))
    assert str(err.value).startswith(message)
    assert not BaselineRun.objects.exists() and fake.calls == []


def test_progress_bars_are_drawn_on_a_terminal_only(fake):
    """Into a log (no terminal) nothing but the command's lines; on a terminal (a pseudo-terminal here) the bars."""
    import os
    import pty
    import threading

    err = io.StringIO()
    call_command("run_baselines", "--tasks", "sst2", "--methods", "majority", stdout=io.StringIO(), stderr=err)
    assert "\r" not in err.getvalue() and "run/s" not in err.getvalue()
    BaselineRun.objects.all().delete()
    master, slave = pty.openpty()
    drawn: list[bytes] = []
    reader = threading.Thread(target=lambda: drawn.extend(iter(lambda: _read(master), b"")), daemon=True)
    reader.start()
    with open(slave, "w", closefd=True) as terminal:
        call_command(
            "run_baselines", "--tasks", "sst2", "--methods", "majority", "--shots", "10", "--splits", "1",
            stdout=io.StringIO(), stderr=terminal,
        )  # fmt: skip
    reader.join(timeout=10)
    os.close(master)
    assert b"sst2 majority 10-shot split 1" in b"".join(drawn)


def _read(fd: int) -> bytes:
    import os

    try:
        return os.read(fd, 4096)
    except OSError:  # the terminal's other end closed
        return b""
