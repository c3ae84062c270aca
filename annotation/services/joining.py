"""Joining: the worker's identity from the join link, and enrollment in a cohort (rules 1, 2)."""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.db.models import Count

import crowd

from ..attention import worker_estimate
from ..estimates import cohort_estimate, granted_limit
from ..models import AuditEvent, Cohort, Enrollment, Study, Worker
from ..protocol import (
    MAX_UNVERIFIED_WAITING,
    JoinRefusal,
    JoinRefused,
    State,
    first_state,
    holds_place,
    transition,
    waits_unverified,
)
from ..results_changes import results_changed

# One answer for "already took part" and "not allowed", so the join page never tells whether a
# given worker id has taken part before.
NOT_ALLOWED = (
    "you cannot take part in this study with this link: it needs people who have not worked on "
    "this task before, and each person takes part once"
)
NOT_OPEN = "this study is not open yet; please try again later"
RETURNING = "you hold a place in this study: you finished part {done} of {parts}, and part {next} is waiting for you"
FULL = "this study is full: all places have been taken"
ENDED = "this study has ended and no longer takes participants"


@dataclass
class JoinOutcome:
    cohort: Cohort
    enrollment: Enrollment | None  # None for a preview (a platform that shows the task before it is accepted)
    created: bool = False
    rebound: bool = False  # a returning worker bound to their enrollment in a new browser

    @property
    def preview(self) -> bool:
        return self.enrollment is None


def identity_of(study: Study, params: Mapping[str, str], user) -> crowd.Identity | None:
    """Who is joining, read by the study's crowd provider; None for a preview. Raises JoinRefused."""
    # PostgreSQL cannot store a NUL character (the middleware refuses one in a URL before it gets here).
    bad = sorted(name for name, value in params.items() if isinstance(value, str) and "\x00" in value)
    if bad:
        raise JoinRefused(JoinRefusal.BAD_PARAMETER, f"the {bad[0]} parameter contains a NUL character")
    try:
        return study.provider.identity(params, study=study, user=user)
    except crowd.LoginRequired as exc:
        raise JoinRefused(JoinRefusal.LOGIN_REQUIRED, str(exc)) from None
    except crowd.InvalidIdentity as exc:
        raise JoinRefused(JoinRefusal.BAD_PARAMETER, str(exc), study.platform) from None


def check_accepting(cohort: Cohort) -> None:
    """Refuse a join with what is true: not open yet, or ended (full is decided under the cohort lock)."""
    platform = cohort.study.platform
    if not cohort.study.is_open or cohort.closed_at is not None:
        raise JoinRefused(JoinRefusal.CLOSED, ENDED, platform)
    if cohort.launched_at is None:
        raise JoinRefused(JoinRefusal.NOT_OPEN, NOT_OPEN, platform)
    waiting = cohort.study.provider.not_open_reason(cohort)
    if waiting:
        raise JoinRefused(JoinRefusal.NOT_OPEN, waiting, platform)


def verification_of(cohort: Cohort, who: crowd.Identity, *, returning: bool = False) -> str:
    """How the crowd platform vouches for the join (its provider's ``verify_join``), which may refuse it."""
    study = cohort.study
    try:
        answer = study.provider.verify_join(cohort, who, returning=returning)
    except crowd.NotVerified as exc:
        raise JoinRefused(JoinRefusal.NOT_VERIFIED, str(exc), study.platform) from None
    if answer not in ("", Enrollment.VERIFIED, Enrollment.UNVERIFIED):
        raise ValueError(f"{study.provider.name}'s verify_join answered {answer!r}")
    return answer


RESUME_PARAM = "resume_code"
RESUME_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O or 1/I to misread
CANNOT_CONFIRM_NOW = (
    "we could not confirm with {platform} that this is your session just now; please open the "
    "study from {platform} again in a few minutes"
)


def new_resume_code() -> str:
    return "".join(secrets.choice(RESUME_ALPHABET) for _ in range(10))  # 50 random bits, rate-limited joins


def _resume_code_matches(existing: Enrollment, params: Mapping[str, str]) -> bool:
    given = str(params.get(RESUME_PARAM) or "").strip().upper().replace(" ", "").replace("-", "")
    return bool(existing.resume_code and given) and secrets.compare_digest(given, existing.resume_code)


