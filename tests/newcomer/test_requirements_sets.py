"""The checker CI runs on each requirements set (.ci/check_requirements_set.py) fails with the missing module's name.

CI builds a real virtual environment per set (``.ci/run``); here the same probe runs, cheaply, in an environment
made of this interpreter's packages restricted to the distributions a requirements file pins (a folder of links
used with ``python -S``, so that every other package is really absent), once with the file as it is and once with
pins taken out: a package the project imports (httpx) and one a pinned package pulls in (h11, for httpcore).
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CHECKER = REPO / ".ci" / "check_requirements_set.py"

pytestmark = pytest.mark.slow


def _checker():
    spec = importlib.util.spec_from_file_location("check_requirements_set", CHECKER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(path: Path) -> set[str]:
    names = set()
    for file in _checker().requirement_files(path):
        for line in file.read_text().splitlines():
            line = line.split("#")[0].strip()
            if line and not line.startswith("-"):
                names.add(canonical(line.split("==")[0]))
    return names


def farm(root: Path, names: set[str]) -> Path:
    """Links to the installed files of exactly these distributions (and pip, which every venv has)."""
    site = root / "site-packages"
    site.mkdir(parents=True)
    wanted = names | {"pip"}
    for dist in metadata.distributions():
        if canonical(dist.metadata["Name"]) not in wanted:
            continue
        base = Path(dist.locate_file(""))
        tops = {Path(str(f)).parts[0] for f in dist.files or () if not str(f).startswith("..")}
        for top in tops:
            if top.endswith(".pth") or top == "__pycache__" or (site / top).exists():
                continue
            if (base / top).exists():
                (site / top).symlink_to(base / top)
    return site


def probe(site: Path, requirements: str) -> subprocess.CompletedProcess:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE")
    }
    env.update(PYTHONPATH=str(site), DATABASE_URL=f"sqlite:///{site.parent / 'probe.sqlite3'}")
    return subprocess.run(
        [sys.executable, "-S", str(CHECKER), "probe", "runtime", "--requirements", requirements],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_runtime_set_alone_loads_every_module(tmp_path):
    result = probe(farm(tmp_path, pins(REPO / "requirements" / "runtime.txt")), "requirements/runtime.txt")
    assert result.returncode == 0, result.stderr
    modules = _checker().project_modules("runtime")
    # Found on disk: the web app, importer, worker and every project command, but not the model code.
    assert {
        "recruitment.client",
        "results.formats",
        "clues_platform.celery",
        "tasks_data.importer",
        "tasks_data.management.commands.import_clues",
        "baselines.tasks",
    } <= set(modules)
    assert not [m for m in modules if m.startswith(("fewshot_models", "tests.", "benchmarks."))]
    assert f"imported {len(modules) + len(_checker().CONFIGURED_MODULES)} modules" in result.stdout


def test_a_missing_pin_fails_with_the_modules_name(tmp_path):
    names = pins(REPO / "requirements" / "runtime.txt") - {"httpx", "h11"}
    site = farm(tmp_path, names)
    result = probe(site, "requirements/runtime.txt (without httpx and h11)")
    assert result.returncode == 1
    assert "requirements/runtime.txt (without httpx and h11) alone does not load the project" in result.stderr
    # The project module that imports it, and the package that pulls it in.
    assert re.search(
        r"in recruitment\.\S+: No module named 'httpx': no package of requirements/runtime.txt", result.stderr
    ), result.stderr
    assert "httpcore 1.0.9 needs h11" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
