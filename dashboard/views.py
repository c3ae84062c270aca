"""The researcher dashboard: studies, the live cohort grid and enrollments (results: ``results.views``).

Who may see what is ``annotation.access`` (researchers only; their own studies). Every action goes
through ``annotation.services``; every figure comes from ``annotation.selectors``.
"""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.db.models import Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from annotation import attention, estimates, selectors, services
from annotation.access import actor, cohort_for, enrollment_for, researcher_required, study_for
from annotation.codes import study_codes
from annotation.models import Cohort, Study
from annotation.protocol import (
    ACTIVE_STATES,
    TransitionNotAllowed,
    at_or_below_chance,
    can_filter,
    can_leave_out,
    can_reinstate,
    cohort_status,
)
from clues_http.negotiation import HtmxHttpRequest
from tasks_data.registry import task_name
from tasks_data.selectors import unproducible_training_counts

from . import presentation
from .forms import CloseForm, ReasonForm, StudyForm


def join_url(request: HttpRequest, cohort: Cohort) -> str:
    """The absolute join link with the crowd platform's placeholders."""
    return request.build_absolute_uri(cohort.join_path) + cohort.study.provider.join_query(cohort.study)


# ---------------------------------------------------------------- studies


@researcher_required
@require_GET
def study_list(request: HttpRequest) -> HttpResponse:
    studies = list(selectors.studies_visible_to(request.user).prefetch_related("cohorts"))
    rows = []
    for study in studies:
        cohorts = list(study.cohorts.all())
        rows.append(
            {
                "study": study,
                "tasks": [task_name(s) for s in study.tasks],
                "cohorts": len(cohorts),
                "launched": sum(1 for c in cohorts if c.launched_at and not c.closed_at),
            }
        )
    return render(request, "dashboard/study_list.html", {"rows": rows})


@researcher_required
def study_new(request: HttpRequest) -> HttpResponse:
    status = 200
    if request.method == "POST":
        form = StudyForm(request.POST, owner=request.user)
        if form.is_valid():
            try:
                study = services.create_study(created_by=request.user, **form.service_kwargs())
            except ValidationError as exc:
                form.add_service_errors(exc)
            else:
                for cohort in study.cohorts.select_related("task"):
                    warning = estimates.override_warning(study=study, task=cohort.task, shots=cohort.shots)
                    if warning:
                        messages.warning(request, warning)
                if form.cleaned_data["launch"]:
                    messages.success(
                        request,
                        f"Created the study \u201c{study.name}\u201d and launched its cohorts: "
                        + study.provider.launch_note(study),
                    )
                else:
                    messages.warning(
                        request,
                        f"Created the study \u201c{study.name}\u201d. Its cohorts are not "
                        "launched: their join links refuse workers until you launch them.",
                    )
                return redirect("dashboard-study", study_id=study.pk)
        status = 400
    else:
        form = StudyForm(owner=request.user)
    return render(
        request,
        "dashboard/study_new.html",
        {"form": form, "unproducible": unproducible_training_counts(request.user)},
        status=status,
    )


def _grid_context(study: Study) -> dict:
    rows = selectors.study_grid(study)
    by_cell = {(r["task"], r["shots"]): r for r in rows}
    now = timezone.now()
    attention = selectors.cohort_attention(study, now=now)
    for r in rows:
        flags = attention.get(r["cohort"].pk, {})
        r["idle"], r["below_chance"] = flags.get("idle", 0), flags.get("below_chance", 0)
        r["last_activity"] = flags.get("last_activity")
        if r["last_activity"]:
            r["last_activity_ago"] = presentation.duration(max(0.0, (now - r["last_activity"]).total_seconds()))
        r["meter"] = round(100 * r["test_items_done"] / r["test_items_total"]) if r["test_items_total"] else 0
        r["status"] = cohort_status(
            r["cohort"], enrolled=r["enrolled"], completed=r["completed"], study_open=study.is_open
        ).value
    tasks = list(dict.fromkeys(r["task"] for r in rows))
    shots = sorted({r["shots"] for r in rows})
    matrix = [
        {
            "task": slug,
            "name": task_name(slug),
            "cells": [by_cell.get((slug, k)) for k in shots],
        }
        for slug in tasks
    ]
    return {
        "study": study,
        "grid_rows": rows,
        "matrix": matrix,
        "shots": shots,
        "idle_cap": presentation.duration(study.idle_cap_seconds),
    }


