"""The dashboard's Prolific page of a study: token, publish, sync, bonuses (the rules: this app's modules)."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from annotation.access import actor, researcher_required, study_for
from annotation.estimates import study_listing
from annotation.models import Study

from . import bonuses, client, records, tokens, webhooks
from .models import ProlificPart
from .publish import publish as publish_study
from .sync import awaiting_review
from .sync import reviews as sync_reviews
from .sync import sync as sync_study


def _page(request: HttpRequest, study: Study, *, status: int = 200, **extra) -> HttpResponse:
    return render(
        request,
        "recruitment/study.html",
        status=status,
        context={
            "study": study,
            "cohorts": study.cohorts.select_related("task", "prolific").order_by("task__slug", "shots"),
            "manual_review": records.manual_review(study),
            "has_token": tokens.has_token(study),
            "can_store": bool(settings.PROLIFIC_TOKEN_KEY),
            "listing": study_listing(study),
            "bonuses": bonuses.bonus_rows(study),
            "awaiting_review": awaiting_review(study),
            "published": _published(study),
            "reviews": sync_reviews(study)[:200],
            "money": bonuses.money_states(study),
            **extra,
        },
    )


def _published(study: Study) -> list[dict]:
    """The study's parts on Prolific with what each was published with (amounts in the major unit)."""
    rows = (
        ProlificPart.objects.filter(cohort__study=study)
        .exclude(prolific_study_id="")
        .select_related("cohort__task")
        .order_by("cohort__task__slug", "cohort__shots", "number")
    )
    return [
        {
            "part": row,
            "reward": None if row.reward is None else row.reward / 100,
            "screenout": None if row.screenout_reward is None else row.screenout_reward / 100,
        }
        for row in rows
    ]


@researcher_required
def study_prolific(request: HttpRequest, study_id: int) -> HttpResponse:
    return _page(request, study_for(request, study_id))


@researcher_required
@require_POST
def store_token(request: HttpRequest, study_id: int) -> HttpResponse:
    study = study_for(request, study_id)
    try:
        tokens.store_token(request.user, request.POST.get("token", ""))
    except (ValueError, tokens.TokenKeyMissing) as exc:
        return _page(request, study, status=400, error=str(exc))
    return _page(request, study, notice="Your Prolific token is stored (encrypted); it will not be shown again.")


@researcher_required
@require_POST
def publish(request: HttpRequest, study_id: int) -> HttpResponse:
    study = study_for(request, study_id)
    site = settings.PROLIFIC_SITE_URL or request.build_absolute_uri("/")
    try:
        lines = publish_study(study, site_url=site, draft=bool(request.POST.get("draft")), actor=actor(request))
    except (ValueError, client.ProlificError) as exc:
        return _page(request, study, status=400, error=str(exc))
    return _page(request, study, notice=f"{len(lines)} cohort(s) on Prolific.")


@researcher_required
@require_POST
def sync(request: HttpRequest, study_id: int) -> HttpResponse:
    study = study_for(request, study_id)
    try:
        report = sync_study(study, actor=actor(request))
    except client.ProlificError as exc:
        return _page(request, study, status=502, error=str(exc))
    return _page(
        request,
        study,
        report=report,
        notice=(
            f"Synced: {len(report.freed)} place(s) freed, {len(report.approved)} approved, "
            f"{len(report.verified)} verified, {len(report.attention)} for you to review "
            f"({len(report.return_requested)} asked to return their submission now; "
            f"{report.filtered_with_completion_code} filtered worker(s) sent the completion code), "
            f"{len(report.expired)} unverified join(s) expired."
        ),
    )


@researcher_required
@require_POST
def pay(request: HttpRequest, study_id: int) -> HttpResponse:
    study = study_for(request, study_id)
    try:
        report = bonuses.pay_bonuses(study, actor=actor(request))
    except ValueError as exc:
        return _page(request, study, status=400, error=str(exc))
    states = bonuses.money_states(study)  # the ledger, not only this run: an earlier interrupted call stays unknown
    return _page(
        request,
        study,
        pay_report=report,
        notice=(
            f"Bonuses: {len(report.paid)} paid now, {len(report.failed)} refused; {states.in_flight_count} in flight "
            f"in another pay run; {states.unknown_count} unknown (see below how to settle)."
        ),
    )


@csrf_exempt  # Prolific signs its events (X-Prolific-Request-Signature): no cookie, no CSRF token
@require_POST
def prolific_hook(request: HttpRequest) -> HttpResponse:
    """Prolific's webhook target: verify, de-duplicate, act (``recruitment.webhooks``)."""
    outcome = webhooks.receive(
        request.body,
        signature=request.headers.get("X-Prolific-Request-Signature", ""),
        timestamp=request.headers.get("X-Prolific-Request-Timestamp", ""),
        event_id=request.headers.get("X-Event-ID", ""),
    )
    return HttpResponse(outcome.detail, status=outcome.status, content_type="text/plain")
