"""One registry of output formats (doccano's export writers): every table and row export goes through it.

``TABLE_WRITERS[fmt].write(table)`` renders a ``results.table.Table`` (html, csv, json, md, tex);
``ROW_WRITERS[fmt].write(rows, columns)`` renders flat rows (per-annotator results, learning
curves, agreement) as csv, json or md. The results page, the downloads, the API and
``export_results`` all call ``render`` / ``render_rows``.

Files people open in a spreadsheet (csv, md) neutralise formula injection (OWASP "CSV
injection"): a text cell that begins with ``= + - @``, a tab or a carriage return gets a leading
``'``. Numbers stay numbers (a negative S1 difference is not a formula) and JSON keeps every value
raw. The table's figures are written by ``format_cell``/``format_gap`` and are safe by
construction; its labels (model names, chosen by whoever ran the baselines) are neutralised.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal

import pandas as pd
from django.template.loader import render_to_string

from tasks_data.stats import STD_DDOF

from .table import CI_TARGETS, FLAGS, GAP_INTERVALS, MISSING, NO_HUMAN_COHORT, Table

SHOTS_LABEL = "#Shots"
METHOD_LABEL = "Method"
CI_LABEL = "95% CI"
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


class ExportError(ValueError):
    """An export cannot be made as asked (unknown format, unknown kind...)."""


def neutralise(value):
    """A spreadsheet-safe cell: text that a spreadsheet would run as a formula gets a leading quote."""
    if not isinstance(value, str) or not value.startswith(FORMULA_START):
        return value
    if value == MISSING or _NUMBER.fullmatch(value):
        return value
    return "'" + value


def json_value(value):
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, float) and math.isnan(value):
        return None
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


# ---------------------------------------------------------------- the table


N_SUFFIX = " n"
CUT_OFF_LABEL = "cut off by time"
N_NOTE = "n: annotators (human rows), splits (model rows), paired test items (gap rows)."


def table_frame(
    table: Table, *, safe: bool = False, n: str | None = None, interval_columns: bool = False
) -> pd.DataFrame:
    """The table as a DataFrame of strings: index ``#Shots``, or (``Method``, ``#Shots``) with other rows.

    Cells read "mean ± std [low, high]" (the 95% interval for this test set beside them). ``n`` (every
    file carries the n of each cell): ``"columns"`` adds an integer ``"<task> n"`` column after each
    task's (CSV: a reader gets the n as numbers), ``"inline"`` writes it into the cell
    ("80.0 ± 2.0 [76.1, 83.9] (n=3)", Markdown and LaTeX). With ``interval_columns`` (CSV) cells
    read "mean ± std" and the intervals follow as numeric columns, each named by its target:
    "<task> 95% CI (this test set) low" / "... high", "<task> 95% CI (the task's items) low" / "... high".
    """
    label = neutralise if safe else (lambda v: v)

    def text(cell) -> str:
        shown = cell.text if interval_columns else cell.full_text
        return f"{shown} (n={cell.n})" if n == "inline" and cell.n is not None else shown

    if n == "columns":
        data = [[v for c in row.cells for v in (text(c), c.n)] for row in table.rows]
        columns = [label(x) for c in table.columns for x in (c, c + N_SUFFIX)]
        n_columns = columns[1::2]
    else:
        data = [[text(c) for c in row.cells] for row in table.rows]
        columns = [label(c) for c in table.columns]
        n_columns = []
    if interval_columns and table.has_intervals:
        for i, name in enumerate(table.columns):
            for attribute, target in CI_TARGETS:
                columns += [label(f"{name} {CI_LABEL} ({target}) low"), label(f"{name} {CI_LABEL} ({target}) high")]
                for row, values in zip(table.rows, data, strict=True):
                    ci = getattr(row.cells[i], attribute)
                    values += [round(ci[0], 2), round(ci[1], 2)] if ci else [None, None]
    cut_columns = []
    if n == "columns" and table.cut_off is not None:
        # Per task, its cohorts' workers cut off by a part's time limit (human rows; integers, as the n).
        for i, name in enumerate(table.columns):
            cut_columns.append(label(f"{name} {CUT_OFF_LABEL}"))
            for row, values in zip(table.rows, data, strict=True):
                values.append(row.cells[i].cut_off if row.kind == "human" else None)
        columns += cut_columns
    if table.has_models:
        index = pd.MultiIndex.from_tuples(
            [(label(r.method), str(r.shots)) for r in table.rows], names=[METHOD_LABEL, SHOTS_LABEL]
        )
    else:
        index = pd.Index([str(r.shots) for r in table.rows], name=SHOTS_LABEL)
    frame = pd.DataFrame(data, index=index, columns=columns)
    for name in (*n_columns, *cut_columns):
        frame[name] = frame[name].astype("Int64")  # integers; a cell without an n stays empty
    frame.columns.name = None
    return frame


def markdown(frame: pd.DataFrame, caption: str | None = None) -> str:
    """A GitHub-flavoured Markdown table (written here: pandas' to_markdown needs tabulate)."""

    def esc(value) -> str:
        text = "" if value is None else str(value)
        return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")

    index_names = [n or "" for n in frame.index.names]
    header = [*index_names, *[str(c) for c in frame.columns]]
    lines = [
        "| " + " | ".join(esc(h) for h in header) + " |",
        "|" + "|".join(["---"] * len(index_names) + ["---:"] * len(frame.columns)) + "|",
    ]
    for key, row in zip(frame.index, frame.itertuples(index=False), strict=True):
        keys = key if isinstance(key, tuple) else (key,)
        lines.append("| " + " | ".join(esc(v) for v in [*keys, *row]) + " |")
    text = "\n".join(lines) + "\n"
    if caption:
        text += f"\n{caption}\n"
    return text


_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}
_LATEX_RE = re.compile("|".join(re.escape(k) for k in _LATEX_SPECIAL))


