"""Every operation of the annotation protocol (paper section 4) as a plain function.

Views, the API, management commands and tests call these; each rule of the protocol is
enforced here (or by a database constraint) and nowhere else.
"""

from __future__ import annotations

import random
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Avg, Count
from django.utils import timezone

from tasks_data.models import Example, Task, TrainingSet
from tasks_data.registry import SHOTS, TASKS
from tasks_data.s1 import item_s1

from .answers import InvalidAnswer, validate_answer
from .models import Answer, AuditEvent, Cohort, Enrollment, Study, Worker
from .protocol import HOLDS_SLOT, State, TransitionNotAllowed, transition

SHOT_CONDITIONS = (0, *SHOTS)
PROLIFIC_COMPLETE_URL = "https://app.prolific.com/submissions/complete?cc={code}"
MTURK_PREVIEW = "ASSIGNMENT_ID_NOT_AVAILABLE"

__all__ = [
    "InvalidAnswer", "TransitionNotAllowed", "Conflict", "JoinRefused", "create_study", "launch_cohorts",
    "close_cohort", "close_study", "join", "current_item", "submit_answer", "filter_enrollment",
    "reinstate_enrollment", "withdraw", "expire_stale", "completion", "item_order", "active_seconds", "pay",
    "step_name",
]


class Conflict(Exception):
    """The request clashes with the protocol's state (HTTP 409)."""


class JoinRefused(Exception):
    """A worker cannot join a cohort; ``status`` is the HTTP status, ``message`` says why."""

    def __init__(self, status: int, message: str):
        self.status, self.message = status, message
        super().__init__(message)


# ---------------------------------------------------------------- studies and cohorts


def create_study(*, name: str, tasks: Sequence[str], shots: Sequence[int] = (0, 10, 20, 30), chain: int = 1,
                 workers_per_cohort: int = 3, pay_rate: Decimal | float = Decimal("12"),
                 filter_floor: float | None = None, filter_fraction: float | None = 0.5,
                 platform: str = Study.Platform.PROLIFIC, worker_id_param: str = "worker_id",
                 completion_code: str = "", screenout_code: str = "", test_order: str = Study.TestOrder.FILE,
                 idle_cap_seconds: int = 300, time_limit_minutes: int | None = None, created_by=None,
                 launch: bool = False) -> Study:
    """Create a study and its cohorts (one per task x shots); raises ValidationError naming the field."""
    errors: dict[str, list[str]] = {}
    tasks, shots = list(dict.fromkeys(tasks)), sorted(set(shots))
    if not tasks:
        errors.setdefault("tasks", []).append("choose at least one task")
    unknown = [t for t in tasks if t not in TASKS]
    if unknown:
        errors.setdefault("tasks", []).append(f"unknown task(s): {', '.join(unknown)}")
    task_rows = {t.slug: t for t in Task.objects.filter(slug__in=tasks)}
    missing = [t for t in tasks if t in TASKS and t not in task_rows]
    if missing:
        errors.setdefault("tasks", []).append(f"no data imported for: {', '.join(missing)} (run import_clues)")
    if not shots:
        errors.setdefault("shots", []).append("choose at least one shot condition")
    bad_shots = [k for k in shots if k not in SHOT_CONDITIONS]
    if bad_shots:
        errors.setdefault("shots", []).append(f"shots must be among {SHOT_CONDITIONS}, got {bad_shots}")
    training_sets = {(ts.task.slug, ts.shots): ts for ts in TrainingSet.objects.filter(
        task__slug__in=tasks, chain=chain, shots__in=[k for k in shots if k]).select_related("task")}
    for slug in task_rows:
        absent = [k for k in shots if k in SHOTS and (slug, k) not in training_sets]
        if absent:
            errors.setdefault("chain", []).append(f"{TASKS[slug].name} has no chain {chain} for {absent} shots")
    if platform not in Study.Platform.values:
        errors.setdefault("platform", []).append(f"unknown platform {platform!r}")
    study = Study(
        name=name, tasks=tasks, shots=shots, chain=chain, workers_per_cohort=workers_per_cohort,
        pay_rate=Decimal(str(pay_rate)), filter_floor=filter_floor, filter_fraction=filter_fraction,
        platform=platform, worker_id_param=worker_id_param,
        completion_code=completion_code or f"C{secrets.token_hex(4).upper()}",
        screenout_code=screenout_code or f"S{secrets.token_hex(4).upper()}",
        test_order=test_order, idle_cap_seconds=idle_cap_seconds, time_limit_minutes=time_limit_minutes,
        created_by=created_by,
    )
    try:
        study.full_clean(exclude=["tasks", "shots", "created_by"])
    except ValidationError as exc:
        for key, messages in exc.message_dict.items():
            errors.setdefault(key, []).extend(messages)
    if study.completion_code == study.screenout_code:
        errors.setdefault("screenout_code", []).append("must differ from the completion code")
    if errors:
        raise ValidationError(errors)
    actor = created_by.get_username() if created_by else "system"
    with transaction.atomic():
        study.save()
        Cohort.objects.bulk_create([
            Cohort(study=study, task=task_rows[slug], shots=k, training_set=training_sets.get((slug, k)),
                   target=workers_per_cohort)
            for slug in tasks for k in shots
        ])
        AuditEvent.objects.create(study=study, actor=actor, action="create study",
                                  reason=f"{len(tasks)} task(s) x {len(shots)} shot condition(s)")
        if launch:
            launch_cohorts(study, actor=actor)
    return study


