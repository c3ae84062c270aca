"""What a study's results are exported as: the table, row exports, predictions; and atomic files.

``study_table(study, with_baselines=...)`` is Table 5 (with the model rows of ``results.cells``);
``export_rows(study, kind)`` the per-annotator, learning-curve, agreement and item rows;
``predictions_zip`` / ``prediction_jsonl`` annotators' test answers in the CLUES prediction format,
scorable by ``manage.py score``; ``write_atomic`` writes a file so that a failure leaves nothing
half-written.
"""

from __future__ import annotations

import io
import json
import logging
import os
import re
import tempfile
import zipfile
from pathlib import Path

from annotation import selectors
from annotation.models import Enrollment, Study

from . import agreement, cells, fits, formats, items, runs
from .cache import remember
from .formats import ExportError
from .scores import prediction_files, study_key, study_scores
from .table import Table, build_table

log = logging.getLogger(__name__)

EXPORT_KINDS = ("table", "annotators", "learning_curves", "agreement", "items", "abilities", "predictions")
ANNOTATOR_COLUMNS = (
    "enrollment_id",
    "worker",
    "platform",
    "task",
    "shots",
    "state",
    "training_s1_percent",
    "test_s1_percent",
    "training_done",
    "test_done",
    "test_total",
    "items_answered",
    "fast_answer_share",
    "longest_idle_seconds",
    "active_seconds",
    "pay",
)
CURVE_COLUMNS = (
    "enrollment_id",
    "worker",
    "task",
    "shots",
    "position",
    "s1_percent",
    "running_s1_percent",
    "gold_unproducible",
)
AGREEMENT_COLUMNS = (
    "cohort",
    "task",
    "shots",
    "n",
    "mean_pairwise_s1_percent",
    "fleiss_kappa",
    "krippendorff_alpha",
    "alpha_distance",
)


ABILITY_COLUMNS = (
    "task",
    "shots",
    "respondent",
    "kind",
    "id",
    "model_row",
    "s1_percent",
    "ability",
    "ability_se",
    "ability_low",
    "ability_high",
    "pool",
    "method",
    "library",
    "current",
)


def study_table(
    study: Study, *, with_baselines: bool = False, mrc_gold: str = "best", target_points: float | None = None
) -> Table:
    """Table 5 of a study: human rows with their 95% intervals, majority-vote rows, the aggregated rows stored
    by ``fit_results``, and (optionally) the model rows with their gaps; MRC cells read with ``mrc_gold``,
    the human and the model rows alike (model rows rescored from their stored predictions)."""
    planner = {} if target_points is None else {"target_points": target_points}
    rows, note = model_rows(study, mrc_gold=mrc_gold) if with_baselines else ([], "")
    table = build_table(
        cells.table_cells(study, mrc_gold=mrc_gold, **planner),
        rows,
        fits.aggregate_cells(study, mrc_gold=mrc_gold),
        mrc_gold=mrc_gold,
    )
    table.model_note = note
    return table


def model_rows(study: Study, *, mrc_gold: str = "best") -> tuple[list[dict], str]:
    """(rows, note): the model rows beside a study (``results.cells.model_rows``); none, with a note, when they
    cannot be computed (broken baseline data must not take the human results down with it)."""
    try:
        return cells.model_rows(study, mrc_gold=mrc_gold), ""
    except Exception as exc:
        log.exception("model rows of study %s failed", study.pk)
        return [], f"Model rows could not be loaded ({type(exc).__name__})."


def ability_rows(study: Study) -> list[dict]:
    """The joint ability scale stored by ``fit_results``: one row per cohort and respondent (annotator or model
    run), in table order; ``current`` False when the cohort's results or its runs changed since the fit."""
    stored = fits.stored_fits(study, fits.CohortFit.Kind.ABILITY)
    out = []
    for cohort in selectors.study_cohorts(study):
        for fit in stored.get(cohort.pk, ()):
            if not fits.is_fitted(fit["result"]):
                continue
            for r in fit["result"]["respondents"]:
                out.append(
                    {
                        "task": cohort.task.slug,
                        "shots": cohort.shots,
                        "respondent": r["label"],
                        "kind": r["kind"],
                        "id": r["id"],
                        "model_row": r.get("row"),
                        "s1_percent": r["s1_percent"],
                        "ability": r["theta"],
                        "ability_se": r["theta_se"],
                        "ability_low": r["low"],
                        "ability_high": r["high"],
                        # The scale is set by who it was fitted on: an ability means something beside its pool.
                        "pool": fit["result"].get("pool", ""),
                        "method": fit["method"],
                        "library": fit["library"],
                        "current": fit["current"],
                    }
                )
    return out


_S1_KEYS = ("training_s1", "test_s1")  # 0-1 in the selectors, percent in every export


def _percent(value: float | None) -> float | None:
    return None if value is None else 100 * value


