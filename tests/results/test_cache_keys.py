"""The results' cache never answers for another object: a study gone and another created with the same row ids
(SQLite hands them out again once the rows' transaction is rolled back, as between tests) shows its own
numbers, with the cache kept between the two; and importing the URL configuration does not import scipy (it
is imported where a statistic is computed), while the WSGI application imports it as it starts (no first request
pays for it)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from django.db import connection, transaction
from django.test import Client

from annotation.models import Enrollment
from tests.annotation.factories import cohort, complete, make_study, trim_test_set

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clues")]


def _study(researcher, wrong: dict[str, set[int]]):
    study = make_study(tasks=["sst2"], shots=[10], created_by=researcher, filter_floor=None, filter_fraction=None)
    ten = cohort(study, "sst2", 10)
    for name, items in wrong.items():
        complete(ten, name, wrong_test=items)
    return study


def _ids(study) -> list:
    enrollments = Enrollment.objects.filter(cohort__study=study).order_by("pk")
    return [study.pk, *study.cohorts.values_list("pk", flat=True), *enrollments.values_list("pk", flat=True)]


def test_a_study_recreated_with_the_same_ids_shows_its_own_numbers(researcher):
    trim_test_set("sst2", 4)
    client = Client()
    client.force_login(researcher)
    # The same number of answers per annotator, the same S1 sums (one wrong each), different answers.
    with transaction.atomic():
        first = _study(researcher, {"A": {0}, "B": {1}, "C": {2}})
        ids = _ids(first)
        assert "75.0 ± 0.0" in client.get(f"/dashboard/studies/{first.pk}/results/").content.decode()
        before = client.get(f"/api/studies/{first.pk}/export/agreement/", {"fmt": "json"}).json()
        transaction.set_rollback(True)  # the study is gone; the cache keeps what was computed for it
    second = _study(researcher, {"A": {0}, "B": {0}, "C": {0}})
    if connection.vendor == "sqlite":  # the case that collided: every row id handed out again
        assert _ids(second) == ids
    html = client.get(f"/dashboard/studies/{second.pk}/results/").content.decode()
    assert "75.0 ± 0.0" in html  # the same mean...
    after = client.get(f"/api/studies/{second.pk}/export/agreement/", {"fmt": "json"}).json()["rows"][0]
    assert after["krippendorff_alpha"] == pytest.approx(1.0) != before["rows"][0]["krippendorff_alpha"]
    majority = client.get(f"/api/studies/{second.pk}/export/table/", {"fmt": "json"}).json()["majority"]
    assert majority[0]["s1"] == pytest.approx(75.0)  # the first study's majority was right everywhere: 100.0


def test_importing_the_url_configuration_does_not_import_scipy():
    code = (
        "import os, sys, django; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'clues_platform.settings');"
        "django.setup(); import clues_platform.urls;"
        "print(sorted(m for m in sys.modules if m == 'scipy' or m.startswith('scipy.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]"


def _model_set_only(module: str) -> bool:
    """The module comes from a distribution that the runtime set does not pin (the model set's: crowd-kit, mirt,
    imported by manage.py fit_results, never by a request)."""
    import re
    from importlib.metadata import packages_distributions
    from pathlib import Path

    def canonical(name: str) -> str:
        return re.sub(r"[-_.]+", "-", name).lower()

    distributions = packages_distributions().get(module.split(".")[0])
    if not distributions:
        return False  # the project's own code, or the standard library
    runtime = Path(__file__).resolve().parents[2].joinpath("requirements", "runtime.txt").read_text()
    pinned = {canonical(line.split("==")[0].strip()) for line in runtime.splitlines() if "==" in line}
    return not any(canonical(d) in pinned for d in distributions)


def _module(name: str) -> str | None:
    """``name`` if it names a module (not a function or class of one)."""
    import importlib.util

    try:
        return name if importlib.util.find_spec(name) is not None else None
    except ModuleNotFoundError:  # its parent is a module, not a package
        return None


def _lazy_imports() -> set[str]:
    """Modules that code in results/ imports inside a function (where a statistic is computed), the model set's
    aside; ``from scipy import special`` names the module scipy.special."""
    import ast
    from pathlib import Path

    found = set()
    for path in Path(__file__).resolve().parents[2].joinpath("results").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for inner in ast.walk(node):
                if isinstance(inner, ast.Import):
                    found.update(alias.name for alias in inner.names)
                elif isinstance(inner, ast.ImportFrom) and inner.level == 0 and inner.module:
                    if _model_set_only(inner.module):
                        continue
                    for alias in inner.names:
                        found.add(_module(f"{inner.module}.{alias.name}") or inner.module)
    return {m for m in found if not _model_set_only(m)}


def test_the_web_server_imports_at_start_what_a_results_page_imports_lazily():
    """No first request after a start pays for an import (scipy.stats was 0.6 s of a cold results page): the WSGI
    application has imported every module that results/ imports inside a function, the model set's aside."""
    lazy = _lazy_imports()
    assert {"scipy.stats", "scipy.special"} <= lazy  # what the gap intervals and the items view need now
    code = f"import sys, clues_platform.wsgi;print(sorted(m for m in {sorted(lazy)!r} if m not in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]", "add them to results.apps.LAZY_IMPORTS"
