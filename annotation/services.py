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
from urllib.parse import quote

from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction
from django.db.models import Avg
from django.utils import timezone

from tasks_data.models import Example, Task, TrainingSet, TrainingSetItem
from tasks_data.registry import SHOTS, TASKS
from tasks_data.s1 import item_s1

from . import attention, identity
from .answers import InvalidAnswer, validate_answer
from .models import Answer, AuditEvent, Cohort, Enrollment, Study, Worker
from .protocol import (
    HOLDS_SLOT,
    JoinRefusal,
    JoinRefused,
    State,
    TransitionNotAllowed,
    filter_refusal,
    filtering_decision,
    first_state,
    reinstate_refusal,
    reinstate_state,
    reopen_refusal,
    step_name,
    transition,
)

PROLIFIC_COMPLETE_URL = "https://app.prolific.com/submissions/complete?cc={code}"
MTURK_PREVIEW = "ASSIGNMENT_ID_NOT_AVAILABLE"

__all__ = [
    "InvalidAnswer", "TransitionNotAllowed", "Conflict", "JoinRefused", "create_study", "data_errors", "launch_cohorts",
    "close_cohort", "reopen_cohort", "close_study", "join", "current_item", "submit_answer", "filter_enrollment",
    "reinstate_enrollment", "withdraw", "expire_stale", "completion", "item_order", "active_seconds", "pay",
    "step_name",
    "revise_last_test_answer",
]


class Conflict(Exception):
    """The request clashes with the protocol's state (HTTP 409)."""


# One answer for "already took part" and "not allowed", so the join page never tells whether a
# given worker id has taken part before (issue 10.8).
NOT_ALLOWED = ("you cannot take part in this study with this link: it needs people who have not worked on "
               "this task before, and each person takes part once, from one browser. If you started this "
               "study in another browser, please go back to it")


# ---------------------------------------------------------------- studies and cohorts


def _study_defaults() -> dict:
    """The model's defaults of every parameter (one place: annotation.models.Study)."""
    fields = ("shots", "chain", "workers_per_cohort", "pay_rate", "pay_currency", "filter_floor", "filter_fraction",
              "platform", "worker_id_param", "test_order", "idle_cap_seconds", "time_limit_minutes", "expected_minutes",
              "worker_id_pattern", "manual_review")
    return {name: Study._meta.get_field(name).get_default() for name in fields}


def data_errors(tasks: list[str], shots: list[int], chain) -> tuple[dict, dict, dict]:
    """(errors, task rows, training sets): the imported data each (task, shots) cohort needs."""
    errors: dict[str, list[str]] = {}
    task_rows = {t.slug: t for t in Task.objects.filter(slug__in=tasks)}
    missing = [t for t in tasks if t in TASKS and t not in task_rows]
    if missing:
        errors.setdefault("tasks", []).append(f"no data imported for: {', '.join(missing)} (run import_clues)")
    training_sets = {(ts.task.slug, ts.shots): ts for ts in TrainingSet.objects.filter(
        task__slug__in=tasks, chain=chain, shots__in=[k for k in shots if k]).select_related("task")}
    for slug in task_rows:
        absent = [k for k in shots if k in SHOTS and (slug, k) not in training_sets]
        if absent:
            errors.setdefault("chain", []).append(f"{TASKS[slug].name} has no chain {chain} for {absent} shots")
    return errors, task_rows, training_sets


