"""The architecture is executable.

* `lint-imports` checks the contracts in pyproject.toml: the one-way layers (clues_platform > results >
  api | dashboard | worker_pages | recruitment > annotation > crowd | tasks_data > clues_http), baselines
  beside the annotation stack with the model code (fewshot_models) under it, and the crowd providers and
  model code free of Django. Every package of the project is a root package of the contracts.
* No import cycle anywhere in the project, counting imports inside functions: a cycle held together by
  a late import is still a cycle (grimp reads every import statement of every module); nor between packages.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = (
    "clues_platform",
    "clues_http",
    "tasks_data",
    "crowd",
    "annotation",
    "worker_pages",
    "dashboard",
    "api",
    "recruitment",
    "baselines",
    "results",
    "fewshot_models",
)


def test_import_contracts_are_kept():
    lint = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 6 kept, 0 broken." in result.stdout


def test_every_package_of_the_project_is_under_the_contracts_and_the_type_checker():
    """A package left out of root_packages would hide its imports (and the cycles through it) from the contracts;
    benchmarks and tests are not shipped and may import any app."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    packages = {p.parent.name for p in ROOT.glob("*/__init__.py")} - {"benchmarks", "tests"}
    assert packages == set(PACKAGES)
    assert set(config["tool"]["importlinter"]["root_packages"]) == packages
    # ... and of the type checker, which also reads the bodies of functions without annotations.
    assert packages <= set(config["tool"]["mypy"]["files"])
    assert config["tool"]["mypy"]["check_untyped_defs"] is True


def import_cycles(graph) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            module, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                elif child in on_stack:
                    low[module] = min(low[module], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[module])
            if low[module] == index[module]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == module:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return groups


def test_no_import_cycle_anywhere_in_the_project():
    import grimp

    graph = grimp.build_graph(*PACKAGES, include_external_packages=False, cache_dir=None)
    assert import_cycles(graph) == []


def test_no_test_module_imports_from_another_test_module():
    """Shared helpers live in helper modules (tests/<folder>/<helper>.py) or fixtures, never in a test module:
    importing one runs its tests' module code twice and ties two test files together."""
    import ast

    offenders = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else []
            )
            for name in names:
                if name.startswith("tests.") and name.rsplit(".", 1)[-1].startswith("test_"):
                    offenders.append(f"{path.relative_to(ROOT)}: {name}")
    assert offenders == []


def package_graph(graph):
    """The graph of the project's packages: a imports b when any module of a imports any module of b."""
    edges: dict[str, set[str]] = {package: set() for package in PACKAGES}
    for module in graph.modules:
        package = module.split(".")[0]
        for imported in graph.find_modules_directly_imported_by(module):
            if imported.split(".")[0] != package:
                edges[package].add(imported.split(".")[0])
    return edges


class _Packages:
    """The package graph in the shape import_cycles reads."""

    def __init__(self, edges: dict[str, set[str]]):
        self.modules = set(edges)
        self._edges = edges

    def find_modules_directly_imported_by(self, module: str) -> set[str]:
        return self._edges[module]


def test_no_import_cycle_between_packages():
    """The layers hold package by package: no two packages import each other, even through a third."""
    import grimp

    graph = grimp.build_graph(*PACKAGES, include_external_packages=False, cache_dir=None)
    edges = package_graph(graph)
    assert import_cycles(_Packages(edges)) == []
    # The finder sees a package cycle when one exists: worker_pages importing the project package would be one.
    edges["worker_pages"].add("clues_platform")
    assert import_cycles(_Packages(edges)) != []


def test_the_cycle_finder_finds_a_cycle_held_by_an_import_inside_a_function(tmp_path, monkeypatch):
    """The check above could fail: a package whose modules import each other, one of them inside a function."""
    import grimp

    package = tmp_path / "cyclic"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from . import b\n")
    (package / "b.py").write_text("def late():\n    from . import a\n")
    (package / "c.py").write_text("from . import a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    graph = grimp.build_graph("cyclic", include_external_packages=False, cache_dir=None)
    assert import_cycles(graph) == [["cyclic.a", "cyclic.b"]]
