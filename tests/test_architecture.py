"""The architecture is executable.

* `lint-imports` checks the contracts in pyproject.toml: the one-way layers (clues_platform > results >
  api | dashboard | worker_pages | recruitment > annotation > crowd | tasks_data > clues_http), baselines
  beside the annotation stack with the model code (fewshot_models) under it, and the crowd providers and
  model code free of Django. Every package of the project is a root package of the contracts.
* No import cycle anywhere in the project, counting imports inside functions: a cycle held together by
  a late import is still a cycle (grimp reads every import statement of every module); nor between packages.
* The project's packages are the folders with an ``__init__.py`` (benchmarks and tests aside): every list that
  names them (Django's INSTALLED_APPS, the contracts, mypy, the wheel) is checked against that one truth, and a
  new package missing from any is named with the list.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The project's packages: what is on disk, the one list (the others are checked against it).
PACKAGES = tuple(
    sorted(p.parent.name for p in ROOT.glob("*/__init__.py") if p.parent.name not in ("benchmarks", "tests"))
)


def test_import_contracts_are_kept():
    lint = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 6 kept, 0 broken." in result.stdout


def package_lists(packages=PACKAGES, django_apps=None) -> dict[str, set[str]]:
    """Every hand-kept list of the project's packages, by where it is: each must name every package (a package with
    an apps.py, a Django app, is in INSTALLED_APPS)."""
    import tomllib

    from django.conf import settings

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts = config["tool"]["importlinter"]["contracts"]
    layered = {
        name.strip() for c in contracts if c["type"] == "layers" for layer in c["layers"] for name in layer.split("|")
    }
    governed = layered | {m for c in contracts for m in c.get("source_modules", [])}
    wheel = {pattern.rstrip("*") for pattern in config["tool"]["setuptools"]["packages"]["find"]["include"]}
    apps = {entry.split(".")[0] for entry in settings.INSTALLED_APPS}
    if django_apps is None:
        django_apps = {p for p in packages if (ROOT / p / "apps.py").is_file()}
    return {
        "pyproject.toml [tool.importlinter] root_packages": set(config["tool"]["importlinter"]["root_packages"]),
        "pyproject.toml [tool.importlinter] contracts (a layer, or a contract's source_modules)": governed,
        "pyproject.toml [tool.mypy] files": set(config["tool"]["mypy"]["files"]),
        "pyproject.toml [tool.setuptools.packages.find] include": wheel,
        "clues_platform/settings.py INSTALLED_APPS (a package with an apps.py)": apps | (set(packages) - django_apps),
    }


def test_every_package_of_the_project_is_in_every_list_that_names_the_packages():
    """A package left out of root_packages would hide its imports (and the cycles through it) from the contracts, out
    of mypy its types, out of the wheel its code, out of INSTALLED_APPS its models; benchmarks and tests are not
    shipped and may import any app. A new package (a crowd platform's app, say) is named here with each list it
    is missing from."""
    import tomllib

    missing = {
        where: sorted(set(PACKAGES) - names) for where, names in package_lists().items() if set(PACKAGES) - names
    }
    assert missing == {}
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert set(config["tool"]["importlinter"]["root_packages"]) == set(PACKAGES)  # nothing that is not a package
    assert config["tool"]["mypy"]["check_untyped_defs"] is True  # mypy reads the bodies of unannotated functions too


def test_a_new_package_missing_from_the_lists_is_named_with_each():
    """The check above could fail: an app on disk (a crowd platform's, say) that no list names yet."""
    lists = package_lists(packages=(*PACKAGES, "sona"), django_apps={"sona"})
    assert {where for where, names in lists.items() if "sona" not in names} == set(lists) and len(lists) == 5


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
