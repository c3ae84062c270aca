"""The one table object of the paper's tables (Table 5, with the model rows of Tables 6-7 below it).

``build_table(cells, model_rows, aggregates)`` lays out the cells of ``results.cells``: category groups
over tasks as columns (registry order), one row per shot condition: human rows (with their 95%
interval when the cells carry one, ``results.cells.table_cells``), majority-vote rows (when the
cells carry ``majority``: S1 of each cohort's majority answer), aggregated rows (one per method,
``results.fits.aggregate_cells``: "Dawid-Skene (crowd-kit)"), then model rows ("<method> <model>")
beside a human cell of the same task and shots, then gap rows ("Human − <method> <model>", human minus
model with its 95% intervals); model rows without a human cell of their task and shots are listed apart
(``unpaired_models``: "no human cohort"). What each statistic is, its label and note, is defined here
once (``CI_TARGETS``, ``GAP_INTERVALS``, ``FLAGS``); every writer in ``results.formats`` renders this
object, the results page's html included.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from annotation.selectors import cohort_key
from baselines.selectors import demonstrations_text
from tasks_data.registry import Category, find_task, task_name
from tasks_data.s1 import MRC_GOLD, MRC_GOLD_NOTE
from tasks_data.stats import STD_DDOF

from .uncertainty import FLAGS, ONE_RUN, TARGETS, TASK_ITEMS, TEST_SET

HUMAN_LABEL = "Human"
MAJORITY_LABEL = "Majority vote"
GAP_INTERVALS = {
    "ci": "95% interval of the gap on this test set: the annotators and the model's runs (training splits) "
    "random, Welch's t over the annotators' S1 and the runs' S1",
    "ci_two_level": "95% interval of the gap on the task's items: annotators, items and the model's runs random "
    "(crossed random effects; the items' part with its own t quantile)",
}
MATCHED_NOTE = (
    "Like-for-like gap rows (“split s, as the humans”): the humans minus the model's runs on the cohort's own "
    "training split, the split fixed (each human cohort saw one split; the model row averages all of them)."
)
MODEL_BASED_NOTE = (
    "Cells of fewer than 5 annotators list their values: their intervals rest on the normal model alone, "
    "which so few values cannot check."
)
S1_SCALE = (0.0, 100.0)  # S1 in percent: no interval of a mean is shown beyond it
GAP_SCALE = (-100.0, 100.0)  # human minus model S1, percent points
INTERVAL_NOTE = (
    f"[low, high]: 95% interval of the cell's mean for {TEST_SET} ({TARGETS[TEST_SET]}); the interval for "
    f"{TASK_ITEMS} ({TARGETS[TASK_ITEMS]}) is in the CSV and JSON files and on the results page. Intervals are "
    "clipped to the scale they live on (S1: 0 to 100; a gap: -100 to +100): a normal interval of few annotators "
    "can reach past it. Majority vote: S1 of the cohort's majority answer, scored as one more annotator. The "
    "intervals take the population to hold no guessers beyond those a cell's flags show: a cohort of 3-5 from a "
    "population where one in five guesses holds none a third to half of the time, and nothing in its values can "
    "show them (benchmarks/interval_coverage.py)."
)
AGGREGATE_NOTE = (
    "Dawid-Skene (crowd-kit): the cohort's answers aggregated by crowd-kit's Dawid-Skene (manage.py fit_results), "
    "scored as one more annotator; span sets on tokens (a BIO label per word from every annotator, so an unmarked "
    "word counts against a span) and, beside them, on whole answers. “not identifiable”: fewer than 3 of the "
    "cohort's annotators are better than chance, and Dawid-Skene cannot tell whose answers to trust."
)
NOT_IDENTIFIABLE = "not identifiable"
GAP_NOTE = (
    f"Gap rows (human − model): the difference, then two 95% intervals: [{GAP_INTERVALS['ci']}] and "
    f"{{{GAP_INTERVALS['ci_two_level']}}}."
)
CI_TARGETS = (("ci", TEST_SET), ("ci_task", TASK_ITEMS))  # Cell attribute / cell key prefix, its target
FLAG_MARK = "†"
CUT_OFF_NOTE = (
    "Workers cut off by a part's time limit (paid for the time they worked; not in n, no cell counts them), per cohort"
)
NO_HUMAN_COHORT = "no human cohort"
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


def clip(low: float | None, high: float | None, scale: tuple[float, float] = S1_SCALE):
    """An interval cut to its scale (an interval of a few annotators' mean can reach below 0 or above 100)."""
    if low is None or high is None:
        return low, high
    return max(scale[0], min(scale[1], low)), max(scale[0], min(scale[1], high))


def format_gap(
    diff: float, low: float | None, high: float | None, low2: float | None = None, high2: float | None = None
) -> str:
    """Human minus model, percent points, with its 95% intervals over the items (paired bootstrap) and over
    annotators and items (two-level), each clipped to -100..+100: "+12.3 [+8.1, +16.0] {+5.2, +19.0}"."""
    low, high = clip(low, high, GAP_SCALE)
    low2, high2 = clip(low2, high2, GAP_SCALE)
    text = f"{diff:+.1f}"
    if low is not None and high is not None:
        text += f" [{low:+.1f}, {high:+.1f}]"
    if low2 is not None and high2 is not None:
        text += f" {{{low2:+.1f}, {high2:+.1f}}}"
    return text


def format_interval(low: float | None, high: float | None) -> str:
    """A 95% interval of an S1 mean as text beside mean ± std, clipped to 0..100: "[70.1, 89.9]"; empty when
    there is none."""
    if low is None or high is None:
        return ""
    low, high = clip(low, high)
    return f"[{low:.1f}, {high:.1f}]"


@dataclass(frozen=True)
class Cell:
    text: str  # mean ± std, as every format writes it
    n: int | None = None
    ci: tuple[float, float] | None = None  # percent, human cells only: the 95% interval for this test set
    ci_task: tuple[float, float] | None = None  # percent, human cells only: the 95% interval for the task's items
    flags: tuple[str, ...] = ()  # human and gap cells: what makes the intervals doubtful (keys of FLAGS)
    head: str | None = None  # gap cells: the difference alone (``text`` has its intervals too)
    values: tuple[float, ...] = ()  # human cells of fewer than MODEL_BASED_BELOW annotators: their S1 (percent)
    cut_off: int | None = None  # human cells only: the cohort's workers cut off by a part's time limit (not in n)
    notes: tuple[str, ...] = ()  # model cells: what the runs' prompts held and how they were scored (page only)

    @property
    def short(self) -> str:
        """What the results page shows large: the mean, or a gap's difference."""
        return self.head or self.text.split(" ± ")[0]

    @property
    def details(self) -> list[str]:
        """What the results page shows small under ``short``, a line each: ± std, the intervals, n."""
        if self.head:
            parts = self.text[len(self.head) :].replace("] {", "]\n{").split("\n")
        else:
            parts = [f"± {self.text.split(' ± ', 1)[1]}"] if " ± " in self.text else []
            parts += [format_interval(*self.ci) + (" model-based" if self.values else "")] if self.ci else []
            parts += [self.values_text] if self.values else []
        parts = [p.strip() for p in parts if p.strip()]
        parts += [f"n={self.n}"] if self.n is not None and self.text != MISSING else []
        return parts + ([f"{self.cut_off} cut off by time"] if self.cut_off else []) + list(self.notes)

    @property
    def values_text(self) -> str:
        """ "values 82.4, 83.1, 84.0": the annotators' S1 of a small cell, beside its model-based interval."""
        return "values " + ", ".join(f"{v:.1f}" for v in self.values) if self.values else ""

    @property
    def full_text(self) -> str:
        """Mean ± std with the 95% interval beside it (md, tex, html), and a small cell's values."""
        text = f"{self.text} {format_interval(*self.ci)}" if self.ci else self.text
        return f"{text} ({self.values_text})" if self.values else text

    @property
    def flag_texts(self) -> list[str]:
        return [FLAGS[f] for f in self.flags]


@dataclass(frozen=True)
class Row:
    kind: str  # "human", "majority", "aggregate", "model", "gap", "gap_matched" (like for like) or "agreement"
    method: str  # HUMAN_LABEL, MAJORITY_LABEL, "<method> <model>" or "Human − <method> <model>"
    shots: int
    cells: tuple[Cell, ...]


@dataclass
class Table:
    tasks: list[str]  # slugs, registry order
    rows: list[Row]
    cells: list[dict] = field(default_factory=list)  # the human cells (results.cells.human_cells)
    model_rows: list[dict] = field(default_factory=list)  # beside a human cell of their task and shots
    unpaired_models: list[dict] = field(default_factory=list)  # no human cohort of their task and shots
    aggregates: list[dict] = field(default_factory=list)  # results.fits.aggregate_cells
    note: str = NOTE
    mrc_gold: str = MRC_GOLD[0]
    model_note: str = ""  # why the model rows are missing, when they could not be computed
    targets = TARGETS
    gap_intervals = GAP_INTERVALS

    @property
    def flagged(self) -> list[dict]:
        """The human cells whose intervals are doubtful: ``{"task", "shots", "flags": [key], "texts": [text]}``."""
        return [
            {"task": c["task"], "shots": c["shots"], "flags": list(c["flags"]), "texts": [FLAGS[f] for f in c["flags"]]}
            for c in self.cells
            if c.get("flags")
        ]

    @property
    def flag_note(self) -> str | None:
        """The caption's note on flagged cells and gaps: which, and why."""
        found = [*self.flagged, *self.flagged_gaps]
        if not found:
            return None
        # One part per reason, naming its cells.
        cells_by_flag: dict[str, list[str]] = {}
        for f in found:
            name = task_name(f["task"])
            where = f"{name} {f['shots']} shots" + (f" ({f['row']})" if f.get("row") else "")
            for key in f["flags"]:
                cells_by_flag.setdefault(key, []).append(where)
        parts = [f"{', '.join(cells)}: {FLAGS[key]}" for key, cells in cells_by_flag.items()]
        return f"{FLAG_MARK} Intervals in doubt: " + " | ".join(parts) + "."

    @property
    def flagged_gaps(self) -> list[dict]:
        """The gaps flagged for what only a gap has (a model row of one run): ``{"task", "shots", "row", "flags"}``
        (the cohort's own flags are said once, on its human cell)."""
        return [
            {"task": m["task"], "shots": m["shots"], "row": m.get("label", ""), "flags": [ONE_RUN]}
            for m in self.model_rows
            if ONE_RUN in (m.get("gap_flags") or ())
        ]

    @property
    def has_intervals(self) -> bool:
        return any(c.ci for row in self.rows for c in row.cells)

    @property
    def mrc_gold_note(self) -> str | None:
        """The MRC gold rule's note, for a table with an MRC task (SQuADv2, ReCoRD); None otherwise."""
        if any((spec := find_task(s)) and spec.answer_kind.gold_is_alternatives for s in self.tasks):
            return MRC_GOLD_NOTE[self.mrc_gold]
        return None

    @property
    def notes(self) -> list[str]:
        """Every note the table's caption carries: the metric, the interval, the MRC gold rule."""
        notes = [self.note]
        if self.has_intervals or any(r.kind == "majority" for r in self.rows):
            notes.append(INTERVAL_NOTE)
        if self.aggregates:
            notes.append(AGGREGATE_NOTE)
        if any(c.values for row in self.rows for c in row.cells):
            notes.append(MODEL_BASED_NOTE)
        if any(r.kind == "gap" for r in self.rows):
            notes.append(GAP_NOTE)
        if any(r.kind == "gap_matched" for r in self.rows):
            notes.append(MATCHED_NOTE)
        if self.flag_note:
            notes.append(self.flag_note)
        if self.mrc_gold_note:
            notes.append(self.mrc_gold_note)
        if self.cut_off is not None:
            notes.append(self.cut_off_note)
        return notes

    @property
    def cut_off(self) -> list[dict] | None:
        """Per human cell, its cohort's workers cut off by a part's time limit: ``{"task", "shots", "workers"}``;
        None when the cells do not say (``results.cells.human_cells``)."""
        if not self.cells or any("cut_off" not in c for c in self.cells):
            return None
        return [
            {"task": c["task"], "shots": c["shots"], "workers": c["cut_off"]}
            for c in sorted(self.cells, key=lambda c: cohort_key(c["task"], c["shots"]))
        ]

    @property
    def cut_off_note(self) -> str:
        """Who the cells leave out because a part's time limit cut them off, per cohort."""
        cut = [c for c in self.cut_off or () if c["workers"]]
        if not cut:
            return f"{CUT_OFF_NOTE}: none."
        listed = "; ".join(f"{task_name(c['task'])} {c['shots']}-shot: {c['workers']}" for c in cut)
        return f"{CUT_OFF_NOTE}: {listed}."

    @property
    def caption(self) -> str:
        return " ".join(self.notes)

    @property
    def columns(self) -> list[str]:
        return [task_name(s) for s in self.tasks]

    @property
    def groups(self) -> list[dict]:
        """Category headers over the task columns: [{"name", "span"}]."""
        groups = []
        for category in Category:
            span = sum(1 for s in self.tasks if (spec := find_task(s)) and spec.category is category)
            if span:
                groups.append({"name": category.value.title(), "span": span})
        return groups

    @property
    def has_models(self) -> bool:
        """Rows other than the human ones (the files then name each row's method)."""
        return any(r.kind != "human" for r in self.rows)

    @property
    def planner(self) -> list[dict]:
        """The planner's rows as the page shows them, one per human cell: its intervals, the annotators
        planned for the cell's target and their price, and its flags (texts)."""
        out = []
        for c in self.cells:
            planned = c.get("planned")
            if planned is not None:
                planned_text = str(planned)
            elif (c.get("n") or 0) >= 2:
                planned_text = "more than 1000"
            else:
                planned_text = "a pilot of 2 or more annotators first"
            cost = c.get("planned_cost")
            out.append(
                {
                    "task": c["task"],
                    "task_name": task_name(c["task"]),
                    "shots": c["shots"],
                    "n": c.get("n"),
                    "test_set": format_interval(c.get("ci_low"), c.get("ci_high")) or "–",
                    "task_items": format_interval(c.get("ci_task_low"), c.get("ci_task_high")) or "–",
                    "planned": planned_text,
                    "plan_range": _plan_range(c.get("plan_low"), c.get("plan_high")),
                    "minutes": "–" if c.get("expected_minutes") is None else f"{c['expected_minutes']:g}",
                    "cost": None if cost is None else f"{cost} {c.get('currency', '')}".strip(),
                    "fee": c.get("planned_fee") or None,
                    "flags": [FLAGS[f] for f in c.get("flags") or ()],
                }
            )
        return out

    @property
    def blocks(self) -> list[dict]:
        """The table one task at a time, as the results page lays it out (it fits a laptop and a phone): per task
        ``{"task", "name", "category", "shots": [k], "rows": [{"kind", "method", "cells": [Cell | None]}]}``,
        its shots as columns and one row per method (human, majority, models, gaps), only what has a value."""
        out = []
        for j, slug in enumerate(self.tasks):
            present = [r for r in self.rows if r.cells[j].text != MISSING]
            shots = sorted({r.shots for r in present}, key=lambda k: cohort_key("", k))
            methods: dict[tuple[str, str], dict[int, Cell]] = {}
            for r in present:
                methods.setdefault((r.kind, r.method), {})[r.shots] = r.cells[j]
            spec = find_task(slug)
            out.append(
                {
                    "task": slug,
                    "name": spec.name if spec else slug,
                    "category": spec.category.value.title() if spec else "",
                    "shots": shots,
                    "rows": [
                        {"kind": kind, "method": method, "cells": [by_shots.get(k) for k in shots]}
                        for (kind, method), by_shots in methods.items()
                    ],
                }
            )
        return out

    @property
    def human_rows(self) -> list[Row]:
        return [r for r in self.rows if r.kind == "human"]


def _plan_range(low: int | None, high: int | None) -> str:
    """ "22 to 360": the plans that pilots of this size give (10th to 90th percentile); "–" without a pilot."""
    if low is None and high is None:
        return "–"
    return f"{low if low is not None else '>1000'} to {high if high is not None else '>1000'}"


def _label(row: Mapping) -> str:
    return row.get("label") or f"{row['method']} {row['model']}".strip()


def _ci(c: Mapping, prefix: str = "ci") -> tuple[float, float] | None:
    low, high = c.get(f"{prefix}_low"), c.get(f"{prefix}_high")
    return None if low is None or high is None else clip(low, high)


def _held(row: Mapping) -> tuple[str, ...]:
    """A model row's prompts and scoring, as its cell shows them: never the shots alone where fewer were held."""
    held = demonstrations_text(row.get("demonstrations"))
    return tuple(t for t in (held, f"scored by {row['scoring']}" if row.get("scoring") else "") if t)


def build_table(
    cells: Sequence[Mapping],
    model_rows: Iterable[Mapping] = (),
    aggregates: Iterable[Mapping] = (),
    *,
    mrc_gold: str = MRC_GOLD[0],
) -> Table:
    """The table of ``cells`` (human), with ``aggregates`` (aggregated human rows) and ``model_rows`` (and
    their gaps) below. With cells, a model row stands in the table only beside a human cell of the same task
    and shots (``beside_humans`` when ``results.cells.model_rows`` says it, else a cell of the same task and
    shots);
    the others are kept in ``unpaired_models``. ``mrc_gold`` names the MRC reading the cells were scored
    with (the caption says it)."""
    return _build_table(
        [dict(c) for c in cells], [dict(m) for m in model_rows], [dict(a) for a in aggregates], mrc_gold=mrc_gold
    )


def _gap_cell(gap: Mapping, flags: tuple[str, ...]) -> Cell:
    text = format_gap(
        gap["diff"], gap.get("ci_low"), gap.get("ci_high"), gap.get("ci_two_level_low"), gap.get("ci_two_level_high")
    )
    return Cell(text, gap.get("items"), flags=flags, head=f"{gap['diff']:+.1f}")


def _distinct_labels(model_rows: list[dict]) -> list[dict]:
    """The model rows, each cell's label its own: two rows of one task and shots under one label (rows from
    another source than ``results.runs``, whose labels are distinct already) are numbered, never merged."""
    seen: dict[tuple, int] = {}
    out = []
    for m in model_rows:
        key = (m["task"], int(m["shots"]), _label(m))
        seen[key] = seen.get(key, 0) + 1
        out.append(m if seen[key] == 1 else {**m, "label": f"{_label(m)} #{seen[key]}"})
    return out


def _build_table(cells: list[dict], model_rows: list[dict], aggregates: list[dict], *, mrc_gold: str) -> Table:
    """build_table on its own copies of the rows (the table keeps them)."""
    unpaired: list[dict] = []
    if cells:
        with_humans = {(c["task"], c["shots"]) for c in cells if c.get("n")}  # a completed annotator, at least
        model_rows = [m for m in model_rows if m["task"] in {c["task"] for c in cells}]
        unpaired = [m for m in model_rows if not m.get("beside_humans", (m["task"], m["shots"]) in with_humans)]
        model_rows = [m for m in model_rows if m.get("beside_humans", (m["task"], m["shots"]) in with_humans)]
    tasks = sorted({c["task"] for c in cells} | {m["task"] for m in model_rows}, key=lambda s: cohort_key(s, 0))
    human: dict[int, dict[str, Cell]] = {}
    for c in sorted(cells, key=lambda c: cohort_key(c["task"], c["shots"])):
        human.setdefault(c["shots"], {})[c["task"]] = Cell(
            format_cell(c["mean"], c["std"]),
            c.get("n"),
            _ci(c),
            _ci(c, "ci_task"),
            tuple(c.get("flags") or ()),
            values=tuple(c.get("values") or ()),
            cut_off=c.get("cut_off"),
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
    by_method: dict[tuple[str, int], dict[str, Cell]] = {}
    for a in aggregates:
        # An aggregate that cannot be identified says so instead of a number that reads as better than the vote.
        text = format_cell(a["s1"], None) if a.get("identifiable", True) else NOT_IDENTIFIABLE
        by_method.setdefault((a["method"], a["shots"]), {})[a["task"]] = Cell(text, a.get("n"))
    rows += [
        Row("aggregate", method, k, tuple(by_task.get(s, Cell(MISSING, 0)) for s in tasks))
        for (method, k), by_task in sorted(by_method.items(), key=lambda kv: (cohort_key("", kv[0][1]), kv[0][0]))
    ]
    models: dict[tuple[str, int], dict[str, Cell]] = {}
    gaps: dict[tuple[str, int], dict[str, Cell]] = {}
    matched: dict[tuple[str, int], dict[str, Cell]] = {}
    agree: dict[tuple[str, int], dict[str, Cell]] = {}
    for m in _distinct_labels(model_rows):
        key = (_label(m), int(m["shots"]))
        models.setdefault(key, {})[m["task"]] = Cell(
            format_cell(m.get("mean"), m.get("std")), m.get("n"), notes=_held(m)
        )
        if m.get("diff") is not None:
            gaps.setdefault((f"{HUMAN_LABEL} − {key[0]}", key[1]), {})[m["task"]] = _gap_cell(
                m, tuple(f for f in m.get("gap_flags") or () if f in FLAGS)
            )
        same = m.get("matched")
        if same and same.get("diff") is not None:
            label = f"{HUMAN_LABEL} − {key[0]} (split {same['split']}, as the humans)"
            matched.setdefault((label, key[1]), {})[m["task"]] = _gap_cell(
                same, tuple(f for f in m.get("gap_flags") or () if f in FLAGS and f != ONE_RUN)
            )
        if m.get("agreement") is not None:  # share of items where the model gives the human majority's answer
            agree.setdefault((f"{key[0]} = {MAJORITY_LABEL} (% items)", key[1]), {})[m["task"]] = Cell(
                format_cell(m["agreement"], None), m.get("n")
            )
    for kind, group in (("model", models), ("gap", gaps), ("gap_matched", matched), ("agreement", agree)):
        for (label, k), by_task in sorted(group.items(), key=lambda kv: (kv[0][0], cohort_key("", kv[0][1]))):
            rows.append(Row(kind, label, k, tuple(by_task.get(s, Cell(MISSING)) for s in tasks)))
    return Table(
        tasks=tasks,
        rows=rows,
        cells=cells,
        model_rows=model_rows,
        unpaired_models=unpaired,
        aggregates=aggregates,
        mrc_gold=mrc_gold,
    )
