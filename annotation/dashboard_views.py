"""The researcher dashboard: studies, the live cohort grid, enrollments, results and downloads.

Login required; a researcher is a superuser or a member of the "researchers" group
(``selectors.is_researcher``); anyone else gets 403. A researcher sees the studies
``selectors.studies_visible_to`` gives (their own; a superuser all). Every action goes
through ``annotation.services``; every figure comes from ``annotation.selectors``.
"""

from __future__ import annotations

import logging
import math
from functools import wraps

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.module_loading import import_string
from django.views.decorators.http import require_GET, require_POST

from tasks_data.registry import TASKS, Category
from tasks_data.selectors import unproducible_training_counts

from . import exports, selectors, services
from .forms import CloseForm, ReasonForm, StudyForm
from .models import Cohort, Enrollment, Study
from .protocol import State, TransitionNotAllowed

log = logging.getLogger(__name__)

LOGIN_URL = "login"
PROLIFIC_QUERY = "?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
CHART_W, CHART_H = 360, 240
CHART_PAD = {"left": 44, "right": 12, "top": 28, "bottom": 40}
SERIES_COLORS = ("#2456c7", "#c0392b", "#8e44ad", "#16a085", "#d35400", "#2c3e50", "#7f8c8d")


def researcher_required(view):
    @wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs):
        if not request.user.is_authenticated:
            if request.htmx:  # a poll after the session ended: send the whole page to the login
                response = HttpResponse(status=204)
                response["HX-Redirect"] = f"{reverse(LOGIN_URL)}?next={request.htmx.current_url_abs_path or ''}"
                return response
            return redirect_to_login(request.get_full_path(), LOGIN_URL)
        if not selectors.is_researcher(request.user):
            return render(request, "dashboard/forbidden.html", status=403)
        return view(request, *args, **kwargs)

    return wrapper


def _actor(request: HttpRequest) -> str:
    return request.user.get_username()


def _study(request: HttpRequest, study_id: int) -> Study:
    return get_object_or_404(selectors.studies_visible_to(request.user), pk=study_id)


def _cohort(request: HttpRequest, cohort_id: int) -> Cohort:
    cohort = get_object_or_404(Cohort.objects.select_related("study", "task"), pk=cohort_id)
    if not selectors.studies_visible_to(request.user).filter(pk=cohort.study_id).exists():
        raise Http404("no such cohort")
    return cohort


def join_url(request: HttpRequest, cohort: Cohort) -> str:
    """The absolute join link with the recruitment platform's placeholders."""
    base = request.build_absolute_uri(cohort.join_path)
    study = cohort.study
    if study.platform == Study.Platform.PROLIFIC:
        return base + PROLIFIC_QUERY
    if study.platform == Study.Platform.GENERIC:
        return f"{base}?{study.worker_id_param}={{WORKER_ID}}"
    return base  # MTurk appends its own parameters; local accounts log in


def _platform_note(study: Study) -> str:
    return {
        Study.Platform.PROLIFIC: "Paste into Prolific as the study URL (the {{%...%}} placeholders are Prolific's).",
        Study.Platform.GENERIC: f"Replace {{WORKER_ID}} with your platform's placeholder for the worker id "
                                f"(parameter {study.worker_id_param}).",
        Study.Platform.MTURK: "Use as the ExternalQuestion URL: MTurk appends workerId, assignmentId, hitId and "
                              "turkSubmitTo.",
        Study.Platform.LOCAL: "Workers log in with their lab account, then open the link.",
    }[study.platform]


# ---------------------------------------------------------------- studies


@researcher_required
@require_GET
def study_list(request: HttpRequest) -> HttpResponse:
    studies = list(selectors.studies_visible_to(request.user).prefetch_related("cohorts"))
    rows = []
    for study in studies:
        cohorts = list(study.cohorts.all())
        rows.append({
            "study": study,
            "tasks": [TASKS[s].name if s in TASKS else s for s in study.tasks],
            "cohorts": len(cohorts),
            "launched": sum(1 for c in cohorts if c.launched_at and not c.closed_at),
        })
    return render(request, "dashboard/study_list.html", {"rows": rows})


