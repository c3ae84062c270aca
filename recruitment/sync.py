"""Prolific's side of the protocol: a join checked against Prolific, and the sync that reconciles.

Nothing here ever rejects a submission (irreversible on Prolific, and it needs a written reason:
the researcher's call). The sync walks every submission of every part's Prolific study: it frees the places of
returned submissions (and of timed-out ones once the worker's own time limit here has passed), verifies enrollments
admitted while Prolific could not be asked, approves completed work carrying the part's code, and lists everything
else for the researcher. A submission whose participant
has no enrollment here, or did not earn the code it carries, is asked to return (once, with the reason: Prolific's
non-penalising way; the researcher may still reject or approve it by hand), and a place it holds is given back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from annotation.codes import part_codes
from annotation.estimates import cohort_estimate
from annotation.models import Cohort, Enrollment, PartTiming, Study
from annotation.protocol import ACTIVE_STATES, State, transition
from annotation.results_changes import results_changed
from annotation.services import expire_if_stale
from crowd import NotVerified

from . import client as prolific
from . import records
from .audit import audit
from .models import ProlificReview, ProlificSubmission
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
    study_id = submission.get("study_id")
    if participant != pid or study_id not in part_studies or data.get("STUDY_ID") != study_id:
        # Another's submission, another cohort's, or a link whose STUDY_ID is not the submission's own study (a part's
        # link edited to name another part): what the platform records of the join is only what Prolific confirms.
        raise NotVerified(REFUSED)
    if not returning and part_studies[study_id] != 1:
        # A newcomer starts at part 1; a later part's study takes only those who finished the part before.
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
    return_requested: list[str] = field(default_factory=list)  # submissions asked to return by this sync
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


_FREES = {prolific.RETURNED: State.WITHDRAWN, prolific.REJECTED: State.WITHDRAWN}


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
    study_of_part = {number: sid for sid, number in records.part_studies(cohort).items()}
    if enrollment is None:
        _stranger(client, study, cohort, sub, report, actor, part)
        return
    with transaction.atomic():
        enrollment = (
            Enrollment.objects.select_for_update(of=("self",))
            .select_related("cohort__study", "worker")
            .get(pk=enrollment.pk)
        )
        if (
            enrollment.verification == UNVERIFIED
            and sub_id == enrollment.platform_session
            and part == 1  # a join starts at part 1, with part 1's session and study
            and (enrollment.platform_data or {}).get("STUDY_ID") == study_of_part.get(1)
        ):
            enrollment.verification = VERIFIED
            enrollment.save(update_fields=["verification"])
            results_changed(enrollment=enrollment, always=True)
            report.verified.append(pid)
            audit(study, "prolific verified", f"submission {sub_id}", enrollment, actor)
        recorded = records.status_of(enrollment, part)
        if recorded == prolific.APPROVED:
            # Approved already, by whoever held this lock before (a webhook and the sync race): final on Prolific,
            # so a listing read before that approval changes nothing and is never approved again.
            return
        if recorded != status:
            records.set_status(enrollment, status, part)
            # A submission the sync could not approve (returned since, or settled by hand): its listing follows.
            ProlificReview.objects.filter(submission_id=sub_id).exclude(status=status).update(status=status[:20])
        working = enrollment.state in (State.TRAINING, State.TESTING) and part == enrollment.part
        if status == prolific.TIMED_OUT and working:
            # Prolific times out by its own clock, which starts before the join and may run shorter than the limit
            # this worker was given here, the one they were told (and Prolific lets a timed-out participant still
            # complete). Within that limit they keep working; past it, the part ends as this site's own time limit
            # ends it: with answers in it, the part's screen-out code and the pay for the time worked.
            if expire_if_stale(enrollment, timezone.now()):
                report.freed.append(pid)
            return
        if status in _FREES and working:
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


NO_ENROLLMENT = "no enrollment here for this participant: the code was not earned on this platform"
RETURN_REASON = (
    "This submission's code was not earned on the study's site: {why}. Please return the submission (it does not "
    "count against you); contact the researcher through Prolific if you think this is a mistake."
)


def _stranger(client, study, cohort, sub: dict, report: SyncReport, actor: str, part: int) -> None:
    """A submission of a participant with no enrollment in the cohort: listed, asked to return, its place given back
    (``places.places_owed``). A screen-out code was paid Prolific's minimum by itself: nothing more is paid."""
    sub_id, status, pid = str(sub.get("id", "")), sub.get("status", ""), str(sub.get("participant_id") or "").lower()
    if status in (prolific.RESERVED, prolific.ACTIVE):
        return  # they may be joining now; one who never does is timed out by Prolific, which frees the place
    known = ProlificReview.objects.filter(submission_id=sub_id).exists()
    if status not in (prolific.AWAITING_REVIEW, prolific.SCREENED_OUT) and not known:
        return  # returned, rejected, timed out: nothing was or will be paid, the place is Prolific's again
    review = _note_review(cohort, part, sub, NO_ENROLLMENT, None)
    if status == prolific.AWAITING_REVIEW:
        _ask_to_return(client, study, review, report, actor, "no work was recorded under your Prolific ID")
    elif status == prolific.SCREENED_OUT:
        report.attention.append(
            (
                sub_id,
                pid,
                f"{NO_ENROLLMENT}; screened out by Prolific with a screen-out code, which pays only Prolific's "
                "minimum by itself (nothing more is paid); its place is given back",
            )
        )


