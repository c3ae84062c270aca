"""Project-level guarantees: production settings pass `check --deploy`; nothing shadows `platform`."""

import os
import secrets
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


# Variables that change what `check --deploy` reports: the test sets them itself or not at all
# (e.g. browser tests set DJANGO_ALLOW_ASYNC_UNSAFE in this process; production never has it).
SETTINGS_ENV = (
    "DEBUG",
    "SECRET_KEY",
    "ALLOWED_HOSTS",
    "CSRF_TRUSTED_ORIGINS",
    "SECURE_SSL_REDIRECT",
    "SECURE_COOKIES",
    "SECURE_HSTS_SECONDS",
    "SILENCED_SYSTEM_CHECKS",
    "DJANGO_ALLOW_ASYNC_UNSAFE",
)


def run_manage(*args, **env):
    environ = {k: v for k, v in os.environ.items() if k not in SETTINGS_ENV}
    environ.update(env)
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=REPO_ROOT, env=environ, capture_output=True, text=True, timeout=120
    )


def test_check_deploy_passes_in_production():
    result = run_manage(
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        DEBUG="0",
        SECRET_KEY=secrets.token_urlsafe(50),
        ALLOWED_HOSTS="clues.example.org",
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "System check identified no issues (0 silenced)." in output
    assert "WARNING" not in output


@pytest.mark.parametrize(
    "env,message",
    [
        ({"ALLOWED_HOSTS": "clues.example.org"}, "SECRET_KEY must be set in the environment when DEBUG=0"),
        (
            {"SECRET_KEY": "k" * 10 + secrets.token_urlsafe(50)},
            "ALLOWED_HOSTS must be set in the environment when DEBUG=0",
        ),
    ],
)
def test_production_refuses_missing_settings(env, message):
    result = run_manage("check", DEBUG="0", **env)
    assert result.returncode != 0
    assert message in result.stderr


def test_debug_must_be_a_boolean():
    result = run_manage("check", DEBUG="maybe")
    assert result.returncode != 0
    assert "DEBUG='maybe' is not a boolean" in result.stderr


def test_platform_is_the_standard_library():
    """The project package is clues_platform: a `platform` package would shadow the stdlib module."""
    import platform

    assert Path(platform.__file__).parent == Path(sysconfig.get_paths()["stdlib"])
    assert not (REPO_ROOT / "platform").exists()
    assert not (REPO_ROOT / "platform.py").exists()
    # From the repository root, where `python manage.py` runs (its folder comes first on sys.path):
    found = subprocess.run(
        [sys.executable, "-c", "import platform; print(platform.__file__)"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert Path(found).parent == Path(sysconfig.get_paths()["stdlib"])