def launch_cohorts(study: Study, *, cohorts: Sequence[Cohort] | None = None, actor: str) -> int:
    """Open cohorts for joining (all of the study's by default); returns how many opened."""
    if not study.is_open:
        raise Conflict("the study is closed")
    qs = Cohort.objects.filter(study=study, launched_at__isnull=True, closed_at__isnull=True)
    if cohorts is not None:
        qs = qs.filter(pk__in=[c.pk for c in cohorts])
    count = qs.update(launched_at=timezone.now())
    if count:
        AuditEvent.objects.create(study=study, actor=actor, action="launch cohorts", reason=f"{count} cohort(s)")
    return count


def close_cohort(cohort: Cohort, *, actor: str, reason: str = "") -> None:
    if cohort.closed_at is None:
        cohort.closed_at = timezone.now()
        cohort.save(update_fields=["closed_at"])
        AuditEvent.objects.create(study=cohort.study, actor=actor, action="close cohort",
                                  reason=reason or f"{cohort.task.slug} {cohort.shots}-shot")


def close_study(study: Study, *, actor: str, reason: str = "") -> None:
    if study.closed_at is None:
        study.closed_at = timezone.now()
        study.save(update_fields=["closed_at"])
        AuditEvent.objects.create(study=study, actor=actor, action="close study", reason=reason)


# ---------------------------------------------------------------- joining


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
    def need(name: str) -> str:
        value = (params.get(name) or "").strip()
        if not value:
            raise JoinRefused(400, f"this link needs the {name} parameter from {study.get_platform_display()}")
        if len(value) > 100:
            raise JoinRefused(400, f"the {name} parameter is too long")
        return value

    if study.platform == Study.Platform.PROLIFIC:
        pid = need("PROLIFIC_PID")
        data = {k: params.get(k, "")[:100] for k in ("STUDY_ID", "SESSION_ID")}
        return pid, data["SESSION_ID"], data
    if study.platform == Study.Platform.MTURK:
        if params.get("assignmentId") == MTURK_PREVIEW:
            return None
        worker_id = need("workerId")
        data = {"assignmentId": need("assignmentId"), "hitId": params.get("hitId", "")[:100],
                "turkSubmitTo": params.get("turkSubmitTo", "")[:200]}
        return worker_id, data["assignmentId"], data
    if study.platform == Study.Platform.GENERIC:
        return need(study.worker_id_param), "", {}
    if not (user and user.is_authenticated):
        raise JoinRefused(403, "log in with your lab account to join this study")
    return str(user.pk), "", {}