@researcher_required
@require_GET
def study_detail(request: HttpRequest, study_id: int) -> HttpResponse:
    study = study_for(request, study_id)
    ctx = _grid_context(study)
    for r in ctx["grid_rows"]:
        r["join_url"] = join_url(request, r["cohort"])
        r["shots_label"] = f"{r['shots']} shots"
        r["link_state"] = _link_state(r["cohort"], r["status"])
    # A count, not a flag: the page says how many links refuse workers.
    ctx.update(
        listing=estimates.study_listing(study),
        codes=study_codes(study),
        override_warnings=[
            w
            for c in study.cohorts.select_related("task")
            if (w := estimates.override_warning(study=study, task=c.task, shots=c.shots))
        ],
        platform_note=study.provider.link_note(study),
        close_form=CloseForm(),
        any_unlaunched=sum(
            1 for r in ctx["grid_rows"] if r["cohort"].launched_at is None and r["cohort"].closed_at is None
        ),
    )
    return render(request, "dashboard/study_detail.html", ctx)


def _link_state(cohort: Cohort, status: str) -> dict:
    """What the crowd platform adds about an open join link: why it takes no one yet, or how its workers are checked
    and paid (``CrowdProvider.not_open_reason``, ``link_status_note``). Asked whatever the status (the template shows
    it for an open link only), so that a page's queries do not depend on its cohorts' progress."""
    provider = cohort.study.provider
    return {"not_open": provider.not_open_reason(cohort), "note": provider.link_status_note(cohort)}


@researcher_required
@require_GET
def study_grid_fragment(request: HttpRequest, study_id: int) -> HttpResponse:
    study = study_for(request, study_id)
    return render(request, "dashboard/_grid.html", _grid_context(study))


@researcher_required
@require_POST
def study_launch(request: HttpRequest, study_id: int) -> HttpResponse:
    study = study_for(request, study_id)
    try:
        count = services.launch_cohorts(study=study, actor=actor(request))
    except services.Conflict as exc:
        messages.error(request, f"Not launched: {exc}.")
    else:
        messages.success(request, f"Launched {count} cohort{'s' if count != 1 else ''}.")
    return redirect("dashboard-study", study_id=study.pk)


@researcher_required
@require_POST
def study_close(request: HttpRequest, study_id: int) -> HttpResponse:
    study = study_for(request, study_id)
    form = CloseForm(request.POST)
    reason = form.cleaned_data["reason"] if form.is_valid() else ""
    services.close_study(study=study, actor=actor(request), reason=reason)
    messages.success(request, "Closed the study: its join links take no new workers.")
    return redirect("dashboard-study", study_id=study.pk)


@researcher_required
@require_POST
def cohort_launch(request: HttpRequest, cohort_id: int) -> HttpResponse:
    cohort = cohort_for(request, cohort_id)
    try:
        services.launch_cohorts(study=cohort.study, cohorts=[cohort], actor=actor(request))
    except services.Conflict as exc:
        messages.error(request, f"Not launched: {exc}.")
    else:
        messages.success(request, f"Launched {cohort.task.spec.name} {cohort.shots}-shot.")
    return redirect("dashboard-study", study_id=cohort.study_id)


# Closing and re-opening a cohort: a confirmation page with a required reason (kept in the audit
# log). Without JavaScript the "Close…" / "Re-open…" links open the page; with htmx they load its
# form (``_cohort_confirm.html``) beside the links. The form itself always posts natively and
# redirects, so both paths end on the same page.
CONFIRM = {
    "close": {
        "title": "Close",
        "verb": "Close the cohort",
        "done": "Closed",
        "effect": "Its join link stops taking new workers at once. Workers already in it keep going "
        "and are paid as usual. You can re-open it later while it has places left.",
    },
    "reopen": {
        "title": "Re-open",
        "verb": "Re-open the cohort",
        "done": "Re-opened",
        "effect": "Its join link takes new workers again, up to the cohort's target.",
    },
}


def _confirm_back(request: HttpRequest, cohort: Cohort) -> str:
    """Where the confirmation returns: the cohort page when it came from there, else the study page."""
    source = request.POST.get("back") or request.GET.get("back")
    if source == "cohort":
        return reverse("dashboard-cohort", args=[cohort.pk])
    return reverse("dashboard-study", args=[cohort.study_id])


