"""The one table object of the paper's tables (Table 5, with the model rows of Tables 6-7 below it).

``build_table(cells, model_rows)`` lays out the cells of ``results.cells``: category groups over
tasks as columns (registry order), one row per shot condition: human rows, then model rows
("<method> <model>"), then gap rows ("Human − <method> <model>", human minus model with its 95%
paired bootstrap interval). Every writer in ``results.formats`` renders this object.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from annotation.selectors import cohort_key
from tasks_data.registry import TASKS, Category

from .stats import STD_DDOF

HUMAN_LABEL = "Human"
MISSING = "-"
NOTE = (f"S1 (%) on the test set: mean ± sample standard deviation (ddof={STD_DDOF}) of the annotators' "
        "S1 in each cohort (n annotators per cell, completed enrollments only).")


def format_cell(mean: float | None, std: float | None, *, pm: str = "±") -> str:
    """"83.5 ± 0.6" (percent, one decimal); the mean alone when std is undefined (n < 2)."""
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return MISSING
    if std is None or (isinstance(std, float) and math.isnan(std)):
        return f"{mean:.1f}"
    return f"{mean:.1f} {pm} {std:.1f}"


def format_gap(diff: float, low: float | None, high: float | None) -> str:
    """Human minus model, percent points, with its 95% paired bootstrap interval: "+12.3 [8.1, 16.0]"."""
    if low is None or high is None:
        return f"{diff:+.1f}"
    return f"{diff:+.1f} [{low:+.1f}, {high:+.1f}]"


@dataclass(frozen=True)
class Cell:
    text: str
    n: int | None = None


@dataclass(frozen=True)
class Row:
    kind: str  # "human", "model" or "gap"
    method: str  # HUMAN_LABEL, "<method> <model>" or "Human − <method> <model>"
    shots: int
    cells: tuple[Cell, ...]


@dataclass
class Table:
    tasks: list[str]  # slugs, registry order
    rows: list[Row]
    cells: list[dict] = field(default_factory=list)  # the human cells (results.cells.human_cells)
    model_rows: list[dict] = field(default_factory=list)
    note: str = NOTE

    @property
    def columns(self) -> list[str]:
        return [TASKS[s].name if s in TASKS else s for s in self.tasks]

    @property
    def groups(self) -> list[dict]:
        """Category headers over the task columns: [{"name", "span"}]."""
        groups = []
        for category in Category:
            span = sum(1 for s in self.tasks if s in TASKS and TASKS[s].category is category)
            if span:
                groups.append({"name": category.value.title(), "span": span})
        return groups

    @property
    def has_models(self) -> bool:
        return any(r.kind != "human" for r in self.rows)

    @property
    def human_rows(self) -> list[Row]:
        return [r for r in self.rows if r.kind == "human"]


def _label(row: Mapping) -> str:
    return f"{row['method']} {row['model']}".strip()


def build_table(cells: Sequence[Mapping], model_rows: Iterable[Mapping] = ()) -> Table:
    """The table of ``cells`` (human), with ``model_rows`` (and their gaps) below; model rows of tasks
    the cells lack are left out when there are cells."""
    cells, model_rows = [dict(c) for c in cells], [dict(m) for m in model_rows]
    if cells:
        model_rows = [m for m in model_rows if m["task"] in {c["task"] for c in cells}]
    tasks = sorted({c["task"] for c in cells} | {m["task"] for m in model_rows}, key=lambda s: cohort_key(s, 0))
    human: dict[int, dict[str, Cell]] = {}
    for c in sorted(cells, key=lambda c: cohort_key(c["task"], c["shots"])):
        human.setdefault(c["shots"], {})[c["task"]] = Cell(format_cell(c["mean"], c["std"]), c.get("n"))
    rows = [Row("human", HUMAN_LABEL, k, tuple(human[k].get(s, Cell(MISSING, 0)) for s in tasks))
            for k in sorted(human, key=lambda k: cohort_key("", k))]
    models: dict[tuple[str, int], dict[str, Cell]] = {}
    gaps: dict[tuple[str, int], dict[str, Cell]] = {}
    for m in model_rows:
        key = (_label(m), int(m["shots"]))
        models.setdefault(key, {})[m["task"]] = Cell(format_cell(m.get("mean"), m.get("std")), m.get("n"))
        if m.get("diff") is not None:
            gaps.setdefault((f"{HUMAN_LABEL} − {key[0]}", key[1]), {})[m["task"]] = Cell(
                format_gap(m["diff"], m.get("ci_low"), m.get("ci_high")), m.get("items"))
    for kind, group in (("model", models), ("gap", gaps)):
        for (label, k), by_task in sorted(group.items(), key=lambda kv: (kv[0][0], cohort_key("", kv[0][1]))):
            rows.append(Row(kind, label, k, tuple(by_task.get(s, Cell(MISSING)) for s in tasks)))
    return Table(tasks=tasks, rows=rows, cells=cells, model_rows=model_rows)