def join(token: str, params: Mapping[str, str], *, user=None, bound_enrollment_id: int | None = None) -> JoinOutcome:
    """Enroll a worker through a cohort's join link, or take a returning worker back.

    Raises JoinRefused (404 unknown link, 400 missing parameter, 403 closed / not allowed,
    409 full or already exposed to the task).
    """
    cohort = Cohort.objects.select_related("study", "task").filter(join_token=token).first()
    if cohort is None:
        raise JoinRefused(404, "this study link is not valid")
    study = cohort.study
    identity = _identity(study, params, user)
    if identity is None:
        return JoinOutcome(cohort, None)
    external_id, session, data = identity

    with transaction.atomic():
        worker, _ = Worker.objects.get_or_create(
            platform=study.platform, external_id=external_id,
            defaults={"user": user if study.platform == Study.Platform.LOCAL else None},
        )
        existing = Enrollment.objects.filter(worker=worker, task=cohort.task).select_related("cohort").first()
        if existing is not None:
            if existing.cohort_id != cohort.pk:
                raise JoinRefused(409, "you have already taken part in a study on this task, and the results "
                                       "need people who have not seen it before; thank you for your interest")
            # A returning worker: the same browser session, or the platform's same session/assignment.
            same_browser = bound_enrollment_id == existing.pk
            same_platform_session = bool(session) and session == existing.platform_session
            if not (same_browser or same_platform_session or study.platform == Study.Platform.LOCAL):
                raise JoinRefused(403, "this worker id is already taking part from another session; "
                                       "please return to the browser where you started")
            return JoinOutcome(cohort, existing)

        if not cohort.is_accepting:
            raise JoinRefused(403, "this study is closed and no longer accepts participants")
        # Rule 2, capacity: lock the cohort row so concurrent joins are counted one at a time.
        Cohort.objects.select_for_update().filter(pk=cohort.pk).first()
        taken = Enrollment.objects.filter(cohort=cohort, state__in=HOLDS_SLOT).count()
        if taken >= cohort.target:
            raise JoinRefused(409, "this study is full: all places have been taken")
        enrollment = Enrollment(
            cohort=cohort, worker=worker, task=cohort.task, order_seed=secrets.randbits(62),
            platform_session=session, platform_data=data,
        )
        try:
            with transaction.atomic():
                transition(enrollment, State.TRAINING if cohort.shots else State.TESTING,
                           actor="worker", action="join", reason=f"joined via {study.get_platform_display()}")
        except IntegrityError:
            # The same worker joined this task in a concurrent request (rule 1's constraint).
            raise JoinRefused(409, "you have already taken part in a study on this task") from None
    return JoinOutcome(cohort, enrollment, created=True)


# ---------------------------------------------------------------- items


def item_order(enrollment: Enrollment, step: str) -> list[int]:
    """Example ids of a step in the order this worker sees them (one query)."""
    cohort = enrollment.cohort
    if step == Answer.Step.TRAINING:
        if cohort.training_set_id is None:
            return []
        return list(cohort.training_set.items.order_by("position").values_list("example_id", flat=True))
    ids = list(Example.objects.filter(task_id=cohort.task_id, role=Example.Role.TEST)
               .order_by("position").values_list("id", flat=True))
    if cohort.study.test_order == Study.TestOrder.SHUFFLE:
        random.Random(enrollment.order_seed).shuffle(ids)
    return ids


@dataclass
class WorkState:
    step: str  # "training" | "test" | "done" | "filtered" | "withdrawn" | "expired"
    done: int
    total: int
    item: Example | None = None
    enrollment: Enrollment | None = None


_STEP_OF_STATE = {State.TRAINING: Answer.Step.TRAINING, State.TESTING: Answer.Step.TEST}
_STEP_NAMES = {State.TRAINING: "training", State.TESTING: "test", State.COMPLETED: "done"}


def step_name(state: str) -> str:
    """The worker-facing step of an enrollment state: training, test, done, filtered, withdrawn, expired."""
    return _STEP_NAMES.get(state, state)


def _load(enrollment_id: int, *, lock: bool) -> Enrollment:
    qs = Enrollment.objects.select_related("cohort__study", "cohort__task", "task")
    if lock:
        qs = qs.select_for_update(of=("self",))
    return qs.get(pk=enrollment_id)


def _expire_if_stale(enrollment: Enrollment, now: datetime) -> bool:
    limit = enrollment.cohort.study.time_limit_minutes
    if limit and enrollment.state in _STEP_OF_STATE and now - enrollment.enrolled_at > timedelta(minutes=limit):
        transition(enrollment, State.EXPIRED, actor="system", action="expire",
                   reason=f"time limit of {limit} minutes passed")
        return True
    return False


def current_item(enrollment_id: int) -> WorkState:
    """Where the worker is; records when the current item was first served."""
    now = timezone.now()
    with transaction.atomic():
        enrollment = _load(enrollment_id, lock=True)
        _expire_if_stale(enrollment, now)
        step = _STEP_OF_STATE.get(enrollment.state)
        if step is None:
            # Progress of the step the worker ended in: the test step once it started, else training.
            answered = dict(Answer.objects.filter(enrollment=enrollment).order_by().values("step")
                            .annotate(n=Count("id")).values_list("step", "n"))
            last = Answer.Step.TEST if (answered.get(Answer.Step.TEST) or enrollment.state == State.COMPLETED
                                        or not enrollment.cohort.shots) else Answer.Step.TRAINING
            return WorkState(step=step_name(enrollment.state), done=answered.get(last, 0),
                             total=len(item_order(enrollment, last)), enrollment=enrollment)
        order = item_order(enrollment, step)
        done = Answer.objects.filter(enrollment=enrollment, step=step).count()
        item = Example.objects.get(pk=order[done])
        if enrollment.current_served_at is None:
            enrollment.current_served_at = now
            enrollment.save(update_fields=["current_served_at"])
        return WorkState(step=step, done=done, total=len(order), item=item, enrollment=enrollment)