@researcher_required
def study_new(request: HttpRequest) -> HttpResponse:
    status = 200
    if request.method == "POST":
        form = StudyForm(request.POST)
        if form.is_valid():
            try:
                study = services.create_study(created_by=request.user, **form.service_kwargs())
            except ValidationError as exc:
                form.add_service_errors(exc)
            else:
                launched = " and launched its cohorts" if form.cleaned_data["launch"] else ""
                messages.success(request, f"Created the study \u201c{study.name}\u201d{launched}.")
                return redirect("dashboard-study", study_id=study.pk)
        status = 400
    else:
        form = StudyForm()
    return render(request, "dashboard/study_new.html",
                  {"form": form, "unproducible": unproducible_training_counts()}, status=status)


def _grid_context(study: Study) -> dict:
    rows = selectors.study_grid(study)
    by_cell = {(r["task"], r["shots"]): r for r in rows}
    for r in rows:
        r["meter"] = round(100 * r["test_items_done"] / r["test_items_total"]) if r["test_items_total"] else 0
        cohort = r["cohort"]
        if cohort.closed_at or not study.is_open:
            r["status"] = "closed"
        elif cohort.launched_at is None:
            r["status"] = "not launched"
        elif r["completed"] >= r["target"]:
            r["status"] = "done"
        elif r["enrolled"] >= r["target"]:
            r["status"] = "full"
        else:
            r["status"] = "open"
    tasks = list(dict.fromkeys(r["task"] for r in rows))
    shots = sorted({r["shots"] for r in rows})
    matrix = [{"task": slug, "name": TASKS[slug].name if slug in TASKS else slug,
               "cells": [by_cell.get((slug, k)) for k in shots]} for slug in tasks]
    return {"study": study, "grid_rows": rows, "matrix": matrix, "shots": shots}


@researcher_required
@require_GET
def study_detail(request: HttpRequest, study_id: int) -> HttpResponse:
    study = _study(request, study_id)
    ctx = _grid_context(study)
    for r in ctx["grid_rows"]:
        r["join_url"] = join_url(request, r["cohort"])
    ctx.update(platform_note=_platform_note(study), close_form=CloseForm(),
               any_unlaunched=any(r["cohort"].launched_at is None and r["cohort"].closed_at is None
                                  for r in ctx["grid_rows"]))
    return render(request, "dashboard/study_detail.html", ctx)


@researcher_required
@require_GET
def study_grid_fragment(request: HttpRequest, study_id: int) -> HttpResponse:
    study = _study(request, study_id)
    return render(request, "dashboard/_grid.html", _grid_context(study))


@researcher_required
@require_POST
def study_launch(request: HttpRequest, study_id: int) -> HttpResponse:
    study = _study(request, study_id)
    try:
        count = services.launch_cohorts(study, actor=_actor(request))
    except services.Conflict as exc:
        messages.error(request, f"Not launched: {exc}.")
    else:
        messages.success(request, f"Launched {count} cohort{'s' if count != 1 else ''}.")
    return redirect("dashboard-study", study_id=study.pk)


@researcher_required
@require_POST
def study_close(request: HttpRequest, study_id: int) -> HttpResponse:
    study = _study(request, study_id)
    form = CloseForm(request.POST)
    reason = form.cleaned_data["reason"] if form.is_valid() else ""
    services.close_study(study, actor=_actor(request), reason=reason)
    messages.success(request, "Closed the study: its join links take no new workers.")
    return redirect("dashboard-study", study_id=study.pk)