def _cohort_slots(cohort: Cohort) -> dict:
    grid = next((g for g in selectors.study_grid(cohort.study) if g["cohort"].pk == cohort.pk), None)
    return grid or {"enrolled": 0, "target": cohort.target, "completed": 0, "filtered": 0}


def _cohort_confirm(request: HtmxHttpRequest, cohort: Cohort, action: str, service) -> HttpResponse:
    form = ReasonForm(request.POST or None, auto_id="id_confirm_%s")
    form.fields["reason"].widget.attrs["autofocus"] = True  # htmx focuses it when the form is swapped in
    back = _confirm_back(request, cohort)
    status, errors = 200, []
    if request.method == "POST":
        if action == "close" and cohort.closed_at is not None:
            status, errors = 409, ["this cohort is already closed"]
        elif form.is_valid():
            try:
                service(cohort=cohort, actor=actor(request), reason=form.cleaned_data["reason"])
            except (services.Conflict, ValidationError) as exc:
                status, errors = 409, (exc.messages if isinstance(exc, ValidationError) else [str(exc)])
            else:
                done = f"{CONFIRM[action]['done']} {cohort.task.spec.name} {cohort.shots}-shot."
                if request.htmx:
                    return _cohort_changed(request, cohort, back=back, done=done)
                messages.success(request, done)
                return redirect(back)
        else:
            status = 400
    elif request.method != "GET":
        return HttpResponse(status=405, headers={"Allow": "GET, POST"})
    slots = _cohort_slots(cohort)
    ctx = {
        "cohort": cohort,
        "study": cohort.study,
        "action": action,
        "text": CONFIRM[action],
        "form": form,
        "errors": errors,
        "back": back,
        "back_to": "cohort" if back.startswith("/dashboard/cohorts/") else "study",
        "slots": slots,
        "url": reverse(f"dashboard-cohort-{action}", args=[cohort.pk]),
    }
    # With htmx the form sits beside the links (and posts with htmx); without, it is a page of its own.
    ctx["inline"] = bool(request.htmx)
    template = "dashboard/_cohort_confirm.html" if request.htmx else "dashboard/cohort_confirm.html"
    return render(request, template, ctx, status=status)


def _cohort_changed(request: HtmxHttpRequest, cohort: Cohort, *, back: str, done: str) -> HttpResponse:
    """A cohort closed or re-opened from a form swapped in with htmx: the page it came from is updated in place
    (``_cohort_changed.html``), not reloaded: the researcher keeps their place."""
    study = Study.objects.get(pk=cohort.study_id)
    cohort = Cohort.objects.select_related("task").get(pk=cohort.pk)
    slots = _cohort_slots(cohort)
    status = cohort_status(
        cohort, enrolled=slots["enrolled"], completed=slots["completed"], study_open=study.is_open
    ).value
    ctx = {
        "done": done,
        "cohort": cohort,
        "study": study,
        "status": status,
        "grid": slots,
        "join_url": join_url(request, cohort),
        "back_to": "cohort" if back.startswith("/dashboard/cohorts/") else "study",
        "r": {
            "cohort": cohort,
            "task_name": cohort.task.spec.name,
            "shots": cohort.shots,
            "shots_label": f"{cohort.shots} shots",
            "status": status,
            "join_url": join_url(request, cohort),
            "enrolled": slots["enrolled"],
        },
    }
    return render(request, "dashboard/_cohort_changed.html", ctx)


@researcher_required
def cohort_close(request: HtmxHttpRequest, cohort_id: int) -> HttpResponse:
    cohort = cohort_for(request, cohort_id)
    if cohort.closed_at is not None and request.method == "GET":
        messages.info(request, f"{cohort.task.spec.name} {cohort.shots}-shot is already closed.")
        if request.htmx:  # a stale page: reload it whole rather than swap a page into the form's place
            return HttpResponse(status=204, headers={"HX-Redirect": _confirm_back(request, cohort)})
        return redirect(_confirm_back(request, cohort))
    return _cohort_confirm(request, cohort, "close", services.close_cohort)


@researcher_required
def cohort_reopen(request: HtmxHttpRequest, cohort_id: int) -> HttpResponse:
    return _cohort_confirm(request, cohort_for(request, cohort_id), "reopen", services.reopen_cohort)


# ---------------------------------------------------------------- cohorts and enrollments