def _way_back(existing: Enrollment, cohort: Cohort, who: crowd.Identity, params: Mapping[str, str]) -> str:
    """How a worker with an enrollment comes back from a browser not bound to it: "rebind", "supersede"
    or "" (refused).

    - a resume code (a platform that ``offers_resume_code``) shown on the enrollment's description page: rebind;
    - a platform that vouches for sessions (its provider's ``verify_join``): the join is checked with the
      platform as a returning one; confirmed as this worker's own active session, it is rebound when it is the
      enrollment's session, and when the enrollment was admitted unverified under another session
      (someone who knew the platform id while the platform could not be asked), that enrollment is
      withdrawn and the genuine worker takes its place.
    """
    study = cohort.study
    if _resume_code_matches(existing, params):
        return "rebind"
    if not who.session:
        return ""
    try:
        verification = verification_of(cohort, who, returning=True)
    except JoinRefused:
        if existing.state == State.BETWEEN and who.session == existing.platform_session:
            return ""  # the session of the part they finished (no longer active there): welcomed back, not rebound
        raise
    if verification == Enrollment.VERIFIED:
        if who.session == existing.platform_session:
            return "rebind"
        if existing.state == State.BETWEEN and study.provider.part_of_session(cohort, who) == existing.part + 1:
            _continue_in_session(existing, study, who)
            return "rebind"
        if existing.verification == Enrollment.UNVERIFIED:
            return "supersede"
        return ""
    if verification == Enrollment.UNVERIFIED:
        raise JoinRefused(
            JoinRefusal.NOT_VERIFIED, CANNOT_CONFIRM_NOW.format(platform=study.provider.name), study.platform
        )
    # A platform that vouches for nothing (an assignment id in the link): its own session is the worker's.
    return "rebind" if who.session == existing.platform_session else ""


def _not_back(existing: Enrollment, study: Study) -> JoinRefused:
    """Why a worker with an enrollment, from a browser not bound to it, is not taken back: one between parts is
    welcomed back and told how to continue (a resume code, or the next part's own study); anyone else gets the one
    answer for every "not allowed" (rule 1)."""
    if existing.state != State.BETWEEN:
        return JoinRefused(JoinRefusal.NOT_ALLOWED, NOT_ALLOWED, study.platform)
    parts = len(worker_estimate(existing).parts)
    message = RETURNING.format(done=existing.part, parts=parts, next=existing.part + 1)
    return JoinRefused(JoinRefusal.RETURNING, message, study.platform)


def _continue_if_next_part(existing: Enrollment, cohort: Cohort, who: crowd.Identity) -> None:
    """A worker between parts who comes with the platform's session of the next part (a platform that lists each
    part as a study of its own), confirmed by the platform, continues under it."""
    if existing.state != State.BETWEEN or not who.session or who.session == existing.platform_session:
        return
    if cohort.study.provider.part_of_session(cohort, who) != existing.part + 1:
        return
    if verification_of(cohort, who, returning=True) == Enrollment.VERIFIED:
        _continue_in_session(existing, cohort.study, who)


def _continue_in_session(existing: Enrollment, study: Study, who: crowd.Identity) -> None:
    """The enrollment continues under the platform's session of the next part (its submission there)."""
    Enrollment.objects.filter(pk=existing.pk).update(platform_session=who.session, platform_data=who.data)
    existing.platform_session, existing.platform_data = who.session, who.data
    AuditEvent.objects.create(
        study=study,
        enrollment=existing,
        actor="worker",
        action="rebind",
        reason=f"came back for part {existing.part + 1}; session confirmed by {study.provider.name}",
    )


