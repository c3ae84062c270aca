"""What a contributor expects to find: the licence the README promises, the package metadata, the git hooks running
the tools `make lint` runs (pinned in requirements/dev.txt), and the contributor's guide pointing at real files."""

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]


def test_the_licence_is_mit_and_the_metadata_says_so():
    assert (REPO / "LICENSE").read_text().startswith("MIT License\n")
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    meta = project["project"]
    assert meta["license"] == "MIT" and meta["license-files"] == ["LICENSE"]
    assert meta["requires-python"] == ">=3.11" and meta["authors"] and meta["urls"]
    assert project["build-system"]["build-backend"] == "setuptools.build_meta"
    # The installable dependencies are the runtime set itself, not a second list to keep in step.
    assert project["tool"]["setuptools"]["dynamic"]["dependencies"] == {"file": ["requirements/runtime.txt"]}
    assert "-r " not in (REPO / "requirements" / "runtime.txt").read_text()


def test_the_hooks_run_the_lint_tools_from_the_test_environment():
    config = yaml.safe_load((REPO / ".pre-commit-config.yaml").read_text())
    hooks = {hook["id"]: hook for repo in config["repos"] for hook in repo["hooks"]}
    assert {"ruff", "import-linter", "mypy"} <= set(hooks)
    assert all(repo["repo"] == "local" for repo in config["repos"])  # nothing to download
    makefile = (REPO / "Makefile").read_text()
    dev = (REPO / "requirements" / "dev.txt").read_text()
    for hook in hooks.values():
        tool = hook["entry"].split()[0]
        assert tool.startswith(".venv-test/bin/"), tool
        assert Path(tool).name in makefile or f"-m {Path(tool).name}" in makefile, f"make lint does not run {tool}"
    for pin in ("ruff==", "import-linter==", "mypy==", "django-stubs==", "pre_commit=="):
        assert re.search(rf"^{re.escape(pin)}\S+", dev, re.M), pin
    result = subprocess.run(
        [sys.executable, "-m", "pre_commit", "validate-config", ".pre-commit-config.yaml"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_make_lint_refuses_a_model_change_without_its_migration():
    """`make lint` (and so CI and the hook) runs makemigrations --check, and today's models have their migrations."""
    makefile = (REPO / "Makefile").read_text()
    lint = makefile[makefile.index("\nlint:") :].split("\n\n")[0]
    assert "manage.py makemigrations --check --dry-run" in lint
    result = subprocess.run(
        [sys.executable, "manage.py", "makemigrations", "--check", "--dry-run"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "No changes detected" in result.stdout


def test_the_type_checker_checks_real_packages():
    mypy = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["mypy"]
    assert mypy["files"] and all((REPO / f).exists() for f in mypy["files"])
    assert "mypy_django_plugin.main" in mypy["plugins"]


def test_the_architecture_page_points_at_real_files():
    text = (REPO / "docs" / "architecture.md").read_text()
    paths = re.findall(r"`((?:[a-z_]+/)+[\w.-]*\.(?:py|md|html|js))", text)
    assert len(paths) > 30
    assert [p for p in paths if not (REPO / p).exists()] == []


def test_the_contributors_guide_points_at_real_files():
    text = (REPO / "CONTRIBUTING.md").read_text()
    for path in re.findall(r"`((?:tests|tasks_data|crowd|docs|annotation|requirements|\.ci)/[\w./-]*)`", text):
        assert (REPO / path.split("::")[0]).exists(), path
    for link in re.findall(r"\]\(([^)#]+)", text):
        assert (REPO / link).exists(), link
    assert (REPO / "CHANGELOG.md").read_text().startswith("# Changelog")
