"""Every URL pattern of the project, as a concrete path (for the tests that must cover them all)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.urls import URLPattern, URLResolver, get_resolver


@dataclass(frozen=True)
class Route:
    pattern: str  # as declared, e.g. "api/studies/<int:pk>/close/"
    name: str  # namespaced, e.g. "protocol:study-close" or "admin:index"
    callback: object


def routes() -> list[Route]:
    def walk(patterns, prefix: str, namespace: str):
        for entry in patterns:
            if isinstance(entry, URLResolver):
                ns = f"{namespace}{entry.namespace}:" if entry.namespace else namespace
                yield from walk(entry.url_patterns, prefix + str(entry.pattern), ns)
            elif isinstance(entry, URLPattern):
                yield Route(prefix + str(entry.pattern), f"{namespace}{entry.name or ''}", entry.callback)

    return list(walk(get_resolver().url_patterns, "", ""))


_CONVERTER = re.compile(r"<(?:(\w+):)?(\w+)>")
_GROUP = re.compile(r"\(\?P<(\w+)>[^)]*\)")


def concrete(pattern: str, values: dict[str, str]) -> str:
    """The pattern with every parameter filled from ``values`` (by name; "1" when absent).

    A ``pk`` after ``cohorts/``, ``enrollments/`` or ``runs/`` takes ``cohort_id``, ``enrollment_id`` or ``run_id``.
    """
    if "cohorts/<int:pk>" in pattern and "cohort_id" in values:
        values = {**values, "pk": values["cohort_id"]}
    elif "enrollments/<int:pk>" in pattern and "enrollment_id" in values:
        values = {**values, "pk": values["enrollment_id"]}
    elif "runs/<int:pk>" in pattern and "run_id" in values:
        values = {**values, "pk": values["run_id"]}
    path = _CONVERTER.sub(lambda m: values.get(m.group(2), "1"), pattern)
    path = _GROUP.sub(lambda m: values.get(m.group(1), "1"), path)
    return "/" + path.replace("^", "").replace("$", "").replace("\\", "")