def _holder_elsewhere(existing: Enrollment, cohort: Cohort, who: crowd.Identity) -> Enrollment:
    """The enrollment to supersede when a worker id with an enrollment in another cohort of the task joins this one,
    or JoinRefused.

    Rule 1 counts only what the platform vouched for: an enrollment admitted unverified under this id (anyone may
    have typed it while the platform could not be asked), waiting or expired, never keeps the id's holder out of
    the task's other cohorts: the holder's own session, confirmed, takes its place. Unless the platform now
    confirms that enrollment's own session too: the same person joined twice (rule 1)."""
    study = cohort.study
    if existing.verification != Enrollment.UNVERIFIED:
        raise JoinRefused(JoinRefusal.NOT_ALLOWED, NOT_ALLOWED, study.platform)
    check_accepting(cohort)
    if verification_of(cohort, who, returning=True) != Enrollment.VERIFIED:  # asked to retry, if unreachable
        # Not confirmed either: two unconfirmed joins under one id cannot be told apart.
        raise JoinRefused(
            JoinRefusal.NOT_VERIFIED, CANNOT_CONFIRM_NOW.format(platform=study.provider.name), study.platform
        )
    if _own_session_confirmed(existing):
        raise JoinRefused(JoinRefusal.NOT_ALLOWED, NOT_ALLOWED, study.platform)
    return existing


def _own_session_confirmed(existing: Enrollment) -> bool:
    """Whether the platform now confirms an unverified enrollment's own session as its worker's, still active:
    then the id's holder made it (while the platform could not be asked) and has taken part in the task."""
    study = existing.cohort.study
    who = crowd.Identity(existing.worker.external_id, existing.platform_session, existing.platform_data)
    try:
        answer = study.provider.verify_join(existing.cohort, who, returning=True)
    except crowd.NotVerified:
        return False
    if answer == Enrollment.UNVERIFIED:
        raise JoinRefused(
            JoinRefusal.NOT_VERIFIED, CANNOT_CONFIRM_NOW.format(platform=study.provider.name), study.platform
        )
    return answer == Enrollment.VERIFIED


