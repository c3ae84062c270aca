"""Joining: the worker's identity from the join link, and enrollment in a cohort (rules 1, 2)."""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from django.db import IntegrityError, transaction

from .. import identity
from ..models import Cohort, Enrollment, Study, Worker
from ..protocol import HOLDS_SLOT, JoinRefusal, JoinRefused, first_state, transition

MTURK_PREVIEW = "ASSIGNMENT_ID_NOT_AVAILABLE"


# One answer for "already took part" and "not allowed", so the join page never tells whether a
# given worker id has taken part before (issue 10.8).
NOT_ALLOWED = ("you cannot take part in this study with this link: it needs people who have not worked on "
               "this task before, and each person takes part once, from one browser. If you started this "
               "study in another browser, please go back to it")


@dataclass
class JoinOutcome:
    cohort: Cohort
    enrollment: Enrollment | None  # None for an MTurk preview
    created: bool = False

    @property
    def preview(self) -> bool:
        return self.enrollment is None


def _identity(study: Study, params: Mapping[str, str], user) -> tuple[str, str, dict] | None:
    """(external id, platform session, data) from the join request; None for an MTurk preview."""
    # PostgreSQL cannot store a NUL character (the middleware refuses one in a URL before it gets here).
    bad = sorted(name for name, value in params.items() if isinstance(value, str) and "\x00" in value)
    if bad:
        raise JoinRefused(JoinRefusal.BAD_PARAMETER, f"the {bad[0]} parameter contains a NUL character")

    def need(name: str) -> str:
        value = (params.get(name) or "").strip()
        if not value:
            raise JoinRefused(JoinRefusal.BAD_PARAMETER,
                              f"this link needs the {name} parameter from {study.get_platform_display()}")
        if len(value) > 100:
            raise JoinRefused(JoinRefusal.BAD_PARAMETER, f"the {name} parameter is too long")
        return value

    try:
        if study.platform == Study.Platform.PROLIFIC:
            pid = identity.normalise_prolific_pid(need("PROLIFIC_PID"))
            data = {k: (params.get(k) or "").strip()[:100] for k in ("STUDY_ID", "SESSION_ID")}
            return pid, data["SESSION_ID"], data
        if study.platform == Study.Platform.MTURK:
            if params.get("assignmentId") == MTURK_PREVIEW:
                return None
            worker_id = identity.normalise_mturk_worker_id(need("workerId"))
            submit_to = params.get("turkSubmitTo") or ""
            data = {"assignmentId": need("assignmentId"), "hitId": params.get("hitId", "")[:100],
                    "turkSubmitTo": identity.check_turk_submit_to(submit_to) if submit_to else ""}
            return worker_id, data["assignmentId"], data
        if study.platform == Study.Platform.GENERIC:
            param = study.worker_id_param
            return identity.normalise_generic(need(param), study.worker_id_pattern, param), "", {}
    except identity.InvalidIdentity as exc:
        raise JoinRefused(JoinRefusal.BAD_PARAMETER, str(exc), study.platform) from None
    if not (user and user.is_authenticated):
        raise JoinRefused(JoinRefusal.LOGIN_REQUIRED, "log in with your lab account to join this study")
    return str(user.pk), "", {}


def join(token: str, params: Mapping[str, str], *, user=None, bound_enrollment_id: int | None = None,
         seen_enrollment_ids: Sequence[int] = ()) -> JoinOutcome:
    """Enroll a worker through a cohort's join link, or take a returning worker back.

    Raises JoinRefused with a reason code (protocol.JoinRefusal: invalid link, bad parameter, login
    required, not allowed (also "already took part", rule 1: one answer for both), not verified by
    Prolific, not open yet, closed, full); annotation.views picks the HTTP status.
    """
    cohort = Cohort.objects.select_related("study", "task").filter(join_token=token).first()
    if cohort is None:
        raise JoinRefused(JoinRefusal.INVALID_LINK, "this study link is not valid")
    study = cohort.study
    who = _identity(study, params, user)
    if who is None:
        return JoinOutcome(cohort, None)
    external_id, session, data = who
    from .. import recruitment  # the Prolific rules (imports this module)

    refused = NOT_ALLOWED
    worker = Worker.objects.filter(platform=study.platform, external_id=external_id).first()
    existing = (Enrollment.objects.filter(worker=worker, task=cohort.task).select_related("cohort").first()
                if worker else None)
    # A browser bound to an enrollment on this task cannot come back under another id.
    seen = {*seen_enrollment_ids, *([bound_enrollment_id] if bound_enrollment_id else [])}
    if seen and Enrollment.objects.filter(pk__in=seen, task=cohort.task).exclude(
            worker__platform=study.platform, worker__external_id=external_id).exists():
        raise JoinRefused(JoinRefusal.NOT_ALLOWED, refused, study.platform)
    if existing is not None:
        # A returning worker: the same browser session, or the platform's same session/assignment.
        same_browser = bound_enrollment_id == existing.pk or existing.pk in seen
        same_platform_session = bool(session) and session == existing.platform_session
        if existing.cohort_id != cohort.pk or not (
                same_browser or same_platform_session or study.platform == Study.Platform.LOCAL):
            raise JoinRefused(JoinRefusal.NOT_ALLOWED, refused, study.platform)
        return JoinOutcome(cohort, existing)
    recruitment.check_accepting(cohort)
    verification = recruitment.verify_join(cohort, external_id, data)  # before any lock: an HTTP call

    with transaction.atomic():
        worker, _ = Worker.objects.get_or_create(
            platform=study.platform, external_id=external_id,
            defaults={"user": user if study.platform == Study.Platform.LOCAL else None},
        )
        # Rule 2, capacity: lock the cohort row so concurrent joins are counted one at a time.
        Cohort.objects.select_for_update().filter(pk=cohort.pk).first()
        taken = Enrollment.objects.filter(cohort=cohort, state__in=HOLDS_SLOT).count()
        if taken >= cohort.target:
            raise JoinRefused(JoinRefusal.FULL, recruitment.FULL, study.platform)
        enrollment = Enrollment(
            cohort=cohort, worker=worker, task=cohort.task, order_seed=secrets.randbits(62),
            platform_session=session, platform_data=data, verification=verification,
        )
        try:
            transition(enrollment, first_state(cohort.shots),
                       actor="worker", action="join", reason=f"joined via {study.get_platform_display()}"
                       + (f" ({verification} on Prolific)" if verification else ""))
        except IntegrityError:
            # The same worker joined this task in a concurrent request (rule 1's constraint). No savepoint
            # is needed: the refusal leaves the transaction, which rolls everything back.
            raise JoinRefused(JoinRefusal.NOT_ALLOWED, refused, study.platform) from None
    return JoinOutcome(cohort, enrollment, created=True)