def _activity(row: dict, last, now, idle_cap_seconds: int, active: bool) -> None:
    """Last activity and idle time of a worker: idle past the study's idle cap, the
    point where their active time (and pay) stops counting, while they are still in a step."""
    seconds = max(0.0, (now - last).total_seconds())
    row.update(
        last_activity=last,
        idle_seconds=seconds if active else None,
        idle_for=presentation.duration(seconds),
        idle=active and seconds > idle_cap_seconds,
    )


def _cohort_events(cohort: Cohort):
    """The cohort's recent audit rows: its enrollments' and its own closing and re-opening (those
    rows name the cohort as "<task> <k>-shot" at the start of the reason, see services.close_cohort)."""
    label = f"{cohort.task.slug} {cohort.shots}-shot"
    own = Q(enrollment__isnull=True, action__in=("close cohort", "reopen cohort")) & (
        Q(reason=label) | Q(reason__startswith=f"{label}: ")
    )
    events = list(
        selectors.audit_log(cohort.study).filter(Q(enrollment__cohort=cohort) | own).order_by("-at", "-id")[:30]
    )
    for ev in events:
        ev.reason_text = presentation.audit_reason(ev.reason or "")  # type: ignore[attr-defined]  # for the template
    return events


def _cohort_rows(cohort: Cohort, *, errors: dict | None = None, posted: dict | None = None, only: int | None = None):
    """The cohort page's workers (``only``: that enrollment's row alone) and the cohort's training chance level."""
    rows = selectors.cohort_enrollments(cohort)
    if only is not None:
        rows = [r for r in rows if r["enrollment"].pk == only]
    now = timezone.now()
    last = selectors.last_activity([r["enrollment"] for r in rows])
    chance = selectors.training_chance([cohort.training_set_id]).get(cohort.training_set_id)
    checks = attention.cohort_results(cohort) if cohort.study.has_attention_checks else {}
    for r in rows:
        e = r["enrollment"]
        _activity(r, last[e.pk], now, cohort.study.idle_cap_seconds, e.state in ACTIVE_STATES)
        r["below_chance"] = at_or_below_chance(r["training_s1"], chance)
        r["attention"] = checks.get(e.pk)  # answered and failed attention checks: shown, never acted on
        r["spark"] = presentation.sparkline(r["learning_curve"])
        r["quirks"] = sum(r["learning_curve_unproducible"])  # training items whose gold cannot be marked exactly
        for bar, quirk in zip((r["spark"] or {}).get("bars", ()), r["learning_curve_unproducible"], strict=False):
            bar["quirk"] = quirk
        r["active"] = presentation.duration(r["active_seconds"])
        r["gaps"] = [presentation.duration(g) for g in r["longest_gaps"]]
        r["can_filter"] = can_filter(e.state, r["test_done"])
        r["can_reinstate"] = can_reinstate(e.state)
        # Offered where a flag asks for an action and filtering is closed.
        r["can_leave_out"] = can_leave_out(e.state, r["test_done"], e.left_out) and bool(
            r["below_chance"] or (r["attention"] or {}).get("failed") or r.get("fast_answers")
        )
        r["left_out"] = e.left_out
        if r["can_filter"]:
            r["action_url"] = reverse("dashboard-filter", args=[e.pk])
        elif r["can_reinstate"]:
            r["action_url"] = reverse("dashboard-reinstate", args=[e.pk])
        elif r["left_out"]:
            r["action_url"] = reverse("dashboard-put-back", args=[e.pk])
        else:
            r["action_url"] = reverse("dashboard-leave-out", args=[e.pk])
        r["errors"] = (errors or {}).get(e.pk, [])
        r["form"] = (posted or {}).get(e.pk) or ReasonForm(auto_id=f"id_%s_{e.pk}")
    return rows, chance


def _row_context(cohort: Cohort, chance) -> dict:
    return {
        "chance": chance,
        "has_checks": cohort.study.has_attention_checks,
        "min_answer_seconds": cohort.task.spec.min_answer_seconds,
    }


