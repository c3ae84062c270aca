"""The one table object of the paper's tables (Table 5, with the model rows of Tables 6-7 below it).

``build_table(cells, model_rows)`` lays out the cells of ``results.cells``: category groups over
tasks as columns (registry order), one row per shot condition: human rows (with their 95%
interval when the cells carry one, ``results.cells.table_cells``), majority-vote rows (when the
cells carry ``majority``: S1 of each cohort's majority answer), then model rows
("<method> <model>"), then gap rows ("Human − <method> <model>", human minus model with its 95%
paired bootstrap interval). Every writer in ``results.formats`` renders this object.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from annotation.selectors import cohort_key
from tasks_data.registry import TASKS, Category
from tasks_data.s1 import MRC_GOLD, MRC_GOLD_NOTE
from tasks_data.stats import STD_DDOF

HUMAN_LABEL = "Human"
MAJORITY_LABEL = "Majority vote"
INTERVAL_NOTE = (
    "[low, high]: 95% interval of the cell's mean for this test set (the mean annotator on these items: "
    "t interval over the annotators' S1); the interval for the task's items (annotators and items "
    "random, two-level) is in the CSV and JSON files and on the results page. Majority vote: S1 of the "
    "cohort's majority answer, scored as one more annotator."
)
GAP_NOTE = (
    "Gap rows (human − model): the difference, then two 95% intervals: [over the test items, annotators "
    "fixed: paired bootstrap] and {over annotators and items: two-level}."
)
MISSING = "-"
NOTE = (
    f"S1 (%) on the test set: mean ± sample standard deviation (ddof={STD_DDOF}) of the annotators' "
    "S1 in each cohort (n annotators per cell, completed enrollments only)."
)


def format_cell(mean: float | None, std: float | None, *, pm: str = "±") -> str:
    """ "83.5 ± 0.6" (percent, one decimal); the mean alone when std is undefined (n < 2)."""
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return MISSING
    if std is None or (isinstance(std, float) and math.isnan(std)):
        return f"{mean:.1f}"
    return f"{mean:.1f} {pm} {std:.1f}"


def format_gap(
    diff: float, low: float | None, high: float | None, low2: float | None = None, high2: float | None = None
) -> str:
    """Human minus model, percent points, with its 95% intervals over the items (paired bootstrap) and over
    annotators and items (two-level): "+12.3 [+8.1, +16.0] {+5.2, +19.0}"."""
    text = f"{diff:+.1f}"
    if low is not None and high is not None:
        text += f" [{low:+.1f}, {high:+.1f}]"
    if low2 is not None and high2 is not None:
        text += f" {{{low2:+.1f}, {high2:+.1f}}}"
    return text


def format_interval(low: float | None, high: float | None) -> str:
    """A 95% interval as text beside mean ± std: "[70.1, 89.9]"; empty when there is none."""
    if low is None or high is None:
        return ""
    return f"[{low:.1f}, {high:.1f}]"


@dataclass(frozen=True)
class Cell:
    text: str  # mean ± std, as every format writes it
    n: int | None = None
    ci: tuple[float, float] | None = None  # percent, human cells only: the 95% interval for this test set
    ci_task: tuple[float, float] | None = None  # percent, human cells only: the 95% interval for the task's items

    @property
    def full_text(self) -> str:
        """Mean ± std with the 95% interval beside it (md, tex, html)."""
        return f"{self.text} {format_interval(*self.ci)}" if self.ci else self.text


@dataclass(frozen=True)
class Row:
    kind: str  # "human", "majority", "model", "gap" or "agreement"
    method: str  # HUMAN_LABEL, MAJORITY_LABEL, "<method> <model>" or "Human − <method> <model>"
    shots: int
    cells: tuple[Cell, ...]


@dataclass
class Table:
    tasks: list[str]  # slugs, registry order
    rows: list[Row]
    cells: list[dict] = field(default_factory=list)  # the human cells (results.cells.human_cells)
    model_rows: list[dict] = field(default_factory=list)
    note: str = NOTE
    mrc_gold: str = MRC_GOLD[0]

    @property
    def has_intervals(self) -> bool:
        return any(c.ci for row in self.rows for c in row.cells)

    @property
    def mrc_gold_note(self) -> str | None:
        """The MRC gold rule's note, for a table with an MRC task (SQuADv2, ReCoRD); None otherwise."""
        if any(s in TASKS and TASKS[s].answer_kind.gold_is_alternatives for s in self.tasks):
            return MRC_GOLD_NOTE[self.mrc_gold]
        return None

    @property
    def notes(self) -> list[str]:
        """Every note the table's caption carries: the metric, the interval, the MRC gold rule."""
        notes = [self.note]
        if self.has_intervals or any(r.kind == "majority" for r in self.rows):
            notes.append(INTERVAL_NOTE)
        if any(r.kind == "gap" for r in self.rows):
            notes.append(GAP_NOTE)
        if self.mrc_gold_note:
            notes.append(self.mrc_gold_note)
        return notes

    @property
    def caption(self) -> str:
        return " ".join(self.notes)

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
    return row.get("label") or f"{row['method']} {row['model']}".strip()


