"""Prolific's side of the protocol: a join checked against Prolific, and the sync that reconciles.

Nothing here ever rejects a submission (irreversible on Prolific, and it needs a written reason:
the researcher's call). The sync frees the places of returned and timed-out submissions, verifies
enrollments admitted while Prolific could not be asked, approves completed work carrying the
study's code, and lists everything else for the researcher.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import transaction

from annotation.models import Cohort, Enrollment, Study
from annotation.protocol import JoinRefusal, JoinRefused, State, transition

from . import client as prolific
from .audit import audit
from .places import give_back_places
from .tokens import client_for, on_prolific

VERIFIED, UNVERIFIED = Enrollment.VERIFIED, Enrollment.UNVERIFIED


def verify_join(cohort: Cohort, pid: str, data: dict) -> str:
    """Check a Prolific join against Prolific: "" (not checked), "verified" or "unverified" (unreachable).

    Raises JoinRefused (403) when the submission does not exist, is another participant's or
    another study's, or is not RESERVED/ACTIVE.
    """

    study = cohort.study
    if not on_prolific(study) or not cohort.platform_study_id:
        return ""
    client = client_for(study)
    if client is None:
        return ""
    session_id = data.get("SESSION_ID", "")
    refused = ("Prolific does not know this submission for this study; please open the study from Prolific "
               "again (the link must carry your own SESSION_ID)")
    if not prolific.SAFE_ID.match(session_id):
        raise JoinRefused(JoinRefusal.NOT_VERIFIED, refused, study.platform)
    try:
        with client:
            submission = client.get_submission(session_id)
    except prolific.ProlificUnreachable as exc:
        audit(study, "prolific verify unreachable", f"{pid}: {exc}")
        return UNVERIFIED
    except prolific.ProlificError as exc:
        if exc.status == 404:
            raise JoinRefused(JoinRefusal.NOT_VERIFIED, refused, study.platform) from None
        audit(study, "prolific verify failed", f"{pid}: {exc}")
        return UNVERIFIED
    participant = str(submission.get("participant") or "").lower()  # the single submission's field name
    if participant != pid or submission.get("study_id") != cohort.platform_study_id:
        raise JoinRefused(JoinRefusal.NOT_VERIFIED, refused, study.platform)
    if submission.get("status") not in (prolific.RESERVED, prolific.ACTIVE):
        raise JoinRefused(JoinRefusal.NOT_VERIFIED, "your Prolific submission for this study is no longer active "
                               f"({str(submission.get('status'))[:30].lower()})", study.platform)
    return VERIFIED


@dataclass
class SyncReport:
    freed: list[str] = field(default_factory=list)
    approved: list[str] = field(default_factory=list)
    verified: list[str] = field(default_factory=list)
    attention: list[tuple[str, str, str]] = field(default_factory=list)  # (submission, participant, reason)
    places: dict[str, int] = field(default_factory=dict)


_FREES = {prolific.RETURNED: State.WITHDRAWN, prolific.REJECTED: State.WITHDRAWN, prolific.TIMED_OUT: State.EXPIRED}


def sync(study: Study, *, actor: str = "system") -> SyncReport:
    """Read every cohort's submissions on Prolific and reconcile (see the module docstring)."""
    report = SyncReport()
    client = client_for(study)
    if client is None:
        return report
    with client:
        for cohort in study.cohorts.exclude(platform_study_id="").select_related("task"):
            enrollments = {e.worker.external_id: e for e in
                           Enrollment.objects.filter(cohort=cohort).select_related("worker")}
            for sub in client.study_submissions(cohort.platform_study_id):
                _reconcile(client, study, cohort, sub, enrollments, report, actor)
            # The safety net of the give-back queued when a place is freed (``place_freed``).
            report.places[cohort.platform_study_id] = give_back_places(cohort.pk, actor=actor)
    return report


def _reconcile(client, study, cohort, sub: dict, enrollments: dict, report: SyncReport, actor: str) -> None:
    sub_id, status = str(sub.get("id", "")), sub.get("status", "")
    pid = str(sub.get("participant_id") or "").lower()  # the list's field name (get-study-submissions)
    enrollment = enrollments.get(pid)
    if enrollment is None:
        if status == prolific.AWAITING_REVIEW:
            report.attention.append((sub_id, pid, "no enrollment here for this participant"))
        return
    with transaction.atomic():
        enrollment = Enrollment.objects.select_for_update().select_related("cohort__study").get(pk=enrollment.pk)
        if enrollment.verification == UNVERIFIED and sub_id == enrollment.platform_session:
            enrollment.verification = VERIFIED
            enrollment.save(update_fields=["verification"])
            report.verified.append(pid)
            audit(study, "prolific verified", f"submission {sub_id}", enrollment, actor)
        if enrollment.platform_status != status:
            enrollment.platform_status = status[:20]
            enrollment.save(update_fields=["platform_status"])
        if status in _FREES and enrollment.state in (State.TRAINING, State.TESTING):
            transition(enrollment, _FREES[status], actor=actor, action="prolific " + status.lower(),
                       reason=f"Prolific status {status}: the place is free again")
            report.freed.append(pid)
            return
    if status != prolific.AWAITING_REVIEW:
        return
    code = str(sub.get("study_code") or "")
    if enrollment.state == State.FILTERED:
        return  # paid by Prolific's screen-out handling
    if enrollment.state != State.COMPLETED:
        report.attention.append((sub_id, pid, f"the enrollment is {enrollment.state}, not completed"))
    elif code != study.completion_code:
        report.attention.append((sub_id, pid, "the submission carries another code than the study's"))
    elif enrollment.verification == UNVERIFIED:
        report.attention.append((sub_id, pid, "the enrollment is not verified (another SESSION_ID)"))
    elif study.manual_review:
        report.attention.append((sub_id, pid, "completed with the right code; the study is set to manual review"))
    else:
        try:
            client.approve(sub_id)
        except prolific.ProlificError as exc:
            audit(study, "prolific approve failed", f"{sub_id}: {exc}", enrollment, actor)
            report.attention.append((sub_id, pid, f"approval failed: {exc}"))
            return
        Enrollment.objects.filter(pk=enrollment.pk).update(platform_status=prolific.APPROVED)
        audit(study, "prolific approve", f"submission {sub_id}", enrollment, actor)
        report.approved.append(pid)