def _cohort_page(
    request: HttpRequest,
    cohort: Cohort,
    *,
    errors: dict | None = None,
    status: int = 200,
    posted: dict | None = None,
    row: int | None = None,
    done: str = "",
) -> HttpResponse:
    """The cohort page; to an htmx request about one worker (``row``), that worker's row alone (with ``done``,
    what the action did), swapped in place so that the researcher keeps their place in a long table."""
    if row is not None and request.headers.get("HX-Request"):
        rows, chance = _cohort_rows(cohort, errors=errors, posted=posted, only=row)
        if rows:
            rows[0]["done"] = done
            ctx = {"r": rows[0], "study": cohort.study, **_row_context(cohort, chance)}
            return render(request, "dashboard/_enrollment_row.html", ctx, status=status)
    rows, chance = _cohort_rows(cohort, errors=errors, posted=posted)
    grid = _cohort_slots(cohort)
    recruitment = cohort_status(
        cohort, enrolled=grid["enrolled"], completed=grid["completed"], study_open=cohort.study.is_open
    ).value
    ctx = {
        "cohort": cohort,
        "study": cohort.study,
        "rows": rows,
        "grid": grid,
        "status": recruitment,
        "idle_cap": presentation.duration(cohort.study.idle_cap_seconds),
        "n_idle": sum(1 for r in rows if r["idle"]),
        "n_below_chance": sum(1 for r in rows if r["below_chance"]),
        "join_url": join_url(request, cohort),
        "link_state": _link_state(cohort, recruitment),
        "events": _cohort_events(cohort),
        **_row_context(cohort, chance),
    }
    return render(request, "dashboard/cohort_detail.html", ctx, status=status)


@researcher_required
@require_GET
def cohort_detail(request: HttpRequest, cohort_id: int) -> HttpResponse:
    return _cohort_page(request, cohort_for(request, cohort_id))


def _enrollment_action(request: HttpRequest, enrollment_id: int, action) -> HttpResponse | None:
    """None once ``action`` is done; else the cohort page with the refusal."""
    enrollment = enrollment_for(request, enrollment_id)
    cohort = enrollment.cohort
    form = ReasonForm(request.POST, auto_id=f"id_%s_{enrollment.pk}")
    if not form.is_valid():
        errors = [m for ms in form.errors.values() for m in ms]
        return _cohort_page(
            request, cohort, errors={enrollment.pk: errors}, posted={enrollment.pk: form}, status=400, row=enrollment.pk
        )
    try:
        action(enrollment_id=enrollment.pk, actor=actor(request), reason=form.cleaned_data["reason"])
    except ValidationError as exc:
        return _cohort_page(
            request,
            cohort,
            errors={enrollment.pk: exc.messages},
            posted={enrollment.pk: form},
            status=400,
            row=enrollment.pk,
        )
    except (services.Conflict, TransitionNotAllowed) as exc:
        return _cohort_page(
            request,
            cohort,
            errors={enrollment.pk: [str(exc)]},
            posted={enrollment.pk: form},
            status=409,
            row=enrollment.pk,
        )
    return None


def _enrollment_post(request: HttpRequest, enrollment_id: int, service, done: str) -> HttpResponse:
    """A researcher's action on one worker (with a reason): the cohort page, with the row's error or ``done``
    (formatted with the enrollment's state): in the worker's row (htmx), else as a message naming the worker."""
    failed = _enrollment_action(request, enrollment_id, service)
    if failed is not None:
        return failed
    enrollment = enrollment_for(request, enrollment_id)
    said = done.format(state=enrollment.state)
    if request.headers.get("HX-Request"):
        return _cohort_page(request, enrollment.cohort, row=enrollment.pk, done=said)
    messages.success(request, f"Worker {enrollment.worker.external_id}: {said[0].lower()}{said[1:]}")
    return redirect("dashboard-cohort", cohort_id=enrollment.cohort_id)


@researcher_required
@require_POST
def enrollment_filter(request: HttpRequest, enrollment_id: int) -> HttpResponse:
    return _enrollment_post(request, enrollment_id, services.filter_enrollment, "Filtered.")


@researcher_required
@require_POST
def enrollment_reinstate(request: HttpRequest, enrollment_id: int) -> HttpResponse:
    return _enrollment_post(request, enrollment_id, services.reinstate_enrollment, "Reinstated ({state}).")


@researcher_required
@require_POST
def enrollment_leave_out(request: HttpRequest, enrollment_id: int) -> HttpResponse:
    return _enrollment_post(
        request,
        enrollment_id,
        services.leave_out_of_results,
        "Left out of the results (keeps the place and the pay).",
    )


@researcher_required
@require_POST
def enrollment_put_back(request: HttpRequest, enrollment_id: int) -> HttpResponse:
    return _enrollment_post(request, enrollment_id, services.put_back_in_results, "Counted in the results again.")
