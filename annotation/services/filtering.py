"""Filtering (rule 4), reinstating, withdrawing and expiring enrollments (rule 7's time limit).

``STEP_OF_STATE``, ``load_enrollment``, ``is_stale``, ``expire_if_stale``, ``finish_training`` and
``require_reason`` are shared with the other service modules; callers outside use the package's names.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Avg
from django.utils import timezone

from tasks_data.models import Example, TrainingSetItem

from ..attention import check_positions, part_bounds, part_items
from ..estimates import estimate
from ..models import Answer, AttentionAnswer, AuditEvent, Cohort, Enrollment, PartTiming
from ..pay import part_starts
from ..protocol import (
    COMPARISON_EXCLUDES,
    RETURN_DAYS,
    State,
    filter_refusal,
    filtering_decision,
    holds_place,
    leave_out_refusal,
    reinstate_refusal,
    reinstate_state,
    transition,
)
from ..results_changes import results_changed, timing_kept
from .errors import Conflict

STEP_OF_STATE = {State.TRAINING: Answer.Step.TRAINING, State.TESTING: Answer.Step.TEST}


def load_enrollment(enrollment_id: int, *, lock: bool) -> Enrollment:
    qs = Enrollment.objects.select_related("cohort__study", "cohort__task", "task")
    if lock:
        qs = qs.select_for_update(of=("self",))
    return qs.get(pk=enrollment_id)


def is_stale(enrollment: Enrollment, now: datetime) -> bool:
    """Past the deadline of the part the worker is in (between parts: of the wait for the next part)."""
    if enrollment.state not in STEP_OF_STATE and enrollment.state != State.BETWEEN:
        return False
    deadline = part_deadline(enrollment)
    return now > deadline


def part_deadline(enrollment: Enrollment) -> datetime:
    """When the part's time limit passes (between parts: when the worker's place is offered again). Part 1's clock
    starts at joining, a later part's as it starts; each with the limit of the worker's estimate then
    (``estimates.Part.time_limit``), kept on the enrollment so that it never changes under them."""
    limit = enrollment.timer_minutes or first_part_limit(enrollment)
    return part_start(enrollment) + timedelta(minutes=limit)


def part_start(enrollment: Enrollment) -> datetime:
    """When the clock of the part the worker is in started (between parts: their wait)."""
    return enrollment.timer_started_at or enrollment.enrolled_at


def timed_out(enrollment: Enrollment) -> bool:
    """Whether the enrollment ended because its part's time limit passed (not by the worker's choice)."""
    return (
        enrollment.state == State.EXPIRED
        and enrollment.stopped_at is not None
        and enrollment.stopped_at >= part_deadline(enrollment)
    )


def first_part_limit(enrollment: Enrollment) -> int:
    """Part 1's limit for an enrollment that has none kept (joined before limits were kept on it)."""
    cohort = enrollment.cohort
    _with_totals(enrollment)
    return (
        estimate(
            study=cohort.study,
            spec=cohort.task.spec,
            training_items=enrollment.training_total if cohort.shots else 0,
            test_items=enrollment.test_total,
        )
        .part(1)
        .time_limit
    )


def part_started_at(enrollment: Enrollment) -> datetime:
    """When the part the worker is in started (part 1: at joining)."""
    return part_starts(enrollment).get(enrollment.part) or enrollment.enrolled_at


def answers_in_part(enrollment: Enrollment) -> int:
    """The answers given in the part the worker is in, attention checks too (a worker cannot tell them apart from
    items): what makes leaving the part work to be paid for rather than a withdrawal (2 queries)."""
    answers = Answer.objects.filter(enrollment_id=enrollment.pk)
    checks = AttentionAnswer.objects.filter(enrollment_id=enrollment.pk)
    if enrollment.part > 1:  # a later part holds what was answered after it started (pay.part_at)
        since = part_started_at(enrollment)
        answers, checks = answers.filter(answered_at__gt=since), checks.filter(answered_at__gt=since)
    return answers.count() + checks.count()


# "End now" is offered, and taken, only near the part's time limit: once this share of the limit, or
# ``END_NOW_MINUTES``, whichever is more, is left. One rule, read by the worker's page and enforced here.
END_NOW_SHARE = 0.2
END_NOW_MINUTES = 5.0