@dataclass
class SubmitResult:
    step: str
    answer: Answer
    done: int
    total: int
    next_state: str
    gold: list[str] | None = None  # training step only
    s1: float | None = None  # training step only
    events: list[str] = field(default_factory=list)


def submit_answer(enrollment_id: int, example_id: int, raw_answer) -> SubmitResult:
    """Store one answer, once (rules 3, 5, 6); at the end of a step, move the worker on.

    Raises Conflict (409): not in a step, the item is not the current one, or it is already
    answered; InvalidAnswer (400). Nothing is stored when it raises.
    """
    now = timezone.now()
    with transaction.atomic():
        enrollment = _load(enrollment_id, lock=True)
        if _expire_if_stale(enrollment, now):
            raise Conflict("your time for this study has run out")
        step = _STEP_OF_STATE.get(enrollment.state)
        if step is None:
            raise Conflict(f"no answers are taken now: your enrollment is {enrollment.state}")
        order = item_order(enrollment, step)
        answered = set(Answer.objects.filter(enrollment=enrollment).values_list("example_id", flat=True))
        if example_id in answered:
            raise Conflict("this item was already answered; answers are final")
        done = sum(1 for i in order if i in answered)
        if example_id != order[done]:
            raise Conflict("this is not the current item: items are answered one at a time, in order")
        example = Example.objects.select_related("task").get(pk=example_id)
        spec = enrollment.cohort.task.spec
        valid = validate_answer(spec, example, raw_answer)
        score = item_s1(valid.texts, example.gold, alternatives=spec.answer_kind.gold_is_alternatives)
        try:
            with transaction.atomic():
                answer = Answer.objects.create(
                    enrollment=enrollment, example=example, step=step, position=done, texts=valid.texts,
                    spans=valid.spans, s1=score, served_at=enrollment.current_served_at,
                )
        except IntegrityError:
            raise Conflict("this item was already answered; answers are final") from None
        enrollment.current_served_at = None
        enrollment.save(update_fields=["current_served_at"])
        done += 1
        result = SubmitResult(step=step, answer=answer, done=done, total=len(order), next_state=enrollment.state)
        if step == Answer.Step.TRAINING:
            result.gold, result.s1 = list(example.gold), score
            if done == len(order):
                _finish_training(enrollment, now)
        elif done == len(order):
            enrollment.completed_at = now
            transition(enrollment, State.COMPLETED, actor="worker", action="complete test step",
                       update_fields=("completed_at",))
        result.next_state = enrollment.state
        return result


def _finish_training(enrollment: Enrollment, now: datetime) -> None:
    """Rule 4: compute the training S1 and let the study's filtering rule decide."""
    study = enrollment.cohort.study
    own = Answer.objects.filter(enrollment=enrollment, step=Answer.Step.TRAINING).aggregate(s=Avg("s1"))["s"]
    enrollment.training_s1, enrollment.training_finished_at = own, now
    # The others who finished training in the same cohort (same study, task and shots).
    others = list(Enrollment.objects.filter(cohort=enrollment.cohort, training_s1__isnull=False)
                  .exclude(pk=enrollment.pk).values_list("training_s1", flat=True))
    reason = ""
    if study.filter_floor is not None and own < study.filter_floor:
        reason = f"training S1 {own:.3f} is below the floor {study.filter_floor:.3f}"
    elif study.filter_fraction is not None and len(others) >= 2:
        mean = sum(others) / len(others)
        if own < study.filter_fraction * mean:
            reason = (f"training S1 {own:.3f} is below {study.filter_fraction:g} x the mean {mean:.3f} "
                      f"of {len(others)} other worker(s)")
    fields = ("training_s1", "training_finished_at")
    if reason:
        transition(enrollment, State.FILTERED, actor="system", action="filter", reason=reason, update_fields=fields)
    else:
        transition(enrollment, State.TESTING, actor="system", action="pass training",
                   reason=f"training S1 {own:.3f}", update_fields=fields)


