"""Tables and files built from the results selectors (pandas), for the API and ``export_results``.

* ``human_table(study)`` (from ``annotation.selectors``) gives the Table 5 cells;
  ``table_frame(cells, model_rows=())`` lays them out as the paper does (rows 0/10/20/30
  shots, one column per task in registry order, "mean ± std" in percent with one decimal),
  optionally with model rows below; ``render(frame_or_cells, fmt)`` writes it as CSV, JSON,
  Markdown or LaTeX. Every rendering states that std is the sample standard deviation
  (ddof=1) across a cohort's annotators.
* ``render_rows(rows, fmt)`` writes per-annotator rows, learning curves or agreement as CSV,
  JSON or Markdown.
* ``prediction_jsonl`` / ``predictions_zip`` write annotators' test answers in the CLUES
  prediction format, one file per annotator, scorable by ``manage.py score``.
* ``write_atomic`` writes a file so that a failure leaves nothing half-written.
"""

from __future__ import annotations

import io
import json
import math
import os
import re
import tempfile
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from pathlib import Path

import pandas as pd
from django.conf import settings
from django.utils.module_loading import import_string

from tasks_data.registry import TASKS

from . import selectors
from .models import Enrollment, Study
from .selectors import STD_DDOF, cohort_key

TABLE_FORMATS = ("csv", "json", "md", "tex")
ROW_FORMATS = ("csv", "json", "md")
SHOTS_LABEL = "#Shots"
METHOD_LABEL = "Method"
HUMAN_LABEL = "Human"
MISSING = "-"
NOTE = (f"S1 (%) on the test set: mean ± sample standard deviation (ddof={STD_DDOF}) of the annotators' "
        "S1 in each cohort (n annotators per cell, completed enrollments only).")
CONTENT_TYPES = {
    "csv": "text/csv; charset=utf-8",
    "json": "application/json",
    "md": "text/markdown; charset=utf-8",
    "tex": "application/x-tex; charset=utf-8",
    "jsonl": "application/jsonl; charset=utf-8",
    "zip": "application/zip",
}


class ExportError(ValueError):
    """An export cannot be made as asked (unknown format, missing provider...)."""


# ---------------------------------------------------------------- the human-performance table


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


def _row_label(row: Mapping) -> str:
    return f"{row['method']} {row['model']}".strip()


def table_frame(cells: Sequence[Mapping], model_rows: Iterable[Mapping] = ()) -> pd.DataFrame:
    """Table 5 as a DataFrame of "mean ± std" strings.

    Rows: the shot conditions present (index ``#Shots``); with ``model_rows``
    (``{"method", "model", "task", "shots", "mean", "std", "n", ...}``, mean and std in
    percent) the index becomes (``Method``, ``#Shots``), human rows labelled ``Human`` and
    model rows ``"<method> <model>"``; model rows of tasks the cells lack are left out. Model rows
    that carry the human-minus-model gap (``diff``, ``ci_low``, ``ci_high``: see
    baselines.results) add rows ``"Human − <method> <model>"`` of "+diff [low, high]". Columns: task
    display names in registry order. The
    cells and model rows travel along in ``frame.attrs`` for ``render(frame, "json")``.
    """
    cells, model_rows = list(cells), list(model_rows)
    if cells:  # model rows beside a study's table: only the study's tasks
        model_rows = [m for m in model_rows if m["task"] in {c["task"] for c in cells}]
    slugs = sorted({c["task"] for c in cells} | {m["task"] for m in model_rows}, key=lambda s: cohort_key(s, 0))
    columns = [TASKS[s].name if s in TASKS else s for s in slugs]
    human: dict[int, dict[str, str]] = {}
    for cell in sorted(cells, key=lambda c: cohort_key(c["task"], c["shots"])):
        human.setdefault(cell["shots"], {})[cell["task"]] = format_cell(cell["mean"], cell["std"])
    shots = sorted(human, key=lambda k: cohort_key("", k))
    data = [[human[k].get(s, MISSING) for s in slugs] for k in shots]
    if not model_rows:
        frame = pd.DataFrame(data, index=pd.Index([str(k) for k in shots], name=SHOTS_LABEL), columns=columns)
    else:
        index = [(HUMAN_LABEL, str(k)) for k in shots]
        models: dict[tuple[str, int], dict[str, str]] = {}
        for row in model_rows:
            models.setdefault((_row_label(row), int(row["shots"])), {})[row["task"]] = format_cell(
                row.get("mean"), row.get("std"))
        gaps: dict[tuple[str, int], dict[str, str]] = {}
        for row in model_rows:
            if row.get("diff") is not None:
                gaps.setdefault((f"{HUMAN_LABEL} − {_row_label(row)}", int(row["shots"])), {})[row["task"]] = (
                    format_gap(row["diff"], row.get("ci_low"), row.get("ci_high")))
        for group in (models, gaps):
            for (label, k), by_task in sorted(group.items(), key=lambda kv: (kv[0][0], cohort_key("", kv[0][1]))):
                index.append((label, str(k)))
                data.append([by_task.get(s, MISSING) for s in slugs])
        frame = pd.DataFrame(data, index=pd.MultiIndex.from_tuples(index, names=[METHOD_LABEL, SHOTS_LABEL]),
                             columns=columns)
    frame.columns.name = None
    frame.attrs["cells"] = [dict(c) for c in cells]
    frame.attrs["model_rows"] = [dict(m) for m in model_rows]
    return frame


