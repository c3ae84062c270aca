"""Prolific webhooks: a submission's status change is acted on at once; the periodic sync stays the safety net.

References (Prolific API v1):
- subscribing (a workspace secret, then a subscription to an event type with a public https target URL,
  confirmed with the ``X-Hook-Secret`` header): https://docs.prolific.com/api-reference/webhooks/subscribing
  and https://docs.prolific.com/documentation/core-concepts/monitoring-study-progress;
- the ``submission.status.change`` payload (``resource_id`` = the submission, ``participant_id``,
  ``status``): https://docs.prolific.com/api-reference/webhooks/receiving;
- verifying: ``X-Prolific-Request-Signature`` is base64(HMAC-SHA256(secret, timestamp + body)) and
  ``X-Prolific-Request-Timestamp`` a UNIX time: https://docs.prolific.com/api-reference/webhooks/verifying;
- at-least-once delivery, the same ``X-Event-ID`` on every redelivery:
  https://docs.prolific.com/api-reference/webhooks/idempotency-and-the-x-event-id-header.

An event is only a hint: what is done follows the submission as Prolific reports it when asked
(``client.get_submission``), through the sync's own reconciliation (``sync.reconcile_submission``). So
a replayed or reordered event can do nothing the sync would not, and the two are idempotent together.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError, transaction

from annotation.models import Enrollment, Study

from . import client as prolific
from . import records
from .audit import audit
from .models import WebhookEvent, WebhookSubscription
from .sync import SyncReport, reconcile_submission
from .tokens import client_for, seal, unseal

HOOK_PATH = "/prolific/hooks/"
MAX_BODY = 10_000  # bytes: Prolific's events are a few fields


def subscribe(client: prolific.ProlificClient, study: Study, *, site_url: str, actor: str = "system") -> str:
    """Subscribe the platform to submission status changes in the workspace (once per workspace and URL).

    Returns what was done, for the researcher. Never raises for Prolific's answer: without a
    subscription the periodic sync does the same work, later.
    """
    workspace = getattr(settings, "PROLIFIC_WORKSPACE_ID", "")
    target = site_url.rstrip("/") + HOOK_PATH
    if not workspace:
        return "webhooks: no PROLIFIC_WORKSPACE_ID, the sync alone follows submissions"
    if not target.startswith("https://"):
        return "webhooks: Prolific calls only a public https:// address; the sync alone follows submissions"
    if WebhookSubscription.objects.filter(workspace_id=workspace, target_url=target).exists():
        return "webhooks: already subscribed"
    try:
        secret = client.create_hook_secret(workspace)
        value = str(secret.get("value") or secret.get("secret") or "")
        if not value:
            raise prolific.ProlificError("Prolific's answer has no secret")
        subscription, hook_secret = client.create_hook_subscription(
            event_type=prolific.SUBMISSION_STATUS_CHANGE, target_url=target, workspace_id=workspace
        )
        client.confirm_hook_subscription(str(subscription["id"]), hook_secret)
    except (prolific.ProlificError, KeyError) as exc:
        audit(
            study,
            "prolific webhooks not set up",
            f"{type(exc).__name__}: the sync alone follows submissions",
            actor=actor,
        )
        return "webhooks: not set up (Prolific refused or did not answer); the sync alone follows submissions"
    WebhookSubscription.objects.update_or_create(
        workspace_id=workspace,
        target_url=target,
        defaults={"subscription_id": str(subscription["id"]), "secret_encrypted": seal(value)},
    )
    audit(study, "prolific webhooks", f"subscribed to {prolific.SUBMISSION_STATUS_CHANGE} at {target}", actor=actor)
    return "webhooks: subscribed"


@dataclass
class Outcome:
    status: int  # the HTTP status to answer Prolific (a 5xx makes it deliver the event again)
    detail: str


def _signature(secret: str, timestamp: str, body: bytes) -> bytes:
    return base64.b64encode(hmac.new(secret.encode(), timestamp.encode() + body, hashlib.sha256).digest())


def verify(body: bytes, *, signature: str, timestamp: str, now: float | None = None) -> str | None:
    """Why the request is not an authentic, fresh event from Prolific, or None when it is."""
    if not signature or not timestamp:
        return "unsigned"
    try:
        sent = int(timestamp)
    except ValueError:
        return "bad timestamp"
    window = settings.PROLIFIC_WEBHOOK_WINDOW_SECONDS
    if abs((now if now is not None else time.time()) - sent) > window:
        return "stale"  # outside the replay window: a recorded event sent again later
    given = signature.encode()
    for sealed in WebhookSubscription.objects.values_list("secret_encrypted", flat=True):
        secret = unseal(sealed)
        if secret and hmac.compare_digest(_signature(secret, timestamp, body), given):
            return None
    return "bad signature"


def receive(body: bytes, *, signature: str, timestamp: str, event_id: str) -> Outcome:
    """Verify, de-duplicate and act on one event (the view only translates HTTP)."""
    if len(body) > MAX_BODY:
        return Outcome(413, "too large")
    problem = verify(body, signature=signature, timestamp=timestamp)
    if problem:
        return Outcome(401, problem)
    try:
        event = json.loads(body)
    except (ValueError, RecursionError):  # nesting deep enough to exhaust the decoder's recursion: not an event
        return Outcome(400, "not JSON")
    if not isinstance(event, dict):
        return Outcome(400, "not an event")
    event_type = str(event.get("event_type") or "")[:50]
    # The X-Event-ID header is the event's identity across redeliveries; without it, the signed body is.
    key = (event_id or "body:" + hashlib.sha256(timestamp.encode() + body).hexdigest())[:100]
    try:
        with transaction.atomic():
            WebhookEvent.objects.create(event_id=key, event_type=event_type, status=str(event.get("status") or "")[:20])
            if event_type != prolific.SUBMISSION_STATUS_CHANGE:
                return Outcome(200, "ignored")
            return _act(str(event.get("resource_id") or ""))
    except IntegrityError:
        return Outcome(200, "duplicate")
    except prolific.ProlificUnreachable:
        return Outcome(503, "Prolific unreachable: deliver again")  # rolled back: not recorded as handled
    except prolific.ProlificError as exc:
        if exc.status is not None and exc.status >= 500:
            return Outcome(503, "Prolific unavailable: deliver again")
        return Outcome(200, "Prolific does not confirm it")


def _act(submission_id: str) -> Outcome:
    if not prolific.SAFE_ID.match(submission_id):
        return Outcome(200, "not a submission id")
    enrollment = (
        Enrollment.objects.exclude(verification=Enrollment.SUPERSEDED)
        .filter(cohort__prolific__prolific_study_id__gt="")
        .select_related("cohort__study", "cohort__task", "cohort__prolific", "worker")
        .filter(platform_session=submission_id)
        .first()
    )
    if enrollment is None:
        return Outcome(200, "no enrollment here for this submission")  # the sync lists it if it needs review
    study = enrollment.cohort.study
    client = client_for(study)
    if client is None:
        return Outcome(200, "no Prolific token for this study")
    with client:
        submission = client.get_submission(submission_id)  # the truth, whatever the event said
        part = records.part_studies(enrollment.cohort).get(str(submission.get("study_id") or ""))
        if part is None:
            return Outcome(200, "not this cohort's submission")
        row = {
            "id": submission_id,
            "participant_id": submission.get("participant"),
            "status": submission.get("status"),
            "study_code": submission.get("study_code") or submission.get("entered_code"),
        }
        report = SyncReport()
        reconcile_submission(
            client,
            study,
            enrollment.cohort,
            row,
            {enrollment.worker.external_id: enrollment},
            report,
            actor="prolific webhook",
            part=part,
        )
    return Outcome(200, "handled")
