"""The results page, its downloads and the results endpoints of the API (same paths and names as before).

Every figure comes from ``results.cells`` / ``results.agreement``, laid out by ``results.table``
and written by ``results.formats``; access rules are the dashboard's and the API's own.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import render
from django.template.loader import render_to_string
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.response import Response

from annotation import selectors, services
from annotation.access import enrollment_for, researcher_required, study_for
from annotation.models import Enrollment
from api.views import ResearcherView
from tasks_data.registry import task_name, task_order
from tasks_data.s1 import MRC_GOLD
from tasks_data.stats import STD_DDOF
from worker_pages.text import marked_pieces

from . import agreement, cells, exports, fits, formats, items, runs
from .cache import remember
from .presentation import ability_chart, chart
from .scores import study_key, study_scores
from .serializers import ResultsSerializer
from .table import NO_HUMAN_COHORT, NOTE
from .uncertainty import PLAN_CONFIDENCE, PLAN_MEASURED, TARGETS


class BadParameter(ValueError):
    """A query parameter of the results page, its downloads or the API is not one the page knows."""


def mrc_gold_param(params) -> str:
    """``?mrc_gold=best|set`` (default best): how MRC gold lists are read (tasks_data.s1)."""
    value = params.get("mrc_gold") or MRC_GOLD[0]
    if value not in MRC_GOLD:
        raise BadParameter(f"mrc_gold must be one of {', '.join(MRC_GOLD)}, got {value!r}")
    return value


TARGET_POINTS_RANGE = (0.1, 50.0)


def target_param(params) -> float:
    """``?target=`` the planner's target: half the width of a 95% interval, in S1 points (default 5)."""
    raw = params.get("target")
    if raw in (None, ""):
        return cells.DEFAULT_TARGET_POINTS
    try:
        value = float(raw)
    except ValueError:
        raise BadParameter(f"target must be a number of S1 points, got {raw!r}") from None
    low, high = TARGET_POINTS_RANGE
    if not low <= value <= high:  # also refuses nan and inf
        raise BadParameter(f"target must be between {low} and {high} S1 points, got {raw!r}")
    return value


# ---------------------------------------------------------------- dashboard


@researcher_required
@require_GET
def study_results(request: HttpRequest, study_id: int) -> HttpResponse:
    study = study_for(request, study_id)
    try:
        mrc_gold, target = mrc_gold_param(request.GET), target_param(request.GET)
    except BadParameter as exc:
        return HttpResponseBadRequest(str(exc), content_type="text/plain; charset=utf-8")
    # The page's body holds no per-user or per-request content (no form posts, no nonce): it is kept until
    # the study's results, the runs or what the body shows of the study change.
    key = study_key(
        study,
        "page",
        mrc_gold,
        target,
        study.name,
        str(study.pay_rate),
        study.pay_currency,
        study.platform,
        cells.fee_share(study),
        fits.fits_version(study),
        runs=runs.runs_fingerprint(),
    )
    body = remember(
        key, lambda: render_to_string("dashboard/_results_body.html", _results_context(study, mrc_gold, target))
    )
    # The body was rendered from an autoescaped template: it is safe to embed.
    return render(request, "dashboard/results.html", {"study": study, "body": mark_safe(body)})