@researcher_required
@require_POST
def cohort_launch(request: HttpRequest, cohort_id: int) -> HttpResponse:
    cohort = _cohort(request, cohort_id)
    try:
        services.launch_cohorts(cohort.study, cohorts=[cohort], actor=_actor(request))
    except services.Conflict as exc:
        messages.error(request, f"Not launched: {exc}.")
    else:
        messages.success(request, f"Launched {cohort.task.spec.name} {cohort.shots}-shot.")
    return redirect("dashboard-study", study_id=cohort.study_id)


@researcher_required
@require_POST
def cohort_close(request: HttpRequest, cohort_id: int) -> HttpResponse:
    cohort = _cohort(request, cohort_id)
    services.close_cohort(cohort, actor=_actor(request))
    messages.success(request, f"Closed {cohort.task.spec.name} {cohort.shots}-shot: its link takes no new workers.")
    return redirect("dashboard-study", study_id=cohort.study_id)


# ---------------------------------------------------------------- cohorts and enrollments


def sparkline(values: list[float], width: int = 120, height: int = 28) -> dict | None:
    """A learning curve as SVG parts: one bar per training item (its S1) and the running mean."""
    if not values:
        return None
    n = len(values)
    step = width / n
    bars, points, total = [], [], 0.0
    inner = height - 6  # 3 px above and below, so the line at 100% stays visible
    for i, v in enumerate(values):
        v = max(0.0, min(1.0, float(v)))
        total += v
        h = max(1.0, v * inner)
        bars.append({"x": round(i * step + 0.5, 2), "y": round(height - 3 - h, 2), "w": round(max(step - 1, 0.6), 2),
                     "h": round(h, 2)})
        points.append(f"{round(i * step + step / 2, 2)},{round(height - 3 - (total / (i + 1)) * inner, 2)}")
    return {"w": width, "h": height, "bars": bars, "points": " ".join(points),
            "first": round(100 * values[0]), "last": round(100 * total / n), "n": n}


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def _cohort_page(request: HttpRequest, cohort: Cohort, *, errors: dict | None = None, status: int = 200,
                 posted: dict | None = None) -> HttpResponse:
    rows = selectors.cohort_enrollments(cohort)
    for r in rows:
        e = r["enrollment"]
        r["spark"] = sparkline(r["learning_curve"])
        r["active"] = _duration(r["active_seconds"])
        r["can_filter"] = e.state in (State.TRAINING, State.TESTING) and r["test_done"] == 0
        r["can_reinstate"] = e.state == State.FILTERED
        r["errors"] = (errors or {}).get(e.pk, [])
        r["form"] = (posted or {}).get(e.pk) or ReasonForm(auto_id=f"id_%s_{e.pk}")
    grid = next((g for g in selectors.study_grid(cohort.study) if g["cohort"].pk == cohort.pk), None)
    ctx = {"cohort": cohort, "study": cohort.study, "rows": rows, "grid": grid, "join_url": join_url(request, cohort),
           "events": selectors.audit_log(cohort.study).filter(enrollment__cohort=cohort).order_by("-at", "-id")[:30]}
    return render(request, "dashboard/cohort_detail.html", ctx, status=status)


@researcher_required
@require_GET
def cohort_detail(request: HttpRequest, cohort_id: int) -> HttpResponse:
    return _cohort_page(request, _cohort(request, cohort_id))


def _enrollment_action(request: HttpRequest, enrollment_id: int, action) -> HttpResponse:
    enrollment = get_object_or_404(Enrollment.objects.select_related("cohort__study", "cohort__task", "worker"),
                                   pk=enrollment_id)
    cohort = _cohort(request, enrollment.cohort_id)
    form = ReasonForm(request.POST, auto_id=f"id_%s_{enrollment.pk}")
    if not form.is_valid():
        errors = [m for ms in form.errors.values() for m in ms]
        return _cohort_page(request, cohort, errors={enrollment.pk: errors}, posted={enrollment.pk: form}, status=400)
    try:
        action(enrollment.pk, actor=_actor(request), reason=form.cleaned_data["reason"])
    except ValidationError as exc:
        return _cohort_page(request, cohort, errors={enrollment.pk: exc.messages}, posted={enrollment.pk: form},
                            status=400)
    except (services.Conflict, TransitionNotAllowed) as exc:
        return _cohort_page(request, cohort, errors={enrollment.pk: [str(exc)]}, posted={enrollment.pk: form},
                            status=409)
    return None