def create_study(*, name: str, tasks: Sequence[str], created_by=None, launch: bool = False, **params) -> Study:
    """Create a study and its cohorts (one per task x shots); raises ValidationError naming the field.

    ``params`` are Study's fields (shots, chain, workers_per_cohort, pay_rate, ...); left out, the
    model's default. Their limits are the model's (``Study.full_clean``), checked before any query.
    """
    unknown_params = set(params) - set(_study_defaults()) - {"completion_code", "screenout_code"}
    if unknown_params:
        raise TypeError(f"create_study() got unknown parameters: {', '.join(sorted(unknown_params))}")
    values = {**_study_defaults(), **params}
    if isinstance(tasks, (list, tuple)):
        tasks = list(dict.fromkeys(tasks))
    shots = values["shots"]
    if isinstance(shots, (list, tuple)) and all(isinstance(k, int) for k in shots):
        values["shots"] = sorted(set(shots))
    if isinstance(values["pay_rate"], float):
        values["pay_rate"] = Decimal(str(values["pay_rate"]))
    study = Study(name=name, tasks=tasks, created_by=created_by, **values)
    study.completion_code = study.completion_code or f"C{secrets.token_hex(4).upper()}"
    study.screenout_code = study.screenout_code or f"S{secrets.token_hex(4).upper()}"
    try:
        study.full_clean(exclude=["created_by"])
        errors = {}
    except ValidationError as exc:
        errors = exc.message_dict
    try:
        identity.check_pattern(study.worker_id_pattern)
    except ValueError as exc:
        errors.setdefault("worker_id_pattern", []).append(str(exc))
    valid = not ({"tasks", "shots", "chain"} & set(errors))
    missing, task_rows, training_sets = (data_errors(study.tasks, study.shots, study.chain) if valid
                                         else ({}, {}, {}))
    for key, messages in missing.items():
        errors.setdefault(key, []).extend(messages)
    if errors:
        raise ValidationError(errors)
    tasks, shots, workers_per_cohort = study.tasks, study.shots, study.workers_per_cohort
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
                                  reason=f"{cohort.task.slug} {cohort.shots}-shot" + (f": {reason}" if reason else ""))


def reopen_cohort(cohort: Cohort, *, actor: str, reason: str) -> Cohort:
    """Re-open a closed cohort that has places left (``protocol.reopen_refusal``); a reason is required.

    The join link takes workers again (or, if it was never launched, waits to be launched).
    """
    reason = _require_reason(reason)
    with transaction.atomic():
        cohort = Cohort.objects.select_for_update(of=("self",)).select_related("study", "task").get(pk=cohort.pk)
        taken = Enrollment.objects.filter(cohort=cohort, state__in=HOLDS_SLOT).count()
        refusal = reopen_refusal(cohort, taken=taken, study_open=cohort.study.is_open)
        if refusal:
            raise Conflict(refusal)
        cohort.closed_at = None
        cohort.save(update_fields=["closed_at"])
        AuditEvent.objects.create(study=cohort.study, actor=actor, action="reopen cohort",
                                  reason=f"{cohort.task.slug} {cohort.shots}-shot: {reason}")
    return cohort


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
    from . import recruitment  # the Prolific rules (imports this module)

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


# ---------------------------------------------------------------- items


def item_order(enrollment: Enrollment, step: str) -> list[int]:
    """Example ids of a step in the order this worker sees them (one query)."""
    cohort = enrollment.cohort
    if step == Answer.Step.TRAINING:
        if cohort.training_set_id is None:
            return []
        return list(TrainingSetItem.objects.filter(training_set_id=cohort.training_set_id)
                    .order_by("position", "pk").values_list("example_id", flat=True))
    ids = list(Example.objects.filter(task_id=cohort.task_id, role=Example.Role.TEST)
               .order_by("position", "pk").values_list("id", flat=True))
    if cohort.study.test_order == Study.TestOrder.SHUFFLE:
        random.Random(enrollment.order_seed).shuffle(ids)
    return ids


# ---------------------------------------------------------------- the worker's hot path
#
# GET /api/work/current/ and POST /api/work/answer/ are most of the platform's traffic. Their
# statements are few and constant (tests/hardening/test_query_counts.py), and all but the INSERT
# are written in SQL: building and compiling the ORM's equivalent cost several times running the
# statement, and was most of a request's CPU (benchmarks/README.md). Table and column names come
# from the models' meta, and the SQL is plain enough for PostgreSQL and SQLite alike (the
# protocol tests run on both).

_ENROLLMENT, _ANSWER = Enrollment._meta.db_table, Answer._meta.db_table
_EXAMPLE, _ITEM = Example._meta.db_table, TrainingSetItem._meta.db_table
_TEST_ITEM_SQL = (f"SELECT * FROM {_EXAMPLE} WHERE task_id = %s AND role = %s "
                  "ORDER BY position, id LIMIT 1 OFFSET %s")
_TRAINING_ITEM_SQL = (f"SELECT e.* FROM {_EXAMPLE} e INNER JOIN {_ITEM} i ON i.example_id = e.id "
                      "WHERE i.training_set_id = %s ORDER BY i.position, i.id LIMIT 1 OFFSET %s")