def _results_context(study, mrc_gold: str, target: float) -> dict:
    # Model rows beside the human cells of their task and shots, their gaps and agreement below the humans; the
    # others in table.unpaired_models ("no human cohort").
    table = exports.study_table(study, with_baselines=True, mrc_gold=mrc_gold, target_points=target)
    agree = agreement.cohort_agreement(study)
    for a in agree:
        a["task_name"] = task_name(a["task"])
    share = cells.fee_share(study)
    abilities = fits.stored_fits(study, fits.CohortFit.Kind.ABILITY)
    cohorts = {c.pk: c for c in selectors.study_cohorts(study)}
    # The html writer renders an autoescaped template: its output is safe to embed.
    return {
        "study": study,
        "table": table,
        "table_html": mark_safe(formats.render(table, "html")),
        "agreement": agree,
        "charts": [chart(t, table.cells, table.model_rows) for t in sorted(study.tasks, key=task_order)],
        "ability_charts": [
            ability_chart(cohorts[c].task.slug, cohorts[c].shots, fit)
            for c in cohorts
            for fit in abilities.get(c, ())
            if fits.is_fitted(fit["result"])
        ],
        # Cells whose scale would mean nothing (one respondent group, too few respondents): said, not drawn.
        "ability_not_fitted": [
            {"name": task_name(cohorts[c].task.slug), "shots": cohorts[c].shots, "reason": fit["result"]["reason"]}
            for c in cohorts
            for fit in abilities.get(c, ())
            if not fits.is_fitted(fit["result"]) and fit["current"]
        ],
        "formats": [(fmt, formats.TABLE_WRITERS[fmt].label) for fmt in formats.TABLE_FORMATS],
        "model_rows": table.model_rows,
        "unpaired_models": table.unpaired_models,
        "no_human_cohort": NO_HUMAN_COHORT,
        "model_note": table.model_note,
        "aggregate_note": fits.not_fitted_note(study.tasks),
        "note": NOTE,
        "row_downloads": [(kind, label, help) for kind, (label, help) in ROW_DOWNLOADS.items()],
        "row_formats": [(fmt, formats.ROW_WRITERS[fmt].label) for fmt in formats.ROW_FORMATS],
        "completed": selectors.completed_enrollments(study),
        "notes": table.notes[1:],
        "mrc_gold": mrc_gold,
        "mrc_gold_choices": MRC_GOLD,
        "has_mrc": table.mrc_gold_note is not None,
        "query": f"?mrc_gold={mrc_gold}" if mrc_gold != MRC_GOLD[0] else "",
        "planner": table.planner,
        "target": target,
        "assurance_percent": round(100 * cells.DEFAULT_ASSURANCE),
        "plan_confidence_percent": round(100 * PLAN_CONFIDENCE),
        "plan_measured": PLAN_MEASURED,
        "fee_share": share,
        "fee_percent": round(100 * share, 1),
    }


@researcher_required
@require_GET
def results_download(request: HttpRequest, study_id: int, fmt: str) -> HttpResponse:
    study = study_for(request, study_id)
    if fmt not in formats.TABLE_FORMATS:
        raise Http404("unknown format")
    try:
        mrc_gold = mrc_gold_param(request.GET)
    except BadParameter as exc:
        return HttpResponseBadRequest(str(exc), content_type="text/plain; charset=utf-8")
    with_models = request.GET.get("models") == "1" and bool(exports.model_rows(study, mrc_gold=mrc_gold)[0])
    text = exports.render_table(study, fmt, with_baselines=with_models, mrc_gold=mrc_gold)
    response = HttpResponse(text, content_type=formats.CONTENT_TYPES[fmt])
    suffix = "_with_models" if with_models else ""
    response["Content-Disposition"] = f'attachment; filename="study{study.pk}_human_table{suffix}.{fmt}"'
    return response


# Row downloads of the dashboard (everything the API exports, a click away): the
# kinds of ``exports.export_rows`` plus "pay" (what every worker is owed, finished or not).
PAY_COLUMNS = (
    "enrollment_id",
    "worker",
    "platform",
    "task",
    "shots",
    "state",
    "items_answered",
    "active_seconds",
    "pay",
)
ROW_DOWNLOADS = {
    "annotators": ("Per-annotator results", "completed annotators: training and test S1, time, pay"),
    "pay": ("Pay", "every worker who joined, whatever their state: active time and pay"),
    "learning_curves": ("Learning curves", "each training answer's S1 and the running mean"),
    "agreement": ("Agreement", "mean pairwise S1, Fleiss' kappa and Krippendorff's alpha per cohort"),
    "items": (
        "Items: humans against models",
        "per test item: share of annotators right, item difficulty (ability scale), majority and model S1, flags "
        "where humans and models differ",
    ),
    "abilities": (
        "Ability scale",
        "each annotator and model run on one ability axis per task and shots (1PL item response model, "
        "manage.py fit_results)",
    ),
}


