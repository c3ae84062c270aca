"""`make bench BENCH=aggregate_study` on the embedded default: it ran one multi-statement ANALYZE, which SQLite's
driver refuses ("You can only execute one statement at a time")."""

import subprocess

import pytest

from tests.newcomer.servers import PYTHON, REPO, manage, sqlite_env

pytestmark = pytest.mark.slow


def test_aggregate_study_benchmark_runs_on_sqlite_and_leaves_it_as_it_was(tmp_path):
    env = sqlite_env(tmp_path / "db.sqlite3", DJANGO_SETTINGS_MODULE="clues_platform.settings")
    script = [
        PYTHON,
        "benchmarks/aggregate_study.py",
        "--tasks",
        "sst2",
        "--shots",
        "0",
        "10",
        "--data",
        str(REPO / "tasks_data" / "demo" / "CLUES-JSON"),
        "--repeats",  # what is checked is that it runs on SQLite and leaves it as it was, not the timing
        "1",
        "--cold-runs",
        "1",
    ]

    unmigrated = subprocess.run(script, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert unmigrated.returncode == 2
    assert "is not migrated: run `make run` once, or `make manage ARGS=migrate`" in unmigrated.stderr

    manage(env, "migrate", "--noinput", "-v0")
    result = subprocess.run(script, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "database: sqlite" in result.stdout
    assert "human_cells" in result.stdout and "deleted what it made: the database is as it was" in result.stdout
    counts = manage(
        env,
        "shell",
        "-c",
        "from django.contrib.auth.models import User; from tasks_data.models import Task;"
        "from annotation.models import Answer, Study, Worker; from baselines.models import BaselineRun;"
        "from results.models import StoredScores; print(*(m.objects.count() for m in"
        " (Task, Study, Worker, Answer, BaselineRun, StoredScores, User)))",
    )
    assert counts.strip().splitlines()[-1].split() == ["0"] * 7