def latex_escape(text: str) -> str:
    return _LATEX_RE.sub(lambda m: _LATEX_SPECIAL[m.group()], str(text))


def _caption(table: Table) -> str:
    return f"{table.caption} {N_NOTE}"


def _tex(table: Table) -> str:
    frame = table_frame(table, n="inline")
    tex = frame.map(lambda v: latex_escape(v).replace("±", r"$\pm$"))
    tex.columns = [latex_escape(c) for c in tex.columns]
    tex.index = tex.index.map(lambda k: tuple(latex_escape(x) for x in k) if isinstance(k, tuple) else latex_escape(k))
    tex.index.names = [latex_escape(n) if n else n for n in frame.index.names]
    caption = ("Human performance on the test set: " + latex_escape(_caption(table))).replace("±", r"$\pm$")
    return tex.to_latex(
        escape=False,
        caption=caption,
        label="tab:human-performance",
        column_format="l" * tex.index.nlevels + "c" * len(tex.columns),
    )


def _json(table: Table) -> str:
    payload = {
        "metric": "S1",
        "unit": "percent",
        "std_ddof": STD_DDOF,
        "note": table.note,
        "n": N_NOTE,
        "mrc_gold": table.mrc_gold,
        "cells": [{k: json_value(c.get(k)) for k in ("task", "shots", "mean", "std", "n")} for c in table.cells],
    }
    if table.mrc_gold_note:
        payload["mrc_gold_note"] = table.mrc_gold_note
    # Extras of results.cells.table_cells, beside the cells (whose keys stay as they are).
    if any("ci_low" in c for c in table.cells):
        payload["interval_targets"] = table.targets
        payload["interval_flag_meanings"] = FLAGS
        payload["interval_flags"] = table.flagged
        payload["intervals"] = [
            {
                "task": c["task"],
                "shots": c["shots"],
                "confidence": 0.95,
                "target": target,
                "low": json_value(c.get(f"{key}_low")),
                "high": json_value(c.get(f"{key}_high")),
            }
            for c in table.cells
            for key, target in CI_TARGETS
        ]
    if any("majority" in c for c in table.cells):
        payload["majority"] = [
            {"task": c["task"], "shots": c["shots"], "s1": json_value(c.get("majority")), "n": c.get("n")}
            for c in table.cells
        ]
    if table.cut_off is not None:
        payload["cut_off_by_time"] = table.cut_off
    if table.aggregates:
        payload["aggregates"] = [{k: json_value(v) for k, v in a.items()} for a in table.aggregates]
    if table.model_rows:
        payload["gap_intervals"] = GAP_INTERVALS
        payload["model_rows"] = [{k: json_value(v) for k, v in row.items()} for row in table.model_rows]
    if table.unpaired_models:  # model rows of a task and shots the study has no human cell of
        payload["model_rows_" + NO_HUMAN_COHORT.replace(" ", "_")] = [
            {k: json_value(v) for k, v in row.items()} for row in table.unpaired_models
        ]
    return json.dumps(payload, indent=2, ensure_ascii=False) + "\n"


