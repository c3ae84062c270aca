"""`run_baselines` against a real OpenAI-compatible server: `transformers serve` (the pinned transformers, with
fastapi, uvicorn, openai and accelerate from requirements/dev.txt) serving a tiny Llama built here, on 127.0.0.1.

What this server is (transformers 4.57): chat completions only, every answer streamed as server-sent events;
`/v1/models` lists a fixed catalogue, not the checkpoint it loads on request; no `/v1/completions`, so no
log-probabilities: `icl` generates. A server that does not start (or dies starting) fails the test, with its last
words, wherever it runs: in every pass of .ci/run (its last one runs with no environment at all) as on a laptop.

How long a start takes: 19 s on the 2-core machine at load 8, 210 s when six started at once at load 19 (a
scratch script timing `transformers serve` to its first /health 200). START_SECONDS waits about three times the
worst of these."""

from __future__ import annotations

import io
import json
import os
import re
import socket
import subprocess
import sys
import time

import httpx
import pytest
from django.core.management import call_command

from baselines.models import BaselineRun
from tasks_data.models import Example
from tests.tasks_data.official_s1 import eval_S1

pytestmark = [pytest.mark.django_db, pytest.mark.slow, pytest.mark.usefixtures("demo")]

TASKS = ("sst2", "conll03")
START_SECONDS = 600  # see the module's docstring: the measured worst start, 210 s, with room


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """(base URL, the model's path, the server's log file) of a `transformers serve` on a tiny Llama."""
    from tests.baselines import tiny_llama

    folder = tmp_path_factory.mktemp("real-server")
    model = tiny_llama.build(folder / "tiny-llama")
    port, log_path = _free_port(), folder / "serve.log"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    command = [sys.executable, "-m", "transformers.commands.transformers_cli", "serve", "--host", "127.0.0.1"]
    command += ["--port", str(port), "--device", "cpu", "--dtype", "float32", "--log_level", "info"]
    with open(log_path, "w") as log:
        proc = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        began = time.monotonic()
        while True:
            if proc.poll() is not None or time.monotonic() - began > START_SECONDS:
                state = f"exited {proc.returncode}" if proc.poll() is not None else f"no answer in {START_SECONDS} s"
                pytest.fail(f"transformers serve did not start ({state}): {log_path.read_text()[-1500:]}")
            try:
                if httpx.get(base + "/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        yield base + "/v1", model, log_path
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def published(slug: str) -> list[list[str]]:
    from tasks_data.management.commands.import_clues import DEMO_DATA
    from tasks_data.registry import CLUES_TASKS as SPECS

    spec = SPECS[slug]
    rows = (DEMO_DATA / spec.clues_folder / spec.test_filename).read_text(encoding="utf-8").splitlines()
    return [[a["text"] if isinstance(a, dict) else a for a in json.loads(r)["answer"]] for r in rows if r.strip()]


def test_icl_and_worker_against_transformers_serve(served, monkeypatch):
    base, model, log_path = served
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    out, err = io.StringIO(), io.StringIO()
    call_command(
        "run_baselines",
        *("--tasks", *TASKS, "--methods", "icl", "worker", "--backend", "openai", "--models", model),
        *("--api-base", base + "/chat/completions", "--shots", "10", "--splits", "1", "--concurrency", "1"),
        *("--set", "max_new_tokens=8", "--timeout", "60"),
        stdout=out,
        stderr=err,
    )
    runs = list(BaselineRun.objects.select_related("task").order_by("task__slug", "method"))
    assert [(r.task.slug, r.method, r.status) for r in runs] == [
        (slug, method, "completed") for slug in sorted(TASKS) for method in ("icl", "worker")
    ], [r.error[:300] for r in runs]
    for run in runs:
        assert run.backend == "openai" and run.server == base and run.model == model  # the endpoint URL, read as base
        n_test = Example.objects.filter(task=run.task, role="test").count()
        assert len(run.predictions) == n_test and run.usage["refused"] == 0
        # the official eval/S1.py on the exported file, against the test file as published, gives the stored S1
        lines = io.StringIO()
        call_command("export_baselines", "--predictions", str(run.pk), stdout=lines)
        predictions = [json.loads(line)["prediction"] for line in lines.getvalue().splitlines()]
        assert eval_S1(predictions, published(run.task.slug)) == pytest.approx(run.s1, abs=1e-12)
    icl = [r for r in runs if r.method == "icl"]
    assert all(r.notes["completions_endpoint"] is False and "generation" in r.notes["scoring"] for r in icl)
    worker = [r for r in runs if r.method == "worker"]
    assert all(
        len(r.notes["training_s1"])
        == BaselineRun.objects.get(pk=r.pk).task.training_sets.get(shots=10, split=1).items.count()
        for r in worker
    )
    # every request the runs counted is one the server logged, and the one-token question of the check that
    # the server serves the model it does not list (run_baselines asks it once, before planning)
    time.sleep(0.5)
    logged = re.findall(r'"POST /v1/[a-z/]+ HTTP/1.1" (\d{3})', log_path.read_text())
    assert len(logged) == sum(r.usage["requests"] for r in runs) + 1
    assert logged.count("404") == len(icl)  # icl's question to /v1/completions, once per run