def _item_at(enrollment: Enrollment, step: str, position: int) -> Example | None:
    """The item at ``position`` (0-based) of the step in this worker's order, or None past its end.

    The order of ``item_order``, without loading it when the order is the file's: one query,
    an index scan of at most ``position + 1`` rows; a shuffled test order loads the ids first.
    """
    cohort = enrollment.cohort
    if step == Answer.Step.TRAINING:
        if cohort.training_set_id is None:
            return None
        rows = Example.objects.raw(_TRAINING_ITEM_SQL, [cohort.training_set_id, position])
    elif cohort.study.test_order == Study.TestOrder.SHUFFLE:
        ids = item_order(enrollment, step)
        if position >= len(ids):
            return None
        rows = Example.objects.filter(pk=ids[position])
    else:
        rows = Example.objects.raw(_TEST_ITEM_SQL, [cohort.task_id, Example.Role.TEST.value, position])
    example = next(iter(rows), None)
    if example is not None:
        example.task = cohort.task  # loaded with the enrollment
    return example


def _answers_in_step(enrollment_id: int, step: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*) FROM {_ANSWER} WHERE enrollment_id = %s AND step = %s",
                       [enrollment_id, step])
        return cursor.fetchone()[0]


def _mark_served(enrollment_id: int, now: datetime | None) -> bool:
    """Record when the current item was first served (``now``), or clear it (None); True if a row changed."""
    value = connection.ops.adapt_datetimefield_value(now)
    with connection.cursor() as cursor:
        if now is None:
            cursor.execute(f"UPDATE {_ENROLLMENT} SET current_served_at = NULL WHERE id = %s", [enrollment_id])
        else:
            cursor.execute(f"UPDATE {_ENROLLMENT} SET current_served_at = %s "
                           "WHERE id = %s AND current_served_at IS NULL", [value, enrollment_id])
        return cursor.rowcount == 1


def _quoted(*names: str) -> str:
    return ".".join(connection.ops.quote_name(n) for n in names)


_JOINED = ((Enrollment, "e"), (Cohort, "c"), (Study, "s"), (Task, "t"))
_COUNTS = {
    # The answers given in each step: read in the statement that reads the state (see current_item).
    "training_done": (f"SELECT COUNT(*) FROM {_ANSWER} a WHERE a.enrollment_id = e.id AND a.step = %s",
                      [Answer.Step.TRAINING.value]),
    "test_done": (f"SELECT COUNT(*) FROM {_ANSWER} a WHERE a.enrollment_id = e.id AND a.step = %s",
                  [Answer.Step.TEST.value]),
    # The items of each step: static data, so also safe to read in a locking statement.
    "training_total": (f"SELECT COUNT(*) FROM {_ITEM} i WHERE i.training_set_id = c.training_set_id", []),
    "test_total": (f"SELECT COUNT(*) FROM {_EXAMPLE} x WHERE x.task_id = c.task_id AND x.role = %s",
                   [Example.Role.TEST.value]),
}


def _load_sql(counts: tuple[str, ...]) -> tuple[str, list]:
    columns = [_quoted(alias, f.column) for model, alias in _JOINED for f in model._meta.concrete_fields]
    columns += [f"({_COUNTS[name][0]})" for name in counts]
    joins = (f"{_quoted(Enrollment._meta.db_table)} e "
             f"INNER JOIN {_quoted(Cohort._meta.db_table)} c ON c.id = e.cohort_id "
             f"INNER JOIN {_quoted(Study._meta.db_table)} s ON s.id = c.study_id "
             f"INNER JOIN {_quoted(Task._meta.db_table)} t ON t.id = c.task_id")
    return f"SELECT {', '.join(columns)} FROM {joins} WHERE e.id = %s", [p for n in counts for p in _COUNTS[n][1]]


_CONVERTERS: dict = {}


def _instance(model, values: list):
    """A model instance from its columns, converted as the ORM converts them (JSON, dates on SQLite...)."""
    fields = model._meta.concrete_fields
    if model not in _CONVERTERS:
        _CONVERTERS[model] = [(i, f.get_col(model._meta.db_table), converter) for i, f in enumerate(fields)
                              for converter in (connection.ops.get_db_converters(f.get_col(model._meta.db_table))
                                                + f.get_db_converters(connection))]
    for i, column, converter in _CONVERTERS[model]:
        values[i] = converter(values[i], column, connection)
    return model.from_db(connection.alias, [f.attname for f in fields], values)