def _attachment(body, fmt: str, filename: str) -> HttpResponse:
    response = HttpResponse(body, content_type=formats.CONTENT_TYPES[fmt])
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@researcher_required
@require_GET
def rows_download(request: HttpRequest, study_id: int, kind: str, fmt: str) -> HttpResponse:
    if kind == "table":  # the same file as download.<fmt>: every download is results/<kind>.<fmt>
        return results_download(request, study_id, fmt)
    study = study_for(request, study_id)
    if kind not in ROW_DOWNLOADS or fmt not in formats.ROW_FORMATS:
        raise Http404("unknown download")
    if kind == "pay":
        rows, columns = exports.export_rows(study, "annotators", include_all=True)
        rows, columns = [{c: r[c] for c in PAY_COLUMNS} for r in rows], PAY_COLUMNS
        return _attachment(formats.render_rows(rows, fmt, columns=columns), fmt, f"study{study.pk}_{kind}.{fmt}")
    try:
        mrc_gold = mrc_gold_param(request.GET)
    except BadParameter as exc:
        return HttpResponseBadRequest(str(exc), content_type="text/plain; charset=utf-8")
    body = exports.render_export(study, kind, fmt, mrc_gold=mrc_gold if kind in ("annotators", "items") else "best")
    return _attachment(body, fmt, f"study{study.pk}_{kind}.{fmt}")


@researcher_required
@require_GET
def predictions_download(request: HttpRequest, study_id: int) -> HttpResponse:
    study = study_for(request, study_id)
    return _attachment(exports.predictions_zip(study), "zip", f"study{study.pk}_predictions.zip")


@researcher_required
@require_GET
def enrollment_predictions_download(request: HttpRequest, enrollment_id: int) -> HttpResponse:
    enrollment = enrollment_for(request, enrollment_id)  # another researcher's: as if it did not exist
    if enrollment.state != Enrollment.State.COMPLETED:  # as the API answers (409)
        return HttpResponse(
            f"Only a completed enrollment has a prediction file (this one is {enrollment.state}).",
            status=409,
            content_type="text/plain; charset=utf-8",
        )
    return _attachment(exports.prediction_jsonl(enrollment), "jsonl", exports.prediction_filename(enrollment))


# ---------------------------------------------------------------- API


class EnrollmentPredictionsView(ResearcherView):
    @extend_schema(
        tags=["results"],
        responses={(200, "application/jsonl"): OpenApiTypes.STR},
        summary="One completed annotator's test answers in the CLUES prediction format (JSONL).",
    )
    def get(self, request, pk: int):
        enrollment = self.get_enrollment(pk)
        if enrollment.state != Enrollment.State.COMPLETED:
            raise services.Conflict(f"only a completed enrollment has results (this one is {enrollment.state})")
        response = HttpResponse(exports.prediction_jsonl(enrollment), content_type=formats.CONTENT_TYPES["jsonl"])
        response["Content-Disposition"] = f'attachment; filename="{exports.prediction_filename(enrollment)}"'
        return response


class StudyResultsView(ResearcherView):
    @extend_schema(
        tags=["results"],
        responses=ResultsSerializer,
        parameters=[
            OpenApiParameter(
                "mrc_gold",
                str,
                enum=MRC_GOLD,
                description="MRC gold read as the best alternative (default) or as one set",
            ),
            OpenApiParameter("target", float, description="planner: ± S1 points (default 5)"),
        ],
        summary="Table 5 cells (percent, sample std ddof=1; 95% interval, majority vote, planner), "
        "per-annotator results and agreement.",
    )
    def get(self, request, pk: int):
        study = self.get_study(pk)
        try:
            mrc_gold, target = mrc_gold_param(request.query_params), target_param(request.query_params)
        except BadParameter as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        key = study_key(
            study,
            "api-results",
            mrc_gold,
            target,
            str(study.pay_rate),
            study.pay_currency,
            study.platform,
            cells.fee_share(study),
            fits.fits_version(study),
            runs=runs.runs_fingerprint(),
        )
        return Response(remember(key, lambda: _results_payload(study, mrc_gold, target)))


