"""The Makefile: `make help` says what it does (no unexpanded make variables), `make run` installs only the
runtime set, each set is installed again only when its requirements file changes (make -n: nothing runs), and
`make test` has its own environment."""

import os
import re
import subprocess
import time

from tests.newcomer.servers import REPO


def make(*args, **env):
    environ = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "PORT", "HOST")}
    environ.update(env)
    result = subprocess.run(["make", *args], cwd=REPO, env=environ, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_make_help_shows_the_real_address():
    text = make("help")
    assert "$(" not in text and "127.0.0.1:8000" in text
    assert "make manage ARGS=" in text and "make baselines" in text
    assert "127.0.0.1:8123" in make("help", PORT="8123")


def pip_lines(text: str) -> list[str]:
    return [line.split("pip install ", 1)[1] for line in text.splitlines() if "pip install " in line]


def test_each_set_installs_only_when_its_file_changed(tmp_path):
    stamps = str(tmp_path)
    assert pip_lines(make("-n", "run", STAMP_DIR=stamps)) == ["-r requirements/runtime.txt"]
    assert pip_lines(make("-n", "baselines", STAMP_DIR=stamps)) == ["-r requirements/baselines.txt"]
    assert pip_lines(make("-n", "test", STAMP_DIR=stamps)) == ["-r requirements.txt"]

    later = time.time() + 5  # the stamps are newer than every requirements file: nothing to install
    for name in (".stamp-runtime", ".stamp-baselines", ".stamp-dev"):
        (tmp_path / name).touch()
        os.utime(tmp_path / name, (later, later))
    for target in ("run", "baselines", "test", "lint"):
        assert pip_lines(make("-n", target, STAMP_DIR=stamps)) == []

    # A runtime change reinstalls the runtime set for `make run`, and everything for `make test`.
    os.utime(tmp_path / ".stamp-runtime", (0, 0))
    assert pip_lines(make("-n", "run", STAMP_DIR=stamps)) == ["-r requirements/runtime.txt"]
    os.utime(tmp_path / ".stamp-dev", (0, 0))
    assert pip_lines(make("-n", "test", STAMP_DIR=stamps)) == ["-r requirements.txt"]


def test_make_test_leaves_the_servers_venv_alone(tmp_path):
    """`make test`, `make lint` and `make bench` install into and run from .venv-test: a `make run` server on .venv
    is not reloaded by an install under its feet."""
    for target in ("test", "lint", "bench"):
        commands = make("-n", target, STAMP_DIR=str(tmp_path)).splitlines()
        assert any(".venv-test/bin/" in line for line in commands), commands
        assert not [line for line in commands if re.search(r"(^|[\s/])\.venv/", line)], commands
    assert ".venv/bin/python -m pip install -r requirements/runtime.txt" in make("-n", "run", STAMP_DIR=str(tmp_path))