def end_now_seconds(enrollment: Enrollment) -> float:
    """How long before the part's time limit the worker may end it now: ``END_NOW_SHARE`` of the limit, at least
    ``END_NOW_MINUTES``."""
    limit = (part_deadline(enrollment) - part_start(enrollment)).total_seconds()
    return max(60.0 * END_NOW_MINUTES, END_NOW_SHARE * limit)


def end_now_window(enrollment: Enrollment, now: datetime) -> timedelta | None:
    """The time left in the part when the worker may end it now and keep the pay for their answers (the page warns
    and offers "End now"), else None: too early in the part, or not in a part."""
    if enrollment.state not in STEP_OF_STATE:
        return None
    left = part_deadline(enrollment) - now
    if left.total_seconds() > end_now_seconds(enrollment):
        return None
    return max(left, timedelta(0))


def expire_if_stale(enrollment: Enrollment, now: datetime) -> bool:
    """Expire an enrollment past its deadline. One in the middle of a part with answers in it stops there, at the
    limit: it gets the part's screen-out code and is paid for the time worked up to the limit, its answers kept; one
    with no answer in the part gets no code (nothing was done in it); one between parts did not come back and keeps
    the pay of the parts done. Either way its place is offered again."""
    if not is_stale(enrollment, now):
        return False
    if enrollment.state == State.BETWEEN:
        transition(
            enrollment,
            State.EXPIRED,
            actor="system",
            action="expire",
            reason=f"did not start part {enrollment.part + 1} within {RETURN_DAYS} days: their place is offered "
            f"again (paid for part(s) 1-{enrollment.part})",
            parts=parts_of(enrollment),
        )
        return True
    if not answers_in_part(enrollment):
        transition(
            enrollment,
            State.EXPIRED,
            actor="system",
            action="expire",
            reason=f"the time limit of part {enrollment.part} passed with no answer in it: no code, nothing to pay",
            parts=parts_of(enrollment),
        )
        return True
    enrollment.stopped_at = stopped = min(now, part_deadline(enrollment))
    _keep_cut_off(enrollment, stopped)
    transition(
        enrollment,
        State.EXPIRED,
        actor="system",
        action="expire",
        reason=f"the time limit of part {enrollment.part} passed: given the part's screen-out code, paid for the time "
        "worked up to the limit",
        update_fields=("stopped_at",),
        parts=parts_of(enrollment),
    )
    return True


# The audit action of a part ended by the worker with nothing answered in it (a withdrawal: no code).
ENDED_UNANSWERED = "end part unanswered"
NOT_YET = (
    "a part can be ended with a code only in its last minutes (the page offers it then); to leave now, withdraw: "
    "your place goes to someone else"
)


def _with_totals(enrollment: Enrollment) -> Enrollment:
    """The enrollment with the item counts of its steps, as the hot path reads them (two queries where it did not)."""
    if not hasattr(enrollment, "test_total"):
        cohort = enrollment.cohort
        enrollment.training_total = (
            TrainingSetItem.objects.filter(training_set_id=cohort.training_set_id).count() if cohort.shots else 0
        )
        enrollment.test_total = Example.objects.filter(task_id=cohort.task_id, role=Example.Role.TEST).count()
    return enrollment


def parts_of(enrollment: Enrollment) -> int:
    """How many parts the worker's test step has, by their own bounds: what a move out of a later part tells the
    crowd provider (``protocol.transition``'s ``parts``), so that its hook hears of the part the worker was in."""
    return len(part_bounds(_with_totals(enrollment), check_positions(enrollment)))


def _keep_cut_off(enrollment: Enrollment, ended_at: datetime) -> None:
    """A part stopped before its last item, at ``ended_at``: cut off by its time limit, or ended by the worker near
    it (End now). The worker needed at least that long for its items: the measured time limits count it so
    (``estimates.fit_paces``), and leaving such a worker out would lean the limits to those who finished in time,
    shortening them for the slow; the results count the workers the limit stopped."""
    _with_totals(enrollment)
    checks = check_positions(enrollment)
    PartTiming.objects.get_or_create(
        enrollment=enrollment,
        part=enrollment.part,
        defaults={
            "started_at": part_start(enrollment),
            "ended_at": ended_at,
            "items": part_items(enrollment, part_bounds(enrollment, checks), checks, enrollment.part),
            "limit_minutes": round((part_deadline(enrollment) - part_start(enrollment)).total_seconds() / 60),
            "cut_off": True,
        },
    )
    timing_kept(enrollment=enrollment)