def join(
    *,
    token: str,
    params: Mapping[str, str],
    user=None,
    bound_enrollment_id: int | None = None,
    seen_enrollment_ids: Sequence[int] = (),
) -> JoinOutcome:
    """Enroll a worker through a cohort's join link, or take a returning worker back.

    Raises JoinRefused with a reason code (protocol.JoinRefusal: invalid link, bad parameter, login
    required, not allowed (also "already took part", rule 1: one answer for both), not verified by
    the crowd platform, not open yet, closed, full); the join page picks the HTTP status.
    """
    cohort = Cohort.objects.select_related("study", "task").filter(join_token=token).first()
    if cohort is None:
        raise JoinRefused(JoinRefusal.INVALID_LINK, "this study link is not valid")
    study = cohort.study
    who = identity_of(study, params, user)
    if who is None:
        return JoinOutcome(cohort, None)
    external_id, session = who.external_id, who.session

    refused = NOT_ALLOWED
    worker = Worker.objects.filter(platform=study.platform, external_id=external_id).first()
    existing = (
        Enrollment.objects.filter(worker=worker, task=cohort.task)
        .exclude(verification=Enrollment.SUPERSEDED)
        .select_related("cohort__study", "worker")
        .first()
        if worker
        else None
    )
    # A browser bound to an enrollment on this task cannot come back under another id.
    seen = {*seen_enrollment_ids, *([bound_enrollment_id] if bound_enrollment_id else [])}
    if (
        seen
        and Enrollment.objects.filter(pk__in=seen, task=cohort.task)
        .exclude(worker__platform=study.platform, worker__external_id=external_id)
        .exists()
    ):
        raise JoinRefused(JoinRefusal.NOT_ALLOWED, refused, study.platform)
    supersede = None
    if existing is not None and existing.cohort_id != cohort.pk:
        supersede, verification = _holder_elsewhere(existing, cohort, who), Enrollment.VERIFIED
    elif existing is not None:
        # A returning worker: the same browser session or the same logged-in account; from another browser,
        # the way back (``_way_back``).
        if bound_enrollment_id == existing.pk or existing.pk in seen or study.provider.uses_accounts:
            _continue_if_next_part(existing, cohort, who)
            return JoinOutcome(cohort, existing)
        way = _way_back(existing, cohort, who, params)
        if way == "rebind":
            AuditEvent.objects.create(
                study=study,
                enrollment=existing,
                actor="worker",
                action="rebind",
                reason="came back from another browser; "
                + (
                    "resume code"
                    if _resume_code_matches(existing, params)
                    else f"session confirmed by {study.provider.name}"
                ),
            )
            return JoinOutcome(cohort, existing, rebound=True)
        if way != "supersede":
            raise _not_back(existing, study)
        check_accepting(cohort)
        supersede, verification = existing, Enrollment.VERIFIED
    else:
        check_accepting(cohort)
        verification = verification_of(cohort, who)  # before any lock: it may call the platform
    # Part 1's time limit as the worker joins (the cohort's estimate then): it never changes under them.
    first_limit = granted_limit(cohort, cohort_estimate(cohort).part(1))

    with transaction.atomic():
        worker, _ = Worker.objects.get_or_create(
            platform=study.platform,
            external_id=external_id,
            defaults={"user": user if study.provider.uses_accounts else None},
        )
        # Rule 2, capacity: lock the cohort row so concurrent joins are counted one at a time.
        Cohort.objects.select_for_update().filter(pk=cohort.pk).first()
        if supersede is not None:
            _supersede(supersede.pk, study, elsewhere=supersede.cohort_id != cohort.pk)
        # Rule 2: only verified (or not checked) enrollments hold places; unverified ones wait outside them.
        counts = Enrollment.objects.filter(cohort=cohort).aggregate(
            taken=Count("pk", filter=holds_place()), waiting=Count("pk", filter=waits_unverified())
        )
        if counts["taken"] >= cohort.target:
            raise JoinRefused(JoinRefusal.FULL, FULL, study.platform)
        if verification == Enrollment.UNVERIFIED and counts["waiting"] >= MAX_UNVERIFIED_WAITING:
            raise JoinRefused(
                JoinRefusal.NOT_VERIFIED, CANNOT_CONFIRM_NOW.format(platform=study.provider.name), study.platform
            )
        enrollment = Enrollment(
            cohort=cohort,
            worker=worker,
            task=cohort.task,
            order_seed=secrets.randbits(62),
            platform_session=session,
            platform_data=who.data,
            verification=verification,
            resume_code=new_resume_code() if study.provider.offers_resume_code else "",
            part=1,  # its clock starts at joining (filtering.part_deadline)
            timer_minutes=first_limit,
        )
        try:
            transition(
                enrollment,
                first_state(cohort.shots),
                actor="worker",
                action="join",
                reason=f"joined via {study.provider.name}"
                + (f" ({verification} on {study.provider.name})" if verification else ""),
            )
        except IntegrityError:
            # The same worker joined this task in a concurrent request (rule 1's constraint). No savepoint
            # is needed: the refusal leaves the transaction, which rolls everything back.
            raise JoinRefused(JoinRefusal.NOT_ALLOWED, refused, study.platform) from None
    return JoinOutcome(cohort, enrollment, created=True)


def _supersede(enrollment_id: int, study: Study, *, elsewhere: bool = False) -> None:
    """Withdraw an unverified enrollment whose platform id's genuine holder arrived (under the cohort lock);
    ``elsewhere``: the holder joins another cohort of the task."""
    squatter = Enrollment.objects.select_for_update(of=("self",)).select_related("cohort").get(pk=enrollment_id)
    if squatter.verification != Enrollment.UNVERIFIED:
        raise JoinRefused(JoinRefusal.NOT_ALLOWED, NOT_ALLOWED, study.platform)
    squatter.verification = Enrollment.SUPERSEDED
    reason = f"admitted unverified under another session; {study.provider.name} confirmed the same id's " + (
        "own session in another cohort of the task" if elsewhere else "own session, which takes its place"
    )
    if squatter.state in (State.TRAINING, State.TESTING):
        transition(
            squatter,
            State.WITHDRAWN,
            actor="system",
            action="withdraw unverified",
            reason=reason,
            update_fields=("verification",),
        )
    else:
        squatter.save(update_fields=["verification"])
        results_changed(enrollment=squatter, always=True)
        AuditEvent.objects.create(
            study_id=squatter.cohort.study_id,  # the squatter's own study (another one of the task, maybe)
            enrollment=squatter,
            actor="system",
            action="withdraw unverified",
            from_state=squatter.state,
            to_state=squatter.state,
            reason=reason,
        )
