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
from fewshot_models import icl as icl_module
from fewshot_models.backends.openai import OpenAIBackend
from tasks_data.models import Example
from tests.baselines.fake_openai import TOKEN, FakeOpenAI
from tests.tasks_data.official_s1 import eval_S1

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("demo")]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", TOKEN)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setattr(OpenAIBackend, "backoff", 0.02)
    monkeypatch.setattr(icl_module, "SERVER_FITS", {})
    with FakeOpenAI() as server:
        yield server


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