def _json_value(value):
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, float) and math.isnan(value):
        return None
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


def _table_json(frame: pd.DataFrame) -> str:
    cells = [{k: _json_value(cell.get(k)) for k in ("task", "shots", "mean", "std", "n")}
             for cell in frame.attrs.get("cells", [])]
    payload = {
        "metric": "S1",
        "unit": "percent",
        "std_ddof": STD_DDOF,
        "note": NOTE,
        "cells": cells,
    }
    model_rows = frame.attrs.get("model_rows") or []
    if model_rows:
        payload["model_rows"] = [{k: _json_value(v) for k, v in row.items()} for row in model_rows]
    return json.dumps(payload, indent=2, ensure_ascii=False) + "\n"


def _markdown(frame: pd.DataFrame, caption: str | None = None) -> str:
    """A GitHub-flavoured Markdown table (written here: pandas' to_markdown needs tabulate)."""
    def esc(value) -> str:
        text = "" if value is None else str(value)
        return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")

    index_names = [n or "" for n in frame.index.names]
    header = [*index_names, *[str(c) for c in frame.columns]]
    lines = ["| " + " | ".join(esc(h) for h in header) + " |",
             "|" + "|".join(["---"] * len(index_names) + ["---:"] * len(frame.columns)) + "|"]
    for key, row in zip(frame.index, frame.itertuples(index=False), strict=True):
        keys = key if isinstance(key, tuple) else (key,)
        lines.append("| " + " | ".join(esc(v) for v in [*keys, *row]) + " |")
    text = "\n".join(lines) + "\n"
    if caption:
        text += f"\n{caption}\n"
    return text


_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                  "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}
_LATEX_RE = re.compile("|".join(re.escape(k) for k in _LATEX_SPECIAL))


def latex_escape(text: str) -> str:
    return _LATEX_RE.sub(lambda m: _LATEX_SPECIAL[m.group()], str(text))


def _latex(frame: pd.DataFrame) -> str:
    tex = frame.copy()
    tex = tex.map(lambda v: latex_escape(v).replace("±", r"$\pm$"))
    tex.columns = [latex_escape(c) for c in tex.columns]
    tex.index = tex.index.map(lambda k: tuple(latex_escape(x) for x in k) if isinstance(k, tuple) else latex_escape(k))
    tex.index.names = [latex_escape(n) if n else n for n in frame.index.names]
    caption = ("Human performance on the test set: " + latex_escape(NOTE)).replace("±", r"$\pm$")
    return tex.to_latex(escape=False, caption=caption, label="tab:human-performance",
                        column_format="l" * tex.index.nlevels + "c" * len(tex.columns))


def render(frame_or_cells: pd.DataFrame | Sequence[Mapping], fmt: str) -> str:
    """The table as ``csv``, ``json`` (``{"cells": [...], "std_ddof": 1, ...}``), ``md`` or ``tex``."""
    frame = frame_or_cells if isinstance(frame_or_cells, pd.DataFrame) else table_frame(frame_or_cells)
    if fmt == "csv":
        return f"# {NOTE}\n" + frame.to_csv()
    if fmt == "json":
        return _table_json(frame)
    if fmt == "md":
        return _markdown(frame, caption=NOTE)
    if fmt == "tex":
        return _latex(frame)
    raise ExportError(f"unknown format {fmt!r}: use one of {', '.join(TABLE_FORMATS)}")