def annotator_rows(study: Study, *, include_all: bool = False, mrc_gold: str = "best") -> list[dict]:
    """``selectors.annotator_rows`` with S1 in percent, as every table (``training_s1_percent``,
    ``test_s1_percent``), the test S1 read with ``mrc_gold`` (stored under the default)."""
    scores = study_scores(study)  # the annotators in results: cached; the others (with --all) read now
    enrollment_rows = [r for cohort_scores in scores.values() for r in cohort_scores.enrollment_rows]
    if include_all:
        enrollment_rows += selectors.study_enrollments(study, results=False)
    enrollment_rows.sort(
        key=lambda r: (*selectors.cohort_key(r["task"], r["shots"]), r["enrolled_at"], r["enrollment"].pk)
    )
    rows = [selectors.annotator_row(r) for r in enrollment_rows]
    rescored = cells.annotator_test_s1_read(study, mrc_gold)
    out = []
    for row in rows:
        row["test_s1"] = rescored.get(row["enrollment_id"], row["test_s1"])
        out.append(
            {f"{k}_percent" if k in _S1_KEYS else k: _percent(v) if k in _S1_KEYS else v for k, v in row.items()}
        )
    return out


def export_rows(
    study: Study, kind: str, *, include_all: bool = False, mrc_gold: str = "best"
) -> tuple[list[dict], tuple[str, ...]]:
    """(rows, columns) of one row export: ``annotators``, ``learning_curves``, ``agreement`` or ``items``."""
    if kind == "annotators":
        return annotator_rows(study, include_all=include_all, mrc_gold=mrc_gold), ANNOTATOR_COLUMNS
    if kind == "learning_curves":
        return agreement.learning_curves(study), CURVE_COLUMNS
    if kind == "agreement":
        return agreement.cohort_agreement(study), AGREEMENT_COLUMNS
    if kind == "items":
        rows, columns, _correlations = items.item_rows(study, mrc_gold=mrc_gold)
        return rows, columns
    if kind == "abilities":
        return ability_rows(study), ABILITY_COLUMNS
    raise ExportError(f"unknown export {kind!r}")


def render_export(study: Study, kind: str, fmt: str, *, include_all: bool = False, mrc_gold: str = "best") -> str:
    """One row export written as ``fmt`` (csv, json, md); the items' JSON also carries what its columns
    mean and the correlation of human and model item difficulty per cohort and model row."""
    if kind == "items":

        def build():
            rows, columns, correlations = items.item_rows(study, mrc_gold=mrc_gold)
            meta = {"definitions": items.DEFINITIONS, "mrc_gold": mrc_gold, "correlations": correlations}
            return formats.render_rows(rows, fmt, columns=columns, meta=meta)

        return remember(
            study_key(study, "export", kind, fmt, mrc_gold, fits.fits_version(study), runs=runs.runs_fingerprint()),
            build,
        )

    def build_rows():
        rows, columns = export_rows(study, kind, include_all=include_all, mrc_gold=mrc_gold)
        return formats.render_rows(rows, fmt, columns=columns)

    if include_all and kind == "annotators":  # workers still in a step change with every answer: not kept
        return build_rows()
    if kind not in EXPORT_KINDS:
        raise ExportError(f"unknown export {kind!r}")
    formats.check_row_format(fmt)
    version = fits.fits_version(study) if kind == "abilities" else ""
    return remember(study_key(study, "export", kind, fmt, mrc_gold, version), build_rows)


def render_table(study: Study, fmt: str, *, with_baselines: bool = False, mrc_gold: str = "best") -> str:
    """Table 5 written as ``fmt``; kept until a cohort's results (or, with the model rows, a run) change."""
    formats.check_table_format(fmt)
    return remember(
        study_key(
            study,
            "table",
            fmt,
            with_baselines,
            mrc_gold,
            fits.fits_version(study),
            runs=runs.runs_fingerprint() if with_baselines else "",
        ),
        lambda: formats.render(study_table(study, with_baselines=with_baselines, mrc_gold=mrc_gold), fmt),
    )


def prediction_jsonl(enrollment: Enrollment) -> str:
    """One annotator's test answers as CLUES prediction lines ``{"id", "prediction"}``."""
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in selectors.prediction_rows(enrollment))


def prediction_filename(enrollment: Enrollment) -> str:
    worker = re.sub(r"[^A-Za-z0-9_-]+", "_", enrollment.worker.external_id)[:40]
    return f"{enrollment.cohort.task.slug}_{enrollment.cohort.shots}shot_e{enrollment.pk}_{worker}.jsonl"


def predictions_zip(study: Study) -> bytes:
    """A zip of one prediction file per completed annotator (``<task>_<k>shot_e<id>_<worker>.jsonl``), the
    files from ``results.scores``; kept until a cohort's results change."""
    return remember(study_key(study, "predictions.zip"), lambda: _predictions_zip(study))


def _predictions_zip(study: Study) -> bytes:
    files = prediction_files(study)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for enrollment in selectors.completed_enrollments(study):
            text = files.get(enrollment.pk)
            archive.writestr(prediction_filename(enrollment), prediction_jsonl(enrollment) if text is None else text)
    return buffer.getvalue()


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