@researcher_required
@require_POST
def enrollment_filter(request: HttpRequest, enrollment_id: int) -> HttpResponse:
    failed = _enrollment_action(request, enrollment_id, services.filter_enrollment)
    if failed is not None:
        return failed
    enrollment = Enrollment.objects.select_related("worker").get(pk=enrollment_id)
    messages.success(request, f"Filtered worker {enrollment.worker.external_id}.")
    return redirect("dashboard-cohort", cohort_id=enrollment.cohort_id)


@researcher_required
@require_POST
def enrollment_reinstate(request: HttpRequest, enrollment_id: int) -> HttpResponse:
    failed = _enrollment_action(request, enrollment_id, services.reinstate_enrollment)
    if failed is not None:
        return failed
    enrollment = Enrollment.objects.select_related("worker").get(pk=enrollment_id)
    messages.success(request, f"Reinstated worker {enrollment.worker.external_id} ({enrollment.state}).")
    return redirect("dashboard-cohort", cohort_id=enrollment.cohort_id)


# ---------------------------------------------------------------- results


def model_rows(study: Study) -> tuple[list[dict], str]:
    """(rows, note): the model rows of ``settings.CLUES_MODEL_ROWS_PROVIDER``; none when it cannot be loaded."""
    path = getattr(settings, "CLUES_MODEL_ROWS_PROVIDER", "")
    if not path:
        return [], ""
    try:
        provider = import_string(path)
    except ImportError:
        return [], ""
    try:
        return list(provider(study)), ""
    except Exception as exc:  # a broken provider must not take the human results down with it
        log.exception("model rows provider %s failed", path)
        return [], f"Model rows could not be loaded ({type(exc).__name__})."


def _num(value) -> float | None:
    if value is None:
        return None
    value = float(value)
    return None if math.isnan(value) else value


def chart(task: str, cells: list[dict], rows: list[dict]) -> dict:
    """S1 (%) against shots for one task: humans (mean ± std) and model rows, as SVG coordinates."""
    xs = list(services.SHOT_CONDITIONS)
    series = [{"name": "Human", "human": True,
               "points": [(c["shots"], _num(c["mean"]), _num(c["std"]), c["n"]) for c in cells if c["task"] == task]}]
    by_model: dict[str, list] = {}
    for r in rows:
        if r.get("task") == task and r.get("shots") in xs:
            label = f"{r.get('method', '')} {r.get('model', '')}".strip()
            by_model.setdefault(label, []).append((int(r["shots"]), _num(r.get("mean")), _num(r.get("std")),
                                                   r.get("n")))
    for label, points in sorted(by_model.items()):
        series.append({"name": label, "human": False, "points": points})
    values = [m - (s or 0) for ser in series for _, m, s, _ in ser["points"] if m is not None]
    lo = max(0, math.floor((min(values, default=60) - 5) / 10) * 10)
    lo = min(lo, 60)
    hi = 100
    pad = CHART_PAD
    plot_w, plot_h = CHART_W - pad["left"] - pad["right"], CHART_H - pad["top"] - pad["bottom"]

    def x_of(k):
        return round(pad["left"] + plot_w * (xs.index(k) + 0.5) / len(xs), 1)

    def y_of(v):
        v = max(lo, min(hi, v))
        return round(pad["top"] + plot_h * (hi - v) / (hi - lo), 1)

    out_series = []
    for i, ser in enumerate(series):
        color = SERIES_COLORS[i % len(SERIES_COLORS)]
        pts = sorted((p for p in ser["points"] if p[1] is not None), key=lambda p: xs.index(p[0]))
        marks = []
        for k, mean, std, n in pts:
            mark = {"x": x_of(k), "y": y_of(mean), "label": f"{k} shots: {mean:.1f}"
                    + (f" ± {std:.1f}" if std is not None else "") + (f" (n={n})" if n is not None else "")}
            if std is not None:
                mark.update(err=True, y1=y_of(mean - std), y2=y_of(mean + std), xl=mark["x"] - 4, xr=mark["x"] + 4)
            marks.append(mark)
        out_series.append({"name": ser["name"], "human": ser["human"], "color": color, "marks": marks,
                           "path": " ".join(f"{m['x']},{m['y']}" for m in marks),
                           "legend_y": CHART_H + 16 + 18 * i})
    ticks = [{"v": v, "y": y_of(v)} for v in range(lo, hi + 1, 10 if hi - lo <= 50 else 20)]
    return {
        "task": task, "name": TASKS[task].name if task in TASKS else task, "w": CHART_W,
        "h": CHART_H + 10 + 18 * len(out_series), "plot_h": CHART_H,
        "left": pad["left"], "right": CHART_W - pad["right"], "top": pad["top"], "bottom": CHART_H - pad["bottom"],
        "mid": round(pad["left"] + plot_w / 2, 1), "ymid": -round(pad["top"] + plot_h / 2, 1),
        "xticks": [{"k": k, "x": x_of(k)} for k in xs], "yticks": ticks, "series": out_series,
        "has_data": any(s["marks"] for s in out_series),
    }