def _fetch(enrollment_id: int, *, lock: bool) -> Enrollment:
    """The enrollment with its cohort, study and task and the item counts of each step, in one statement.

    Unlocked, it also counts the answers of each step in that statement, so that state and counts
    agree. Locked (``SELECT ... FOR UPDATE OF e``), it does not: a locking read that waited for
    the lock would count as of before the wait, so the caller counts once it holds the lock.
    What ``Enrollment.objects.select_related(...).annotate(...).get()`` gives, by hand: the ORM
    spends more CPU building that query than the database spends running it.
    """
    counts = ("training_total", "test_total") if lock else tuple(_COUNTS)
    sql, params = _LOAD[counts]
    if lock and connection.features.has_select_for_update:
        sql += " FOR UPDATE OF e" if connection.features.has_select_for_update_of else " FOR UPDATE"
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, enrollment_id])
        row = cursor.fetchone()
    if row is None:
        raise Enrollment.DoesNotExist(f"no enrollment {enrollment_id}")
    objects, at = [], 0
    for model, _ in _JOINED:
        width = len(model._meta.concrete_fields)
        objects.append(_instance(model, list(row[at:at + width])))
        at += width
    enrollment, cohort, study, task = objects
    cohort.study, cohort.task = study, task
    enrollment.cohort, enrollment.task = cohort, task
    for name, value in zip(counts, row[at:], strict=True):
        setattr(enrollment, name, value)
    return enrollment


_LOAD = {counts: _load_sql(counts) for counts in (("training_total", "test_total"), tuple(_COUNTS))}


def _total(enrollment: Enrollment, step: str) -> int:
    return enrollment.training_total if step == Answer.Step.TRAINING else enrollment.test_total


@dataclass
class WorkState:
    step: str  # "training" | "test" | "done" | "filtered" | "withdrawn" | "expired"
    done: int
    total: int
    item: Example | None = None
    enrollment: Enrollment | None = None


_STEP_OF_STATE = {State.TRAINING: Answer.Step.TRAINING, State.TESTING: Answer.Step.TEST}
def _load(enrollment_id: int, *, lock: bool) -> Enrollment:
    qs = Enrollment.objects.select_related("cohort__study", "cohort__task", "task")
    if lock:
        qs = qs.select_for_update(of=("self",))
    return qs.get(pk=enrollment_id)


def _is_stale(enrollment: Enrollment, now: datetime) -> bool:
    limit = enrollment.cohort.study.time_limit  # every enrollment has one (issue 9)
    return bool(limit and enrollment.state in _STEP_OF_STATE
                and now - enrollment.enrolled_at > timedelta(minutes=limit))


def _expire_if_stale(enrollment: Enrollment, now: datetime) -> bool:
    if _is_stale(enrollment, now):
        limit = enrollment.cohort.study.time_limit
        transition(enrollment, State.EXPIRED, actor="system", action="expire",
                   reason=f"time limit of {limit} minutes passed")
        return True
    return False


def current_item(enrollment_id: int) -> WorkState:
    """Where the worker is; records when the current item was first served.

    A read, in a constant number of queries (3, or 2 once the item's serving time is recorded):
    one statement reads the enrollment with its progress (one snapshot, so state and answer
    counts agree), one the item at that position, and a conditional UPDATE records the serving
    time. No row lock: submissions are serialised by ``submit_answer``'s lock, and a read racing
    a submission only returns the state just before it.
    """
    now = timezone.now()
    enrollment = _fetch(enrollment_id, lock=False)
    if _is_stale(enrollment, now):
        with transaction.atomic():
            _expire_if_stale(_load(enrollment_id, lock=True), now)
        enrollment = _fetch(enrollment_id, lock=False)
    step = _STEP_OF_STATE.get(enrollment.state)
    if step is None:
        # Progress of the step the worker ended in: the test step once it started, else training.
        last = Answer.Step.TEST if (enrollment.test_done or enrollment.state == State.COMPLETED
                                    or not enrollment.cohort.shots) else Answer.Step.TRAINING
        done = enrollment.test_done if last == Answer.Step.TEST else enrollment.training_done
        return WorkState(step=step_name(enrollment.state), done=done, total=_total(enrollment, last),
                         enrollment=enrollment)
    done = enrollment.training_done if step == Answer.Step.TRAINING else enrollment.test_done
    check, checks_done, checks = _attention(enrollment, step, done)
    item = attention.as_item(check, enrollment.cohort.task) if check else _item_at(enrollment, step, done)
    if item is None:
        raise Conflict("this step has no item left to answer")  # only if the data changed under a study
    if enrollment.current_served_at is None and _mark_served(enrollment.pk, now):
        enrollment.current_served_at = now
    return WorkState(step=step, done=done + checks_done, total=_total(enrollment, step) + checks, item=item,
                     enrollment=enrollment)