def _html(table: Table) -> str:
    return render_to_string("results/_table.html", {"table": table})


@dataclass(frozen=True)
class Writer:
    fmt: str
    label: str
    content_type: str
    write: Callable
    download: bool = True  # offered as a file (html is the page's own rendering)


TABLE_WRITERS: dict[str, Writer] = {
    w.fmt: w
    for w in (
        Writer("html", "HTML", "text/html; charset=utf-8", _html, download=False),
        # Plain CSV: the header row first (a "# note" line above it broke pandas and Excel); the notes are
        # in the JSON (note, n, mrc_gold_note), each task's n and 95% interval are columns of their own.
        Writer(
            "csv",
            "CSV",
            "text/csv; charset=utf-8",
            lambda t: table_frame(t, safe=True, n="columns", interval_columns=True).to_csv(),
        ),
        Writer("json", "JSON", "application/json", _json),
        Writer(
            "md",
            "Markdown",
            "text/markdown; charset=utf-8",
            lambda t: markdown(table_frame(t, safe=True, n="inline"), caption=_caption(t)),
        ),
        Writer("tex", "LaTeX", "application/x-tex; charset=utf-8", _tex),
    )
}
TABLE_FORMATS = tuple(fmt for fmt, w in TABLE_WRITERS.items() if w.download)  # csv, json, md, tex


def check_table_format(fmt: str) -> str:
    if fmt not in TABLE_WRITERS:
        raise ExportError(f"unknown format {fmt!r}: use one of {', '.join(TABLE_FORMATS)}")
    return fmt


def render(table: Table, fmt: str) -> str:
    return TABLE_WRITERS[check_table_format(fmt)].write(table)


# ---------------------------------------------------------------- flat rows


def _rows_frame(rows: Sequence[Mapping], columns: Sequence[str] | None) -> pd.DataFrame:
    return pd.DataFrame(
        [{k: neutralise(v) for k, v in row.items()} for row in rows], columns=list(columns) if columns else None
    )


def _rows_md(rows, columns) -> str:
    frame = _rows_frame(rows, columns)
    return markdown(frame.set_index(frame.columns[0]) if len(frame.columns) else frame)


ROW_WRITERS: dict[str, Writer] = {
    w.fmt: w
    for w in (
        Writer(
            "csv",
            "CSV",
            "text/csv; charset=utf-8",
            lambda rows, columns: _rows_frame(rows, columns).to_csv(index=False),
        ),
        Writer(
            "json",
            "JSON",
            "application/json",
            lambda rows, columns: json.dumps({"rows": rows, "count": len(rows)}, indent=2, ensure_ascii=False) + "\n",
        ),
        Writer("md", "Markdown", "text/markdown; charset=utf-8", _rows_md),
    )
}
ROW_FORMATS = tuple(ROW_WRITERS)

CONTENT_TYPES = {
    **{f: w.content_type for f, w in TABLE_WRITERS.items()},
    "jsonl": "application/jsonl; charset=utf-8",
    "zip": "application/zip",
}


def check_row_format(fmt: str) -> str:
    if fmt not in ROW_WRITERS:
        raise ExportError(f"unknown format {fmt!r}: use one of {', '.join(ROW_FORMATS)}")
    return fmt


def render_rows(
    rows: Sequence[Mapping], fmt: str, *, columns: Sequence[str] | None = None, meta: Mapping | None = None
) -> str:
    """Flat rows as csv, json (raw values) or md; lists and dicts are kept in JSON only, as is ``meta`` (keys
    beside ``rows`` and ``count``: what the rows' figures mean, figures over the rows)."""
    writer = ROW_WRITERS[check_row_format(fmt)]
    rows = [
        {k: json_value(v) for k, v in row.items() if not isinstance(v, (list, dict)) or fmt == "json"} for row in rows
    ]
    if fmt == "json" and meta:
        return json.dumps({"rows": rows, "count": len(rows), **meta}, indent=2, ensure_ascii=False) + "\n"
    return writer.write(rows, columns)
