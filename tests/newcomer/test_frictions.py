"""What a newcomer meets past the first command: a busy port refused before any set-up, join links on the address
served, a missing production setting in one line, the way from the demo to real data, a clean `git status` after the
README's commands, and a wheel that holds what the platform serves."""

from __future__ import annotations

import io
import os
import shutil
import socket
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from tasks_data.importer import import_release
from tasks_data.management.commands.import_clues import DEMO_SOURCE
from tests.annotation.factories import cohort, complete, make_study, trim_test_set
from tests.tasks_data import synthetic

REPO = Path(__file__).resolve().parents[2]


def clean_env(**extra: str) -> dict:
    drop = ("DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL", "REDIS_URL", "DEBUG", "SECRET_KEY", "ALLOWED_HOSTS")
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith(("MAKE", "MFLAGS"))}
    env.update(extra)
    return env


def test_make_run_on_a_busy_port_fails_at_once_in_one_line_before_any_set_up(tmp_path):
    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        began = time.monotonic()
        result = subprocess.run(
            ["make", "run", f"PORT={port}", f"VENV={tmp_path / 'venv'}"],
            cwd=REPO,
            env=clean_env(),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert time.monotonic() - began < 10
    assert result.returncode != 0 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and f"127.0.0.1:{port} is busy" in lines[0] and "PORT=8001 make run" in lines[0], lines
    assert not (tmp_path / "venv").exists()  # nothing was set up


@pytest.mark.parametrize(
    "environment, missing",
    [({"DEBUG": "0"}, "SECRET_KEY"), ({"DEBUG": "0", "SECRET_KEY": "s" * 50}, "ALLOWED_HOSTS")],
    ids=["no SECRET_KEY", "no ALLOWED_HOSTS"],
)
def test_a_missing_production_setting_is_one_line_not_a_traceback(environment, missing):
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=REPO,
        env=clean_env(**environment),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert result.stderr == f"manage.py: {missing} must be set in the environment when DEBUG=0\n", result.stderr


def test_the_site_address_follows_site_url_else_the_port_served():
    probe = "from clues_platform import settings; print(settings.SITE_URL)"

    def site_url(**environment):
        return subprocess.run(
            [sys.executable, "-c", probe],
            cwd=REPO,
            env=clean_env(DJANGO_SETTINGS_MODULE="clues_platform.settings", **environment),
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout.strip()

    assert site_url() == "http://127.0.0.1:8000"
    assert site_url(PORT="8123") == "http://127.0.0.1:8123"
    assert site_url(HOST="0.0.0.0", PORT="8123") == "http://127.0.0.1:8123"  # served everywhere, reached locally
    assert site_url(SITE_URL="https://clues.example.org/", PORT="8123") == "https://clues.example.org"


@pytest.mark.django_db
def test_launch_study_prints_the_trial_link_on_the_address_served(demo_data, researcher, settings):
    settings.PROLIFIC_API_TOKEN = ""
    settings.SITE_URL = "http://127.0.0.1:8123"
    out, err = io.StringIO(), io.StringIO()
    call_command("launch_study", "--name", "pilot", "--tasks", "sst2", "--created-by", "rita", stdout=out, stderr=err)
    path = out.getvalue().splitlines()[1].split()[2]
    assert f"open http://127.0.0.1:8123{path}?worker_id=me " in err.getvalue()
    assert ":8000" not in err.getvalue()


@pytest.mark.django_db
def test_real_data_over_a_demo_trial_says_the_exact_command_for_a_fresh_database(demo_path, researcher, tmp_path):
    import_release(demo_path, source=DEMO_SOURCE)
    trim_test_set("sst2", 3)
    complete(cohort(make_study(shots=[0], created_by=researcher), "sst2", 0), "TRIAL1")  # the trial's answers
    release = synthetic.write_release(tmp_path / "real", tag="r")
    with pytest.raises(CommandError) as refused:
        call_command("import_clues", str(release), stdout=io.StringIO(), stderr=io.StringIO())
    message = str(refused.value)
    assert "nothing was imported" in message and "holds studies on the demo data" in message
    from django.conf import settings

    database = settings.DATABASES["default"]
    if database["ENGINE"].endswith("sqlite3"):
        name = Path(database["NAME"])
        assert f"mv {name} {name}.demo && CLUES_DATA={release.resolve()} make run" in message
    else:
        assert f"/{database['NAME']}_clues CLUES_DATA={release.resolve()} make run" in message


def test_what_the_app_writes_is_ignored_by_git():
    written = ["db.sqlite3", "db.sqlite3-wal", "db.sqlite3-shm", "table.csv", "predictions.jsonl", "staticfiles/x.css"]
    result = subprocess.run(
        ["git", "check-ignore", "--no-index", *written], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert result.stdout.split() == written


@pytest.mark.slow
def test_the_wheel_holds_the_templates_static_files_and_demo_data(tmp_path):
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True, timeout=60
    ).stdout.splitlines()
    source = tmp_path / "source"  # a copy of the tracked files: the build's scratch folders stay out of the checkout
    for name in tracked:
        if (REPO / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, source / name)
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path), "."],
        cwd=source,
        env={**clean_env(), "PIP_NO_INPUT": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = tmp_path.glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    served = [n for n in tracked if n.startswith(("templates/", "static/", "tasks_data/demo/CLUES-JSON/"))]
    assert len(served) > 90 and not set(served) - names, sorted(set(served) - names)[:10]
    assert not [n for n in names if n.startswith(("tests/", "benchmarks/"))]

    # Installed, it keeps what it writes in the user's data folder, never beside its code (site-packages).
    site = tmp_path / "site-packages"
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "-q", "--target", str(site), str(wheel)],
        env={**clean_env(), "PIP_NO_INPUT": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    before = {p.relative_to(site) for p in site.rglob("*")}
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    env = clean_env(HOME=str(home), PYTHONPATH=str(site), DJANGO_SETTINGS_MODULE="clues_platform.settings")
    env.pop("CLUES_HOME", None)
    env.pop("XDG_DATA_HOME", None)
    for command in (["migrate", "-v0"], ["ensure_local_researcher"]):
        done = subprocess.run(
            [sys.executable, "-m", "django", *command], cwd=work, env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr[-3000:]
    assert "Researcher login: researcher / " in done.stdout
    data = home / ".local" / "share" / "clues-platform"
    assert (data / "db.sqlite3").is_file() and (data / ".cache" / "researcher-password").is_file()
    import clues_platform

    assert Path(clues_platform.__file__).parent.parent == REPO  # the test's own platform is the checkout's
    written = {p.relative_to(site) for p in site.rglob("*")} - before
    assert not [p for p in written if "__pycache__" not in p.parts], sorted(written)[:10]
    assert not list(work.iterdir())