def stop_part(*, enrollment_id: int, now: datetime | None = None) -> Enrollment:
    """The worker ends the part they are in now, near its time limit (``end_now_window``: the page offers it then,
    and only then): as when the limit passes, they get the part's screen-out code and are paid for the time worked,
    their answers kept. With no answer in the part, leaving is a withdrawal: no code, and the place is given back.
    Conflict before the window: a code for nothing would pay for nothing."""
    now = now or timezone.now()
    with transaction.atomic():
        enrollment = load_enrollment(enrollment_id, lock=True)
        if expire_if_stale(enrollment, now):
            return enrollment
        if enrollment.state not in STEP_OF_STATE:
            raise Conflict(f"there is no part to end now: your enrollment is {enrollment.state}")
        if end_now_window(enrollment, now) is None:
            raise Conflict(NOT_YET)
        if not answers_in_part(enrollment):
            transition(
                enrollment,
                State.WITHDRAWN,
                actor="worker",
                action=ENDED_UNANSWERED,
                reason=f"ended part {enrollment.part} with no answer in it: no code, the place is given back",
                parts=parts_of(enrollment),
            )
            return enrollment
        enrollment.stopped_at = now
        _keep_cut_off(enrollment, now)
        transition(
            enrollment,
            State.EXPIRED,
            actor="worker",
            action="stop",
            reason=f"ended part {enrollment.part} near its time limit: given the part's screen-out code, paid for the "
            "time worked",
            update_fields=("stopped_at",),
            parts=parts_of(enrollment),
        )
        return enrollment


def finish_training(enrollment: Enrollment, now: datetime) -> None:
    """Rule 4: compute the training S1 and let the study's filtering rule decide.

    Items whose gold cannot be marked exactly (``Example.gold_unproducible``, the data's quirks)
    are left out of this S1: no worker can get them right. Their answers stay stored and scored.
    """
    study = enrollment.cohort.study
    answers = Answer.objects.filter(enrollment=enrollment, step=Answer.Step.TRAINING)
    own = answers.exclude(example__gold_unproducible=True).aggregate(s=Avg("s1"))["s"]
    if own is None:  # every item unproducible (not in the official data): all of them count
        own = answers.aggregate(s=Avg("s1"))["s"]
    enrollment.training_s1, enrollment.training_finished_at = own, now
    others = list(comparison_set(enrollment).values_list("training_s1", flat=True))
    reason = filtering_decision(own, others, floor=study.filter_floor, fraction=study.filter_fraction)
    fields = ("training_s1", "training_finished_at", "current_served_at")
    if reason:
        transition(enrollment, State.FILTERED, actor="system", action="filter", reason=reason, update_fields=fields)
    else:
        transition(
            enrollment,
            State.TESTING,
            actor="system",
            action="pass training",
            reason=f"training S1 {own:.3f}",
            update_fields=fields,
        )


def comparison_set(enrollment: Enrollment):
    """The workers a finished training is compared with (rule 4, ``protocol.filtering_decision``).

    The cohort's other workers who finished training, verified (or not checked) by the crowd
    platform, and not filtered, withdrawn or expired: joins the platform never confirmed could
    lower the bar with forged zeros, and a filtered worker in the mean would let each filtering
    lower the bar for the next worker.
    """
    return (
        Enrollment.objects.filter(cohort=enrollment.cohort, training_s1__isnull=False)
        .exclude(state__in=COMPARISON_EXCLUDES)
        .exclude(verification__in=(Enrollment.UNVERIFIED, Enrollment.SUPERSEDED))
        .exclude(pk=enrollment.pk)
    )


def require_reason(reason: str) -> str:
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({"reason": ["give a reason: it is kept in the audit log"]})
    return reason


def filter_enrollment(*, enrollment_id: int, actor: str, reason: str) -> Enrollment:
    """A researcher filters a worker by hand; allowed until their test step has started."""
    reason = require_reason(reason)
    with transaction.atomic():
        enrollment = load_enrollment(enrollment_id, lock=True)
        started = Answer.objects.filter(enrollment=enrollment, step=Answer.Step.TEST).exists()
        refusal = filter_refusal(enrollment.state, int(started))
        if refusal:
            raise Conflict(refusal)
        transition(enrollment, State.FILTERED, actor=actor, action="filter by researcher", reason=reason)
        return enrollment