def _table(study: Study, cells: list[dict]) -> dict:
    """Table 5's layout: categories over tasks as columns, one row per shot condition."""
    tasks = [slug for slug in TASKS if slug in study.tasks]
    shots = sorted({c["shots"] for c in cells})
    by = {(c["task"], c["shots"]): c for c in cells}
    groups = []
    for category in Category:
        members = [t for t in tasks if TASKS[t].category is category]
        if members:
            groups.append({"name": category.value.title(), "span": len(members)})
    rows = []
    for k in shots:
        row = []
        for t in tasks:
            c = by.get((t, k))
            row.append({"text": exports.format_cell(c["mean"], c["std"]) if c else exports.MISSING,
                        "n": c["n"] if c else 0})
        rows.append({"shots": k, "cells": row})
    return {"groups": groups, "tasks": [TASKS[t].name for t in tasks], "rows": rows}


@researcher_required
@require_GET
def study_results(request: HttpRequest, study_id: int) -> HttpResponse:
    study = _study(request, study_id)
    cells = selectors.human_table(study)
    rows, note = model_rows(study)
    agreement = selectors.cohort_agreement(study)
    for a in agreement:
        a["task_name"] = TASKS[a["task"]].name if a["task"] in TASKS else a["task"]
    charts = [chart(t, cells, rows) for t in TASKS if t in study.tasks]
    ctx = {"study": study, "table": _table(study, cells), "agreement": agreement, "charts": charts,
           "formats": [(fmt, {"csv": "CSV", "json": "JSON", "md": "Markdown", "tex": "LaTeX"}[fmt])
                       for fmt in exports.TABLE_FORMATS],
           "model_rows": rows, "model_note": note, "note": exports.NOTE}
    return render(request, "dashboard/results.html", ctx)


@researcher_required
@require_GET
def results_download(request: HttpRequest, study_id: int, fmt: str) -> HttpResponse:
    study = _study(request, study_id)
    if fmt not in exports.TABLE_FORMATS:
        raise Http404("unknown format")
    rows = model_rows(study)[0] if request.GET.get("models") == "1" else []
    text = exports.render(exports.table_frame(selectors.human_table(study), rows), fmt)
    response = HttpResponse(text, content_type=exports.CONTENT_TYPES[fmt])
    suffix = "_with_models" if rows else ""
    response["Content-Disposition"] = f'attachment; filename="study{study.pk}_human_table{suffix}.{fmt}"'
    return response