def _results_payload(study, mrc_gold: str, target: float) -> dict:
    table = exports.study_table(study, with_baselines=True, mrc_gold=mrc_gold, target_points=target)
    payload = {
        "std_ddof": STD_DDOF,
        "mrc_gold": mrc_gold,
        "interval_targets": TARGETS,
        "interval_flags": table.flagged,
        "cells": table.cells,
        "aggregates": table.aggregates,
        "annotators": exports.annotator_rows(study, mrc_gold=mrc_gold),
        "agreement": agreement.cohort_agreement(study),
        "model_rows": table.model_rows,
        "model_rows_no_human_cohort": table.unpaired_models,
        "abilities": exports.ability_rows(study),
    }
    if table.mrc_gold_note:
        payload["mrc_gold_note"] = table.mrc_gold_note
    return payload


def _flag(request, name: str) -> bool:
    return request.query_params.get(name, "").lower() in ("1", "true", "yes")


class StudyExportView(ResearcherView):
    @extend_schema(
        tags=["results"],
        parameters=[
            OpenApiParameter("kind", str, OpenApiParameter.PATH, enum=exports.EXPORT_KINDS),
            OpenApiParameter("fmt", str, description="table: csv|json|md|tex; rows: csv|json|md; predictions: zip"),
            OpenApiParameter("with_baselines", bool, description="table: add the model rows"),
            OpenApiParameter(
                "mrc_gold", str, enum=MRC_GOLD, description="table, annotators, items: how MRC gold lists are read"
            ),
            OpenApiParameter("all", bool, description="annotators: every enrollment, not only completed ones"),
        ],
        responses={(200, "application/octet-stream"): OpenApiTypes.BINARY},
        summary="Download a results file.",
    )
    def get(self, request, pk: int, kind: str):
        study = self.get_study(pk)
        body: str | bytes
        try:
            if kind == "table":
                fmt = request.query_params.get("fmt", "csv")
                if fmt not in formats.TABLE_FORMATS:
                    raise formats.ExportError(f"fmt must be one of {', '.join(formats.TABLE_FORMATS)}")
                body = exports.render_table(
                    study,
                    fmt,
                    with_baselines=_flag(request, "with_baselines"),
                    mrc_gold=mrc_gold_param(request.query_params),
                )
            elif kind == "predictions":
                fmt, body = "zip", exports.predictions_zip(study)
            elif kind in exports.EXPORT_KINDS:
                fmt = request.query_params.get("fmt", "csv")
                body = exports.render_export(
                    study, kind, fmt, include_all=_flag(request, "all"), mrc_gold=mrc_gold_param(request.query_params)
                )
            else:
                return Response(
                    {"detail": f"unknown export {kind!r}: one of {', '.join(exports.EXPORT_KINDS)}"},
                    status=status.HTTP_404_NOT_FOUND,
                )
        except (formats.ExportError, BadParameter) as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        response = HttpResponse(body, content_type=formats.CONTENT_TYPES[fmt])
        response["Content-Disposition"] = f'attachment; filename="study{study.pk}_{kind}.{fmt}"'
        return response


# ---------------------------------------------------------------- items: humans against models

ITEM_FLAGS = {
    "all": "every item",
    "humans_solve_models_miss": "humans solve, models miss",
    "models_solve_humans_miss": "models solve, humans miss",
}
ITEM_PAGE_ROWS = 100  # items per page of the items view (pages reach every item; the download has them all)


def _sort_value(row: dict, column: str):
    value = row.get(column)
    return (value is None, value if value is not None else 0)