def _attention(enrollment: Enrollment, step: str, done: int) -> tuple:
    """(due attention check, checks answered, checks) in the test step of a study with checks; else none
    (and no query: the worker's progress counts the checks, the researcher's tables never do)."""
    if step != Answer.Step.TEST or not enrollment.cohort.study.has_attention_checks:
        return None, 0, 0
    return attention.progress(enrollment, done)


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

    The enrollment's row lock serialises a worker's submissions; the answers are counted after
    the lock is taken, so the count includes every submission committed before. A constant
    number of queries: lock, count, current item, INSERT, UPDATE (plus 4 at the end of a step).
    """
    now = timezone.now()
    with transaction.atomic():
        enrollment = _fetch(enrollment_id, lock=True)
        if _expire_if_stale(enrollment, now):
            raise Conflict("your time for this study has run out")
        step = _STEP_OF_STATE.get(enrollment.state)
        if step is None:
            raise Conflict(f"no answers are taken now: your enrollment is {enrollment.state}")
        done = _answers_in_step(enrollment.pk, step)
        total = _total(enrollment, step)
        check, checks_done, checks = _attention(enrollment, step, done)
        if check is not None:
            return _submit_check(enrollment, check, example_id, raw_answer, done + checks_done, total + checks)
        example = _item_at(enrollment, step, done) if done < total else None
        if example is None or example.pk != example_id:
            if (isinstance(example_id, int) and 0 < example_id < 2**63
                    and Answer.objects.filter(enrollment_id=enrollment.pk, example_id=example_id).exists()):
                raise Conflict("this item was already answered; answers are final")
            raise Conflict("this is not the current item: items are answered one at a time, in order")
        spec = enrollment.cohort.task.spec
        valid = validate_answer(spec, example, raw_answer)
        score = item_s1(valid.texts, example.gold, alternatives=spec.answer_kind.gold_is_alternatives)
        try:
            # No savepoint: on an IntegrityError the Conflict leaves the block and rolls it all back.
            answer = Answer.objects.create(
                enrollment=enrollment, example=example, step=step, position=done, texts=valid.texts,
                spans=valid.spans, s1=score, served_at=enrollment.current_served_at,
            )
        except IntegrityError:
            raise Conflict("this item was already answered; answers are final") from None
        served = enrollment.current_served_at
        enrollment.current_served_at = None
        done += 1
        result = SubmitResult(step=step, answer=answer, done=done, total=total, next_state=enrollment.state)
        if step == Answer.Step.TRAINING:
            result.gold, result.s1 = list(example.gold), score
            if done == total:
                _finish_training(enrollment, now)
        elif done == total:
            enrollment.completed_at = now
            transition(enrollment, State.COMPLETED, actor="worker", action="complete test step",
                       update_fields=("completed_at", "current_served_at"))
        if done < total and served is not None:
            _mark_served(enrollment.pk, None)
        result.next_state = enrollment.state
        result.done, result.total = result.done + checks_done, result.total + checks
        return result


def revise_last_test_answer(enrollment_id: int, example_id: int, raw_answer) -> Answer:
    """Change the worker's latest test answer, until the next one is submitted (a forgiving test step).

    The paper makes an answer final once its gold is shown: training answers (gold shown at once),
    an older test answer, and the last one once the enrollment has left the test step stay final
    (Conflict, 409). InvalidAnswer (400) as for submit_answer. The change is audited with both values.
    The only update of a stored answer: a queryset UPDATE under the enrollment's row lock, which
    submit_answer also takes, so no later answer can appear in between.
    """
    import json

    now = timezone.now()
    with transaction.atomic():
        enrollment = _fetch(enrollment_id, lock=True)
        if _expire_if_stale(enrollment, now):
            raise Conflict("your time for this study has run out")
        if enrollment.state != State.TESTING:
            raise Conflict("answers can be changed only during the test step: this answer is final")
        last = (Answer.objects.filter(enrollment_id=enrollment.pk, step=Answer.Step.TEST)
                .select_related("example").order_by("-position").first())
        if last is None or not isinstance(example_id, int) or last.example_id != example_id:
            raise Conflict("only your last test answer can be changed, until you submit the next one")
        spec = enrollment.cohort.task.spec
        valid = validate_answer(spec, last.example, raw_answer)
        score = item_s1(valid.texts, last.example.gold, alternatives=spec.answer_kind.gold_is_alternatives)
        Answer.objects.filter(pk=last.pk).update(texts=valid.texts, spans=valid.spans, s1=score)
        AuditEvent.objects.create(
            study_id=enrollment.cohort.study_id, enrollment=enrollment, actor="worker",
            action="revise test answer", from_state=enrollment.state, to_state=enrollment.state,
            reason=json.dumps({"example_id": last.example_id, "position": last.position,
                               "before": {"texts": last.texts, "spans": last.spans},
                               "after": {"texts": valid.texts, "spans": valid.spans}}, ensure_ascii=False),
        )
        last.texts, last.spans, last.s1 = valid.texts, valid.spans, score
        return last
def _submit_check(enrollment: Enrollment, check, example_id, raw_answer, done: int, total: int) -> SubmitResult:
    """Store an attention check's answer apart from test answers (``annotation.attention``)."""
    if example_id != check.item_id:
        raise Conflict("this is not the current item: items are answered one at a time, in order")
    answer = attention.store_answer(enrollment, check, raw_answer)
    _mark_served(enrollment.pk, None)
    return SubmitResult(step=Answer.Step.TEST, answer=answer, done=done + 1, total=total,
                        next_state=enrollment.state)