def load_model_rows(study: Study) -> list[dict]:
    """Model rows from the provider named by ``settings.CLUES_MODEL_ROWS_PROVIDER``.

    The provider is ``model_rows(study) -> [{"method", "model", "task", "shots", "mean", "std",
    "n", ...}]`` with mean and std in percent. Raises ExportError when it cannot be loaded.
    """
    path = getattr(settings, "CLUES_MODEL_ROWS_PROVIDER", "")
    if not path:
        raise ExportError("settings.CLUES_MODEL_ROWS_PROVIDER is not set: no model rows to add")
    try:
        provider = import_string(path)
    except ImportError as exc:
        raise ExportError(f"cannot load the model rows provider {path!r} (settings.CLUES_MODEL_ROWS_PROVIDER): "
                          f"{exc}") from exc
    rows = list(provider(study))
    required = {"method", "model", "task", "shots", "mean"}
    for i, row in enumerate(rows):
        missing = required - set(row)
        if missing:
            raise ExportError(f"model row {i} from {path} lacks {', '.join(sorted(missing))}")
    return rows


def study_table(study: Study, *, with_baselines: bool = False) -> pd.DataFrame:
    return table_frame(selectors.human_table(study), load_model_rows(study) if with_baselines else ())


# ---------------------------------------------------------------- row exports


def render_rows(rows: Sequence[Mapping], fmt: str, *, columns: Sequence[str] | None = None) -> str:
    """Flat rows (per-annotator results, learning curves, agreement) as csv, json or md."""
    rows = [{k: _json_value(v) for k, v in row.items() if not isinstance(v, (list, dict)) or fmt == "json"}
            for row in rows]
    if fmt == "json":
        return json.dumps({"rows": rows, "count": len(rows)}, indent=2, ensure_ascii=False) + "\n"
    frame = pd.DataFrame(rows, columns=list(columns) if columns else None)
    if fmt == "csv":
        return frame.to_csv(index=False)
    if fmt == "md":
        return _markdown(frame.set_index(frame.columns[0]) if len(frame.columns) else frame)
    raise ExportError(f"unknown format {fmt!r}: use one of {', '.join(ROW_FORMATS)}")


ANNOTATOR_COLUMNS = ("enrollment_id", "worker", "platform", "task", "shots", "state", "training_s1", "test_s1",
                     "training_done", "test_done", "test_total", "items_answered", "active_seconds", "pay")
CURVE_COLUMNS = ("enrollment_id", "worker", "task", "shots", "position", "s1", "running_s1")
AGREEMENT_COLUMNS = ("cohort", "task", "shots", "n", "mean_pairwise_s1", "fleiss_kappa")


def export_rows(study: Study, kind: str, *, include_all: bool = False) -> tuple[list[dict], tuple[str, ...]]:
    """(rows, columns) of one row export: ``annotators``, ``learning_curves`` or ``agreement``."""
    if kind == "annotators":
        return selectors.annotator_rows(study, include_all=include_all), ANNOTATOR_COLUMNS
    if kind == "learning_curves":
        return selectors.learning_curves(study), CURVE_COLUMNS
    if kind == "agreement":
        return selectors.cohort_agreement(study), AGREEMENT_COLUMNS
    raise ExportError(f"unknown export {kind!r}")


# ---------------------------------------------------------------- predictions


def prediction_jsonl(enrollment: Enrollment) -> str:
    """One annotator's test answers as CLUES prediction lines ``{"id", "prediction"}``."""
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in selectors.prediction_rows(enrollment))


def prediction_filename(enrollment: Enrollment) -> str:
    worker = re.sub(r"[^A-Za-z0-9_-]+", "_", enrollment.worker.external_id)[:40]
    return f"{enrollment.cohort.task.slug}_{enrollment.cohort.shots}shot_e{enrollment.pk}_{worker}.jsonl"


def predictions_zip(study: Study) -> bytes:
    """A zip of one prediction file per completed annotator (``<task>_<k>shot_e<id>_<worker>.jsonl``)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for enrollment in selectors.completed_enrollments(study):
            archive.writestr(prediction_filename(enrollment), prediction_jsonl(enrollment))
    return buffer.getvalue()


# ---------------------------------------------------------------- files


def write_atomic(path: str | os.PathLike, data: str | bytes) -> Path:
    """Write ``data`` to ``path`` through a temporary file in the same folder, then rename it.

    A failure at any point leaves ``path`` as it was (absent or the old content).
    """
    path = Path(path)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(raw)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