@researcher_required
@require_GET
def study_items(request: HttpRequest, study_id: int) -> HttpResponse:
    """One cohort's test items: the humans' and the models' item S1 side by side, filtered and sorted."""
    study = study_for(request, study_id)
    try:
        mrc_gold = mrc_gold_param(request.GET)
    except BadParameter as exc:
        return HttpResponseBadRequest(str(exc), content_type="text/plain; charset=utf-8")
    with_results = {c for c, s in study_scores(study).items() if s.n}
    cohorts = [c for c in selectors.study_cohorts(study) if c.pk in with_results]
    chosen = request.GET.get("cohort", "")
    cohort = next((c for c in cohorts if str(c.pk) == chosen), cohorts[0] if cohorts else None)
    if chosen and (cohort is None or str(cohort.pk) != chosen):
        return HttpResponseBadRequest(
            "cohort: not a cohort of this study with annotators in results", content_type="text/plain; charset=utf-8"
        )
    rows, columns, correlations = (
        items.item_rows(study, mrc_gold=mrc_gold, cohort_id=cohort.pk) if cohort else ([], (), [])
    )
    flag = request.GET.get("flag") or "all"
    sortable = [c for c in (*items.BASE_COLUMNS, *columns) if c not in ("task", "shots")]
    sort = request.GET.get("sort") or "clues_id"
    order = request.GET.get("order") or ("asc" if sort == "clues_id" else "desc")
    if flag not in ITEM_FLAGS or sort not in sortable or order not in ("asc", "desc"):
        return HttpResponseBadRequest(
            f"flag must be one of {', '.join(ITEM_FLAGS)}; sort one of {', '.join(sortable)}; order asc or desc",
            content_type="text/plain; charset=utf-8",
        )
    shown = [r for r in rows if cohort and r["task"] == cohort.task.slug and r["shots"] == cohort.shots]
    counts = {f: sum(1 for r in shown if f == "all" or r.get(f)) for f in ITEM_FLAGS}
    if flag != "all":
        shown = [r for r in shown if r.get(flag)]
    if sort != "clues_id":
        shown.sort(key=lambda r: _sort_value(r, sort), reverse=order == "desc")
        shown.sort(key=lambda r: r.get(sort) is None)  # empty values last, whatever the order
    elif order == "desc":
        shown.reverse()
    model_columns = (
        [c for c in columns if c.startswith(items.MODEL_PREFIX) and any(c in r for r in shown)] if cohort else []
    )
    pages = Paginator(shown, ITEM_PAGE_ROWS)
    page = pages.get_page(request.GET.get("page"))
    table = [{"row": r, "models": [r.get(c) for c in model_columns]} for r in page.object_list]
    ctx = {
        "study": study,
        "cohorts": cohorts,
        "cohort": cohort,
        "flag": flag,
        "flags": ITEM_FLAGS,
        "sort": sort,
        "order": order,
        "rows": table,
        "total": len(shown),
        "page": page,
        "page_query": urlencode(
            {"cohort": cohort.pk if cohort else "", "flag": flag, "sort": sort, "order": order}
            | ({"mrc_gold": mrc_gold} if mrc_gold != "best" else {})
        ),
        "counts": counts,
        "model_columns": [(c, c[len(items.MODEL_PREFIX) :]) for c in model_columns],
        "correlations": [
            c for c in correlations if cohort and c["task"] == cohort.task.slug and c["shots"] == cohort.shots
        ],
        "mrc_gold": mrc_gold,
        "definitions": items.DEFINITIONS,
        "solved": items.SOLVED_PERCENT,
        "task_name": task_name(cohort.task.slug) if cohort else "",
    }
    return render(request, "dashboard/items.html", ctx)


@researcher_required
@require_GET
def study_item(request: HttpRequest, study_id: int, cohort_id: int, clues_id: str) -> HttpResponse:
    """One test item: its text, its gold, every annotator's answer and every model row's prediction."""
    study = study_for(request, study_id)
    try:
        mrc_gold = mrc_gold_param(request.GET)
    except BadParameter as exc:
        return HttpResponseBadRequest(str(exc), content_type="text/plain; charset=utf-8")
    detail = items.item_detail(study, cohort_id, clues_id, mrc_gold=mrc_gold)
    if detail is None:
        raise Http404("no such item in this study")
    # The text as the worker's feedback shows it: the gold marked, a ReCoRD passage's "@highlight" lines as bullets.
    example, spec = detail["example"], detail["cohort"].task.spec
    pieces = marked_pieces(example.context, [], spec.answer_kind.gold_offsets(example))
    return render(
        request,
        "dashboard/item.html",
        {"study": study, "mrc_gold": mrc_gold, **detail, "task_name": spec.name, "pieces": pieces},
    )