def _finish_training(enrollment: Enrollment, now: datetime) -> None:
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
    # The others who finished training in the same cohort (same study, task and shots).
    # Withdrawn, expired or returned workers are not compared with (sybils that quit cannot lower the bar).
    others = list(Enrollment.objects.filter(cohort=enrollment.cohort, training_s1__isnull=False)
                  .exclude(state__in=(State.WITHDRAWN, State.EXPIRED))
                  .exclude(pk=enrollment.pk).values_list("training_s1", flat=True))
    reason = filtering_decision(own, others, floor=study.filter_floor, fraction=study.filter_fraction)
    fields = ("training_s1", "training_finished_at", "current_served_at")
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
        started = Answer.objects.filter(enrollment=enrollment, step=Answer.Step.TEST).exists()
        refusal = filter_refusal(enrollment.state, int(started))
        if refusal:
            raise Conflict(refusal)
        transition(enrollment, State.FILTERED, actor=actor, action="filter by researcher", reason=reason)
        return enrollment


def reinstate_enrollment(enrollment_id: int, *, actor: str, reason: str) -> Enrollment:
    """Undo a filtering: back to the test step (or training, if it was not finished)."""
    reason = _require_reason(reason)
    with transaction.atomic():
        enrollment = _load(enrollment_id, lock=True)
        refusal = reinstate_refusal(enrollment.state)
        if refusal:
            raise Conflict(refusal)
        Cohort.objects.select_for_update().filter(pk=enrollment.cohort_id).first()
        taken = Enrollment.objects.filter(cohort=enrollment.cohort, state__in=HOLDS_SLOT).count()
        refusal = reinstate_refusal(enrollment.state, taken=taken, target=enrollment.cohort.target)
        if refusal:
            raise Conflict(refusal)
        transition(enrollment, reinstate_state(enrollment), actor=actor, action="reinstate", reason=reason)
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
    candidates = Enrollment.objects.filter(state__in=_STEP_OF_STATE)
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
        return Completion(code, redirect_url=PROLIFIC_COMPLETE_URL.format(code=quote(code, safe="")))
    submit_to = enrollment.platform_data.get("turkSubmitTo") if study.platform == Study.Platform.MTURK else ""
    try:
        base = identity.check_turk_submit_to(submit_to) if submit_to else ""
    except identity.InvalidIdentity:
        base = ""  # stored before the allow-list: show the code instead of posting it anywhere
    if base:
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

