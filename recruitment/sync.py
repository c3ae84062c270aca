"""Prolific's side of the protocol: a join checked against Prolific, and the sync that reconciles.

Nothing here ever rejects a submission (irreversible on Prolific, and it needs a written reason:
the researcher's call). The sync frees the places of returned and timed-out submissions, verifies
enrollments admitted while Prolific could not be asked, approves completed work carrying the
study's code, and lists everything else for the researcher.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from annotation.estimates import cohort_estimate
from annotation.models import Answer, Cohort, Enrollment, Study
from annotation.protocol import ACTIVE_STATES, State, part_code, transition
from annotation.results_changes import results_changed
from crowd import NotVerified

from . import client as prolific
from . import records
from .audit import audit
from .models import ProlificSubmission
from .places import give_back_places
from .tokens import client_for, on_prolific

VERIFIED, UNVERIFIED, SUPERSEDED = Enrollment.VERIFIED, Enrollment.UNVERIFIED, Enrollment.SUPERSEDED


REFUSED = (
    "Prolific does not know this submission for this study; please open the study from Prolific "
    "again (the link must carry your own SESSION_ID)"
)
CANNOT_CHECK = (
    "this study cannot check your Prolific session right now (Prolific refused the study's request); "
    "please do not start it: return to Prolific and try again later, or message the researcher "
    "through Prolific"
)


def verify_join(cohort: Cohort, pid: str, data: dict, *, returning: bool = False) -> str:
    """Check a Prolific join against Prolific: "" (not checked), "verified" or "unverified".

    Fails closed: "unverified" only when Prolific could not be asked (a network failure or a
    timeout, or a 5xx after the client's retries); any other answer refuses the join
    (``crowd.NotVerified``): a 404 or a submission that is another participant's or another study's,
    one no longer RESERVED/ACTIVE, and a 400/401/403/429 (a revoked token admits nobody).
    ``returning``: the participant already has an enrollment and comes back from another browser.
    """
    study = cohort.study
    if not on_prolific(study):
        return ""
    part_studies = records.part_studies(cohort)
    if not part_studies:
        return ""
    client = client_for(study)
    if client is None:
        return ""
    session_id = data.get("SESSION_ID", "")
    if not prolific.SAFE_ID.match(session_id):
        raise NotVerified(REFUSED)
    try:
        with client:
            submission = client.get_submission(session_id)
    except prolific.ProlificUnreachable:
        audit(
            study,
            "prolific verify unreachable",
            "Prolific could not be reached; admitted unverified"
            if not returning
            else "Prolific could not be reached; a returning participant was asked to retry",
        )
        return UNVERIFIED
    except prolific.ProlificError as exc:
        if exc.status == 404:
            raise NotVerified(REFUSED) from None
        if exc.status is not None and exc.status >= 500:  # after the client's retries: Prolific is down
            audit(study, "prolific verify unreachable", f"Prolific answered {exc.status}; admitted unverified")
            return UNVERIFIED
        audit(study, "prolific verify refused", f"Prolific answered {exc.status}: the join was refused")
        raise NotVerified(CANNOT_CHECK) from None
    participant = str(submission.get("participant") or "").lower()  # the single submission's field name
    if participant != pid or submission.get("study_id") not in part_studies:
        raise NotVerified(REFUSED)
    if submission.get("status") not in (prolific.RESERVED, prolific.ACTIVE):
        raise NotVerified(
            "your Prolific submission for this study is no longer active "
            f"({str(submission.get('status'))[:30].lower()})"
        )
    return VERIFIED


@dataclass
class SyncReport:
    freed: list[str] = field(default_factory=list)
    approved: list[str] = field(default_factory=list)
    verified: list[str] = field(default_factory=list)
    attention: list[tuple[str, str, str]] = field(default_factory=list)  # (submission, participant, reason)
    places: dict[str, int | None] = field(default_factory=dict)  # None: the cohort is not on Prolific (now)
    expired: list[str] = field(default_factory=list)  # unverified joins Prolific never confirmed, past the grace

    @property
    def filtered_with_completion_code(self) -> int:
        return sum(1 for *_, reason in self.attention if reason.startswith(FILTERED_SENT_COMPLETION))


FILTERED_SENT_COMPLETION = "filtered after training, but sent the completion code"


# An unverified enrollment the sync cannot match expires whatever it did: it never held a place nor counted.
_UNMATCHED_EXPIRE = (*ACTIVE_STATES, State.BETWEEN, State.COMPLETED, State.FILTERED)


def _expire_unmatched(cohort: Cohort, actor: str) -> list[str]:
    """Expire the cohort's unverified enrollments that this sync could not match to their own submission,
    once PROLIFIC_UNVERIFIED_GRACE_MINUTES have passed since they joined (not the study's whole time limit),
    whatever their state (one that finished too: it never counted): a join with a forged session waits for a
    place, and keeps the worker id from being taken by its holder, only that long."""
    cutoff = timezone.now() - timedelta(minutes=settings.PROLIFIC_UNVERIFIED_GRACE_MINUTES)
    expired = []
    candidates = Enrollment.objects.filter(
        cohort=cohort, verification=UNVERIFIED, state__in=_UNMATCHED_EXPIRE, enrolled_at__lt=cutoff
    )
    for pk in candidates.values_list("pk", flat=True):
        with transaction.atomic():
            enrollment = Enrollment.objects.select_for_update().select_related("cohort__study", "worker").get(pk=pk)
            if enrollment.verification != UNVERIFIED or enrollment.state not in _UNMATCHED_EXPIRE:
                continue
            transition(
                enrollment,
                State.EXPIRED,
                actor=actor,
                action="expire unverified",
                reason=f"Prolific never confirmed this join's session within "
                f"{settings.PROLIFIC_UNVERIFIED_GRACE_MINUTES} minutes",
            )
            expired.append(enrollment.worker.external_id)
    return expired


_FREES = {prolific.RETURNED: State.WITHDRAWN, prolific.REJECTED: State.WITHDRAWN, prolific.TIMED_OUT: State.EXPIRED}


def sync(study: Study, *, actor: str = "system") -> SyncReport:
    """Read every cohort's submissions on Prolific and reconcile (see the module docstring)."""
    report = SyncReport()
    client = client_for(study)
    if client is None:
        return report
    with client:
        for cohort in records.published_cohorts(study):
            prolific_study_id = cohort.prolific.prolific_study_id
            enrollments = {
                e.worker.external_id: e
                for e in Enrollment.objects.filter(cohort=cohort)
                .exclude(verification=SUPERSEDED)
                .select_related("worker")
            }
            for part_study, part in sorted(records.part_studies(cohort).items(), key=lambda kv: kv[1]):
                for sub in client.study_submissions(part_study):
                    reconcile_submission(client, study, cohort, sub, enrollments, report, actor, part=part)
            report.expired += _expire_unmatched(cohort, actor)
            # The safety net of the give-back queued when a place is freed (the provider's hooks).
            report.places[prolific_study_id] = give_back_places(cohort.pk, actor=actor)
    return report


def reconcile_submission(
    client, study, cohort, sub: dict, enrollments: dict, report: SyncReport, actor: str, *, part: int = 1
) -> None:
    """One submission as Prolific lists it (the sync) or reports it (a webhook), to the Prolific study of the
    cohort's ``part``: idempotent, whoever calls."""
    sub_id, status = str(sub.get("id", "")), sub.get("status", "")
    pid = str(sub.get("participant_id") or "").lower()  # the list's field name (get-study-submissions)
    enrollment = enrollments.get(pid)
    if enrollment is None:
        if status == prolific.AWAITING_REVIEW:
            report.attention.append((sub_id, pid, "no enrollment here for this participant"))
        return
    with transaction.atomic():
        enrollment = (
            Enrollment.objects.select_for_update(of=("self",))
            .select_related("cohort__study", "worker")
            .get(pk=enrollment.pk)
        )
        if enrollment.verification == UNVERIFIED and sub_id == enrollment.platform_session:
            enrollment.verification = VERIFIED
            enrollment.save(update_fields=["verification"])
            results_changed(enrollment=enrollment)
            report.verified.append(pid)
            audit(study, "prolific verified", f"submission {sub_id}", enrollment, actor)
        recorded = records.status_of(enrollment, part)
        if recorded == prolific.APPROVED:
            # Approved already, by whoever held this lock before (a webhook and the sync race): final on Prolific,
            # so a listing read before that approval changes nothing and is never approved again.
            return
        if recorded != status:
            records.set_status(enrollment, status, part)
        if status in _FREES and enrollment.state in (State.TRAINING, State.TESTING) and part == enrollment.part:
            transition(
                enrollment,
                _FREES[status],
                actor=actor,
                action="prolific " + status.lower(),
                reason=f"Prolific status {status}: the place is free again",
            )
            report.freed.append(pid)
            return
        if status == prolific.AWAITING_REVIEW:
            # Under the enrollment's row lock: whoever races this call (the sync, a webhook) waits, then finds the
            # approval recorded above, so Prolific is asked to approve a submission once.
            _review(client, study, enrollment, sub, report, actor, part)


def finished_part(enrollment: Enrollment, part: int) -> tuple[bool, int]:
    """(whether the worker answered every test item of ``part``, how many parts the cohort has)."""
    estimate = cohort_estimate(enrollment.cohort)
    done = Answer.objects.filter(enrollment=enrollment, step=Answer.Step.TEST).count()
    return done >= estimate.part(part).end, len(estimate.parts)


def _review(client, study, enrollment, sub: dict, report: SyncReport, actor: str, part: int = 1) -> None:
    """A submission awaiting review ends approved or listed for the researcher, never silently left."""
    sub_id, code = str(sub.get("id", "")), str(sub.get("study_code") or "")
    pid = enrollment.worker.external_id
    finished, parts = finished_part(enrollment, part)
    expected = part_code(study, part, parts)
    if enrollment.state == State.FILTERED:
        # The screen-out code makes the submission SCREENED OUT (paid by Prolific); any other code leaves it
        # awaiting review: never approved automatically, always listed.
        if code == study.completion_code:
            report.attention.append(
                (
                    sub_id,
                    pid,
                    f"{FILTERED_SENT_COMPLETION} (not the screen-out code): approve it, or ask them to return it",
                )
            )
        else:
            report.attention.append(
                (sub_id, pid, "filtered after training; the submission carries another code than the screen-out code")
            )
    elif not finished:
        report.attention.append((sub_id, pid, f"the enrollment is {enrollment.state}, not completed"))
    elif code != expected:
        report.attention.append((sub_id, pid, "the submission carries another code than the study's"))
    elif enrollment.verification == UNVERIFIED:
        report.attention.append((sub_id, pid, "the enrollment is not verified (another SESSION_ID)"))
    elif records.manual_review(study):
        report.attention.append((sub_id, pid, "completed with the right code; the study is set to manual review"))
    else:
        try:
            client.approve(sub_id)
        except prolific.ProlificError as exc:
            audit(study, "prolific approve failed", f"{sub_id}: {exc}", enrollment, actor)
            report.attention.append((sub_id, pid, f"approval failed: {exc}"))
            return
        records.set_status(enrollment, prolific.APPROVED, part)
        audit(
            study,
            "prolific approve",
            f"submission {sub_id}" + (f" (part {part})" if parts > 1 else ""),
            enrollment,
            actor,
        )
        report.approved.append(pid)


def awaiting_review(study: Study) -> dict[str, int]:
    """What the last sync saw waiting on Prolific for the researcher: submissions awaiting review
    (``total``; the sync approves the rest), and how many of them are filtered workers' (``filtered``)."""
    waiting = ProlificSubmission.objects.filter(
        enrollment__cohort__study=study, status=prolific.AWAITING_REVIEW
    ).exclude(enrollment__verification=SUPERSEDED)
    return {"total": waiting.count(), "filtered": waiting.filter(enrollment__state=State.FILTERED).count()}
