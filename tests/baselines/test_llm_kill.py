"""A run over an OpenAI-compatible server killed half-way (SIGKILL) and started again: nothing answered is paid
for twice. The command runs in its own process against the real HTTP fake, on the test database."""

from __future__ import annotations

import json

import pytest

from baselines.models import BaselineResponse, BaselineRun
from tasks_data.models import Example
from tests.baselines.fake_openai import TOKEN, FakeOpenAI


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_killed_run_restarted_sends_no_answered_request_again(demo_path, monkeypatch):
    """`run_baselines` in its own process, killed (SIGKILL) half-way through a worker run, then started again:
    every answer that came back before the kill was kept, and no request answered before is sent again."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from django.db import connection

    from tasks_data.importer import import_release
    from tests.baselines.conftest import REPO_ROOT, wait_for

    db = connection.settings_dict
    if db["ENGINE"] != "django.db.backends.postgresql":
        pytest.skip("the command runs in another process: it needs PostgreSQL")
    import_release(demo_path)
    url = f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    env = {**os.environ, "DATABASE_URL": url, "OPENAI_API_KEY": TOKEN, "PYTHONUNBUFFERED": "1"}
    env.pop("CELERY_BROKER_URL", None)
    with FakeOpenAI(latency=0.3) as fake:
        command = [
            sys.executable,
            "manage.py",
            "run_baselines",
            "--tasks",
            "sst2",
            "--methods",
            "worker",
            "--models",
            "tiny-model",
            "--api-base",
            fake.base_url,
            "--shots",
            "10",
            "--splits",
            "1",
            "--concurrency",
            "1",
        ]
        proc = subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            # 10 training answers, then test answers one at a time: kill in the middle of the test step
            wait_for(lambda: BaselineResponse.objects.count() >= 14, 60, "14 kept answers", interval=0.05)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)
        time.sleep(1.0)  # the fake answers the request in flight at the kill (latency 0.3 s) before it is counted
        run = BaselineRun.objects.get()
        assert run.status == "running"  # killed: nothing marked it otherwise
        kept = BaselineResponse.objects.filter(run=run).count()
        answered_before = len(fake.answered)
        assert 14 <= kept < 22 and answered_before in (kept, kept + 1)  # at most the one in flight was lost
        done = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
    run.refresh_from_db()
    n = 10 + Example.objects.filter(task__slug="sst2", role="test").count()
    assert run.status == "completed" and run.attempts == 2 and len(run.predictions) == n - 10
    assert run.usage["resumed"] == kept and run.usage["requests"] == n - kept
    # what the killed attempt sent, as it last recorded it (at most a second before the kill), counted apart
    assert kept - 4 <= run.usage["killed_attempt_requests"] <= answered_before + 1
    bodies = [json.dumps(b, sort_keys=True) for b in fake.answered]
    # only the request in flight at the kill (answered, never stored) may have been sent twice
    assert len(bodies) - len(set(bodies)) == answered_before - kept
    assert BaselineResponse.objects.filter(run=run).count() == n


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_second_command_on_a_running_run_leaves_it_to_the_first(demo_path):
    """Two `run_baselines` processes on one run: the second refuses at once, naming the first one's process; the
    first finishes its attempt, and nothing it did is discarded or sent twice."""
    import os
    import subprocess
    import sys

    from django.db import connection

    from tasks_data.importer import import_release
    from tests.baselines.conftest import REPO_ROOT, wait_for

    db = connection.settings_dict
    if db["ENGINE"] != "django.db.backends.postgresql":
        pytest.skip("the commands run in other processes: it needs PostgreSQL")
    import_release(demo_path)
    url = f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    env = {**os.environ, "DATABASE_URL": url, "OPENAI_API_KEY": TOKEN, "PYTHONUNBUFFERED": "1"}
    env.pop("CELERY_BROKER_URL", None)
    with FakeOpenAI(latency=1.0) as fake:  # 22 answers: the first command runs for 22 s or more
        command = [sys.executable, "manage.py", "run_baselines", "--tasks", "sst2", "--methods", "worker"]
        command += ["--models", "tiny-model", "--api-base", fake.base_url, "--shots", "10", "--splits", "1"]
        command += ["--concurrency", "1"]
        first = subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            wait_for(lambda: BaselineResponse.objects.count() >= 2, 60, "the first command's answers", interval=0.05)
            second = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120)
            out, err = first.communicate(timeout=120)
        finally:
            if first.poll() is None:
                first.kill()
    assert first.returncode == 0, err[-2000:]
    assert second.returncode == 1 and "is running it (attempt 1, since " in second.stderr
    assert f"left to the process already running them (process {first.pid} on " in second.stderr
    run = BaselineRun.objects.get()
    n = 10 + Example.objects.filter(task__slug="sst2", role="test").count()
    assert (run.status, run.attempts, run.runner["pid"], len(run.predictions)) == ("completed", 1, first.pid, n - 10)
    bodies = [json.dumps(b, sort_keys=True) for b in fake.answered]
    assert len(bodies) == len(set(bodies)) == n == BaselineResponse.objects.filter(run=run).count()