def _ci(c: Mapping, prefix: str = "ci") -> tuple[float, float] | None:
    low, high = c.get(f"{prefix}_low"), c.get(f"{prefix}_high")
    return None if low is None or high is None else (low, high)


def build_table(cells: Sequence[Mapping], model_rows: Iterable[Mapping] = (), *, mrc_gold: str = MRC_GOLD[0]) -> Table:
    """The table of ``cells`` (human), with ``model_rows`` (and their gaps) below; model rows of tasks
    the cells lack are left out when there are cells. ``mrc_gold`` names the MRC reading the
    cells were scored with (the caption says it)."""
    cells, model_rows = [dict(c) for c in cells], [dict(m) for m in model_rows]
    if cells:
        model_rows = [m for m in model_rows if m["task"] in {c["task"] for c in cells}]
    tasks = sorted({c["task"] for c in cells} | {m["task"] for m in model_rows}, key=lambda s: cohort_key(s, 0))
    human: dict[int, dict[str, Cell]] = {}
    for c in sorted(cells, key=lambda c: cohort_key(c["task"], c["shots"])):
        human.setdefault(c["shots"], {})[c["task"]] = Cell(
            format_cell(c["mean"], c["std"]), c.get("n"), _ci(c), _ci(c, "ci_task")
        )
    rows = [
        Row("human", HUMAN_LABEL, k, tuple(human[k].get(s, Cell(MISSING, 0)) for s in tasks))
        for k in sorted(human, key=lambda k: cohort_key("", k))
    ]
    majority: dict[int, dict[str, Cell]] = {}
    for c in cells:
        if c.get("majority") is not None:
            majority.setdefault(c["shots"], {})[c["task"]] = Cell(format_cell(c["majority"], None), c.get("n"))
    rows += [
        Row("majority", MAJORITY_LABEL, k, tuple(majority[k].get(s, Cell(MISSING, 0)) for s in tasks))
        for k in sorted(majority, key=lambda k: cohort_key("", k))
    ]
    models: dict[tuple[str, int], dict[str, Cell]] = {}
    gaps: dict[tuple[str, int], dict[str, Cell]] = {}
    agree: dict[tuple[str, int], dict[str, Cell]] = {}
    for m in model_rows:
        key = (_label(m), int(m["shots"]))
        models.setdefault(key, {})[m["task"]] = Cell(format_cell(m.get("mean"), m.get("std")), m.get("n"))
        if m.get("diff") is not None:
            gaps.setdefault((f"{HUMAN_LABEL} − {key[0]}", key[1]), {})[m["task"]] = Cell(
                format_gap(
                    m["diff"], m.get("ci_low"), m.get("ci_high"), m.get("ci_two_level_low"), m.get("ci_two_level_high")
                ),
                m.get("items"),
            )
        if m.get("agreement") is not None:  # share of items where the model gives the human majority's answer
            agree.setdefault((f"{key[0]} = {MAJORITY_LABEL} (% items)", key[1]), {})[m["task"]] = Cell(
                format_cell(m["agreement"], None), m.get("n")
            )
    for kind, group in (("model", models), ("gap", gaps), ("agreement", agree)):
        for (label, k), by_task in sorted(group.items(), key=lambda kv: (kv[0][0], cohort_key("", kv[0][1]))):
            rows.append(Row(kind, label, k, tuple(by_task.get(s, Cell(MISSING)) for s in tasks)))
    return Table(tasks=tasks, rows=rows, cells=cells, model_rows=model_rows, mrc_gold=mrc_gold)