def reinstate_enrollment(*, enrollment_id: int, actor: str, reason: str) -> Enrollment:
    """Undo a filtering: back to the test step (or training, if it was not finished), with the time the part had
    left when the worker was filtered: the part's clock starts later by the time spent filtered, which never comes out
    of their limit (one reinstated after their deadline would otherwise be expired at once), nor counts as time the
    part took (its measured timing, ``PartTiming``); the limit, and the End-now window near it, stay as they were."""
    reason = require_reason(reason)
    now = timezone.now()
    with transaction.atomic():
        enrollment = load_enrollment(enrollment_id, lock=True)
        provider = enrollment.cohort.study.provider
        refusal: str | None = reinstate_refusal(enrollment.state) or provider.reinstate_refusal(enrollment)
        if refusal:
            raise Conflict(refusal)
        Cohort.objects.select_for_update().filter(pk=enrollment.cohort_id).first()
        taken = Enrollment.objects.filter(holds_place(), cohort=enrollment.cohort).count()
        refusal = reinstate_refusal(enrollment.state, taken=taken, target=enrollment.cohort.target)
        if refusal:
            raise Conflict(refusal)
        filtered_at = (
            AuditEvent.objects.filter(enrollment=enrollment, to_state=State.FILTERED).order_by("-at", "-pk").first()
        )
        if filtered_at is not None:
            enrollment.timer_started_at = part_start(enrollment) + (now - filtered_at.at)
        transition(
            enrollment,
            reinstate_state(enrollment),
            actor=actor,
            action="reinstate",
            reason=reason,
            update_fields=("timer_started_at",),
        )
        return enrollment


def leave_out_of_results(*, enrollment_id: int, actor: str, reason: str) -> Enrollment:
    """A researcher leaves a worker out of every result once filtering is closed (``protocol.leave_out_refusal``);
    the worker goes on, finishes and is paid as before. Audited with the reason; undone by ``put_back_in_results``."""

    def refusal(enrollment: Enrollment) -> str | None:
        started = Answer.objects.filter(enrollment=enrollment, step=Answer.Step.TEST).exists()
        return leave_out_refusal(enrollment.state, int(started), enrollment.left_out)

    return _set_left_out(enrollment_id, True, refusal, actor=actor, action="leave out of results", reason=reason)


def put_back_in_results(*, enrollment_id: int, actor: str, reason: str) -> Enrollment:
    """Undo ``leave_out_of_results`` (audited with the reason)."""

    def refusal(enrollment: Enrollment) -> str | None:
        return None if enrollment.left_out else "this worker is not left out of the results"

    return _set_left_out(enrollment_id, False, refusal, actor=actor, action="put back in results", reason=reason)


def _set_left_out(enrollment_id: int, left_out: bool, refusal, *, actor: str, action: str, reason: str) -> Enrollment:
    reason = require_reason(reason)
    with transaction.atomic():
        enrollment = load_enrollment(enrollment_id, lock=True)
        why_not = refusal(enrollment)
        if why_not:
            raise Conflict(why_not)
        enrollment.left_out = left_out
        enrollment.save(update_fields=["left_out"])
        results_changed(enrollment=enrollment)
        AuditEvent.objects.create(
            study=enrollment.cohort.study,
            enrollment=enrollment,
            actor=actor,
            action=action,
            from_state=enrollment.state,
            to_state=enrollment.state,
            reason=reason,
        )
        return enrollment


def withdraw(*, enrollment_id: int, actor: str, reason: str = "") -> Enrollment:
    with transaction.atomic():
        enrollment = load_enrollment(enrollment_id, lock=True)
        transition(
            enrollment,
            State.WITHDRAWN,
            actor=actor,
            action="withdraw",
            reason=reason or "withdrew",
            parts=parts_of(enrollment),
        )
        return enrollment


def expire_stale(*, now: datetime | None = None) -> int:
    """Expire every enrollment past its part's deadline (``expire_if_stale``); returns how many."""
    now = now or timezone.now()
    count = 0
    candidates = Enrollment.objects.filter(state__in=(*STEP_OF_STATE, State.BETWEEN))
    for enrollment_id in candidates.values_list("pk", flat=True):
        with transaction.atomic():
            count += expire_if_stale(load_enrollment(enrollment_id, lock=True), now)
    return count