# ---------------------------------------------------------------- researcher actions


def _require_reason(reason: str) -> str:
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({"reason": ["give a reason: it is kept in the audit log"]})
    return reason


def filter_enrollment(enrollment_id: int, *, actor: str, reason: str) -> Enrollment:
    """A researcher filters a worker by hand; allowed until their test step has started."""
    reason = _require_reason(reason)
    with transaction.atomic():
        enrollment = _load(enrollment_id, lock=True)
        if enrollment.state not in (State.TRAINING, State.TESTING):
            raise Conflict(f"only a worker in training or waiting for the test step can be filtered "
                           f"(this one is {enrollment.state})")
        if Answer.objects.filter(enrollment=enrollment, step=Answer.Step.TEST).exists():
            raise Conflict("this worker's test step has started: they can no longer be filtered")
        transition(enrollment, State.FILTERED, actor=actor, action="filter by researcher", reason=reason)
        return enrollment


def reinstate_enrollment(enrollment_id: int, *, actor: str, reason: str) -> Enrollment:
    """Undo a filtering: back to the test step (or training, if it was not finished)."""
    reason = _require_reason(reason)
    with transaction.atomic():
        enrollment = _load(enrollment_id, lock=True)
        if enrollment.state != State.FILTERED:
            raise Conflict(f"only a filtered worker can be reinstated (this one is {enrollment.state})")
        Cohort.objects.select_for_update().filter(pk=enrollment.cohort_id).first()
        taken = Enrollment.objects.filter(cohort=enrollment.cohort, state__in=HOLDS_SLOT).count()
        if taken >= enrollment.cohort.target:
            raise Conflict("the cohort is full: its places were taken after this worker was filtered")
        target = State.TESTING if enrollment.training_finished_at or not enrollment.cohort.shots else State.TRAINING
        transition(enrollment, target, actor=actor, action="reinstate", reason=reason)
        return enrollment


def withdraw(enrollment_id: int, *, actor: str, reason: str = "") -> Enrollment:
    with transaction.atomic():
        enrollment = _load(enrollment_id, lock=True)
        transition(enrollment, State.WITHDRAWN, actor=actor, action="withdraw", reason=reason or "withdrew")
        return enrollment


def expire_stale(now: datetime | None = None) -> int:
    """Expire every active enrollment past its study's time limit; returns how many."""
    now = now or timezone.now()
    count = 0
    candidates = Enrollment.objects.filter(state__in=_STEP_OF_STATE, cohort__study__time_limit_minutes__isnull=False)
    for enrollment_id in candidates.values_list("pk", flat=True):
        with transaction.atomic():
            count += _expire_if_stale(_load(enrollment_id, lock=True), now)
    return count


# ---------------------------------------------------------------- completion, time and pay


@dataclass
class Completion:
    code: str
    redirect_url: str | None = None  # Prolific
    post_url: str | None = None  # MTurk externalSubmit
    post_fields: dict = field(default_factory=dict)


def completion(enrollment: Enrollment) -> Completion | None:
    """The code (and where to send it) for a completed or filtered worker; None otherwise."""
    study = enrollment.cohort.study
    if enrollment.state == State.COMPLETED:
        code = study.completion_code
    elif enrollment.state == State.FILTERED:
        code = study.screenout_code  # paid for the training time
    else:
        return None
    if study.platform == Study.Platform.PROLIFIC:
        return Completion(code, redirect_url=PROLIFIC_COMPLETE_URL.format(code=code))
    if study.platform == Study.Platform.MTURK and enrollment.platform_data.get("turkSubmitTo"):
        base = enrollment.platform_data["turkSubmitTo"].rstrip("/")
        return Completion(code, post_url=f"{base}/mturk/externalSubmit",
                          post_fields={"assignmentId": enrollment.platform_data.get("assignmentId", ""),
                                       "completion_code": code})
    return Completion(code)


def active_seconds(enrolled_at: datetime, answered_at: Sequence[datetime], idle_cap_seconds: int) -> float:
    """Time on the study: the gaps between joining and each answer, each capped (rule 7)."""
    times = [enrolled_at, *sorted(answered_at)]
    return sum(min((b - a).total_seconds(), idle_cap_seconds) for a, b in zip(times, times[1:], strict=False))


def pay(seconds: float, rate_per_hour: Decimal) -> Decimal:
    return (Decimal(str(seconds)) / Decimal(3600) * Decimal(rate_per_hour)).quantize(Decimal("0.01"))