def _note_review(cohort, part: int, sub: dict, reason: str, enrollment) -> ProlificReview:
    review, _ = ProlificReview.objects.update_or_create(
        submission_id=str(sub.get("id", ""))[:64],
        defaults={
            "cohort": cohort,
            "part": part,
            "participant_id": str(sub.get("participant_id") or "").lower()[:64],
            "enrollment": enrollment,
            "status": str(sub.get("status") or "")[:20],
            "code": str(sub.get("study_code") or "")[:64],
            "reason": reason,
        },
    )
    return review


def _ask_to_return(client, study, review: ProlificReview, report: SyncReport, actor: str, why: str) -> None:
    """Ask the participant once to return a submission whose code was not earned here, and list it with what was done.
    No answer, or a refusal (a 401 for a revoked token, a 5xx), leaves it to ask again at the next sync: asking twice
    costs nothing."""
    pid = review.participant_id
    if review.return_requested_at is not None:
        report.attention.append((review.submission_id, pid, f"{review.reason} (asked to return it)"))
        return
    try:
        client.request_return(review.submission_id, [RETURN_REASON.format(why=why)])
    except prolific.ProlificError as exc:
        audit(study, "prolific request return failed", f"{review.submission_id}: {exc}", review.enrollment, actor)
        report.attention.append(
            (
                review.submission_id,
                pid,
                f"{review.reason}; asking them to return it failed ({exc}): asked again at the next sync",
            )
        )
        return
    ProlificReview.objects.filter(pk=review.pk).update(return_requested_at=timezone.now())
    audit(
        study,
        "prolific request return",
        f"submission {review.submission_id} (part {review.part}): {review.reason}",
        review.enrollment,
        actor,
    )
    report.attention.append((review.submission_id, pid, f"{review.reason} (asked to return it)"))
    report.return_requested.append(review.submission_id)


def finished_part(enrollment: Enrollment, part: int) -> tuple[bool, int]:
    """(whether the worker finished ``part``, how many parts the cohort has).

    Finished is the worker's own record: the part's timing kept uncut when they answered its last item, in the
    transaction that gave them its code (``PartTiming``). Never the cohort's estimate of today: an attention check
    added since, or the task's card imported again with another pace, moves its part bounds, and would refuse a part
    the worker finished by the bounds they had, or approve one they left an item short. A part with no timing at all
    (an enrollment from before timings were kept) is finished when the worker went on past it: a later part started,
    or this one ended between parts or completed."""
    cut_off = PartTiming.objects.filter(enrollment=enrollment, part=part).values_list("cut_off", flat=True).first()
    if cut_off is not None:
        finished = not cut_off
    else:
        finished = enrollment.part > part or (
            enrollment.part == part and enrollment.state in (State.BETWEEN, State.COMPLETED)
        )
    return finished, len(cohort_estimate(enrollment.cohort).parts)


def _review(client, study, enrollment, sub: dict, report: SyncReport, actor: str, part: int = 1) -> None:
    """A submission awaiting review ends approved or listed for the researcher, never silently left."""
    sub_id, code = str(sub.get("id", "")), str(sub.get("study_code") or "")
    pid = enrollment.worker.external_id
    finished, parts = finished_part(enrollment, part)
    codes = part_codes(enrollment.cohort, part)
    expected = codes.completion_code
    unearned, why = "", ""
    if enrollment.state == State.FILTERED:
        # The screen-out code makes the submission SCREENED OUT (paid by Prolific); any other code leaves it
        # awaiting review: never approved automatically.
        why = "the training step ended your part in the study, with a screen-out code (not this one)"
        if code == expected:
            unearned = f"{FILTERED_SENT_COMPLETION} (not the screen-out code)"
        else:
            unearned = "filtered after training; the submission carries another code than the screen-out code"
    elif not finished:
        unearned = f"the enrollment is {enrollment.state}: part {part} was not finished, its completion code not earned"
        why = "this part of the study was not finished"
    elif code != expected:
        unearned = f"the submission carries another code than part {part}'s completion code"
        why = "it is not the code shown at the end of this part"
    if unearned:
        review = _note_review(enrollment.cohort, part, sub, unearned, enrollment)
        _ask_to_return(client, study, review, report, actor, why)
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
    (``total``; the sync approves the rest), how many of them are filtered workers' (``filtered``) and how many are of
    participants with no enrollment here (``strangers``, counted in ``total``)."""
    waiting = ProlificSubmission.objects.filter(
        enrollment__cohort__study=study, status=prolific.AWAITING_REVIEW
    ).exclude(enrollment__verification=SUPERSEDED)
    strangers = ProlificReview.objects.filter(
        cohort__study=study, enrollment__isnull=True, status=prolific.AWAITING_REVIEW
    ).count()
    return {
        "total": waiting.count() + strangers,
        "filtered": waiting.filter(enrollment__state=State.FILTERED).count(),
        "strangers": strangers,
    }


def reviews(study: Study):
    """The submissions the sync could not approve, with what was done (``ProlificReview``), newest first."""
    return (
        ProlificReview.objects.filter(cohort__study=study)
        .select_related("cohort__task", "enrollment")
        .order_by("-seen_at", "-pk")
    )
