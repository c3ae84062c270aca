"""Answering: the items of each step, where the worker is, and storing answers (rules 3, 5, 6)."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import NoReturn

from django.db import IntegrityError, transaction
from django.utils import timezone

from tasks_data.models import Example, TrainingSetItem
from tasks_data.s1 import item_s1

from .. import attention
from ..answers import validate_answer
from ..estimates import granted_limit
from ..handles import is_handle_of, item_handle
from ..models import Answer, AttentionAnswer, AuditEvent, Enrollment, PartTiming, Study
from ..protocol import RETURN_DAYS, State, step_name, transition
from ..results_changes import results_changed
from .errors import Conflict, NotCurrentItem, TimeUp
from .filtering import (
    STEP_OF_STATE,
    expire_if_stale,
    finish_training,
    is_stale,
    load_enrollment,
    part_deadline,
    part_start,
    part_started_at,
    timed_out,
)
from .hot_paths import hot_path


def item_order(*, enrollment: Enrollment, step: str) -> list[int]:
    """Example ids of a step in the order this worker sees them (one query)."""
    cohort = enrollment.cohort
    if step == Answer.Step.TRAINING:
        if cohort.training_set_id is None:
            return []
        return list(
            TrainingSetItem.objects.filter(training_set_id=cohort.training_set_id)
            .order_by("position", "pk")
            .values_list("example_id", flat=True)
        )
    ids = list(
        Example.objects.filter(task_id=cohort.task_id, role=Example.Role.TEST)
        .order_by("position", "pk")
        .values_list("id", flat=True)
    )
    if cohort.study.test_order == Study.TestOrder.SHUFFLE:
        random.Random(enrollment.order_seed).shuffle(ids)
    return ids


def item_at(enrollment: Enrollment, step: str, position: int) -> Example | None:
    """The item at ``position`` (0-based) of the step in this worker's order, or None past its end.

    The order of ``item_order``, without loading it when the order is the file's: one query,
    an index scan of at most ``position + 1`` rows; a shuffled test order loads the ids first.
    """
    cohort = enrollment.cohort
    read = getattr(enrollment, "place_read", None)
    if read is not None and read[:2] == (step, position):
        example = read[2]  # read with the enrollment (hot_sql.fetch)
    elif step == Answer.Step.TRAINING:
        if cohort.training_set_id is None:
            return None
        example = hot_path().training_item(cohort.training_set_id, position)
    elif cohort.study.test_order == Study.TestOrder.SHUFFLE:
        ids = item_order(enrollment=enrollment, step=step)
        if position >= len(ids):
            return None
        example = next(iter(Example.objects.filter(pk=ids[position])), None)
    else:
        example = hot_path().test_item(cohort.task_id, position)
    if example is not None:
        example.task = cohort.task  # loaded with the enrollment
    return example


def part_bounds(enrollment: Enrollment, checks: list[int] | None = None) -> list[tuple[int, int]]:
    """(first, end) test positions of each part of the worker's test step (``estimates.split``), from the counts
    the hot path read with the enrollment; ``checks``: the positions of the worker's attention checks, read (one
    query) when not given in a study that has checks."""
    return attention.part_bounds(enrollment, attention.check_positions(enrollment) if checks is None else checks)


def start_next_part(*, enrollment_id: int) -> Enrollment:
    """A worker between parts starts the next one: its own start and time limit (the cohort's estimate)."""
    now = timezone.now()
    with transaction.atomic():
        enrollment = hot_path().fetch(enrollment_id, lock=True)
        if expire_if_stale(enrollment, now):
            raise Conflict("your place in this study was offered again: you did not come back in time")
        if enrollment.state != State.BETWEEN:
            raise Conflict(f"there is no next part to start: your enrollment is {enrollment.state}")
        part = enrollment.part + 1
        if not enrollment.cohort.study.provider.may_start_part(enrollment, part):
            raise Conflict(f"open part {part} from its own study on {enrollment.cohort.study.provider.name}")
        limit = granted_limit(enrollment.cohort, attention.worker_estimate(enrollment).part(part))
        enrollment.part, enrollment.timer_started_at, enrollment.timer_minutes = part, now, limit
        enrollment.part_starts = {**(enrollment.part_starts or {}), str(part): now.isoformat()}
        transition(
            enrollment,
            State.TESTING,
            actor="worker",
            action="start part",
            reason=f"part {part} of {len(part_bounds(enrollment))}, time limit {limit} minutes",
            update_fields=("part", "timer_started_at", "timer_minutes", "part_starts"),
        )
        return enrollment


def step_total(enrollment: Enrollment, step: str) -> int:
    return enrollment.training_total if step == Answer.Step.TRAINING else enrollment.test_total


@dataclass
class WorkState:
    step: str  # "training" | "test" | "done" | "filtered" | "withdrawn" | "expired"
    done: int
    total: int
    enrollment: Enrollment
    item: Example | None = None

    @property
    def item_handle(self) -> str | None:
        """What the worker answers the item by (``annotation.handles``); never the item's database id."""
        if self.item is None:
            return None
        return item_handle(enrollment_id=self.enrollment.pk, item_id=self.item.pk)


def current_item(*, enrollment_id: int) -> WorkState:
    """Where the worker is; records when the current item was first served.

    A read, in a constant number of queries: one statement reads the enrollment with its progress and the item at
    that position (one snapshot, so state, answer counts and item agree; a shuffled test order reads its item
    apart), and records the serving time on PostgreSQL; elsewhere a conditional UPDATE records it. No row lock:
    submissions are serialised by ``submit_answer``'s lock, and a read racing a submission only returns the state
    just before it.
    """
    now = timezone.now()
    enrollment = hot_path().fetch(enrollment_id, lock=False, serve_at=now)
    if is_stale(enrollment, now):
        with transaction.atomic():
            expire_if_stale(load_enrollment(enrollment_id, lock=True), now)
        enrollment = hot_path().fetch(enrollment_id, lock=False)
    step = STEP_OF_STATE.get(enrollment.state)
    if step is None:
        # Progress of the step the worker ended in: the test step once it started, else training.
        last = (
            Answer.Step.TEST
            if (enrollment.test_done or enrollment.state == State.COMPLETED or not enrollment.cohort.shots)
            else Answer.Step.TRAINING
        )
        done = enrollment.test_done if last == Answer.Step.TEST else enrollment.training_done
        return WorkState(
            step=step_name(enrollment.state), done=done, total=step_total(enrollment, last), enrollment=enrollment
        )
    done = enrollment.training_done if step == Answer.Step.TRAINING else enrollment.test_done
    checks = _attention(enrollment, step, done)
    check, checks_done = checks.due, checks.answered
    item = attention.as_item(check, enrollment.cohort.task) if check else item_at(enrollment, step, done)
    if item is None:
        raise Conflict("this step has no item left to answer")  # only if the data changed under a study
    if enrollment.current_served_at is None and hot_path().mark_served(enrollment.pk, now):
        enrollment.current_served_at = now
    return WorkState(
        step=step,
        done=done + checks_done,
        total=step_total(enrollment, step) + checks.total,
        item=item,
        enrollment=enrollment,
    )


def _attention(enrollment: Enrollment, step: str, done: int) -> attention.Progress:
    """The worker's attention checks in the test step of a study with checks; else none (and no query: the worker's
    progress counts the checks, the researcher's tables never do)."""
    if step != Answer.Step.TEST or not enrollment.cohort.study.has_attention_checks:
        return attention.Progress(None, 0, 0, [])
    return attention.progress(enrollment, done)


@dataclass
class SubmitResult:
    step: str
    answer: Answer | AttentionAnswer  # an attention check's answer is kept apart (annotation.attention)
    done: int
    total: int
    next_state: str
    gold: list[str] | None = None  # training step only
    s1: float | None = None  # training step only
    gold_unproducible: bool = False  # training step only: this gold cannot be marked exactly (not held against)
    events: list[str] = field(default_factory=list)
    item: str = ""  # the handle the answer was posted with


def submit_answer(*, enrollment_id: int, item: str, answer) -> SubmitResult:
    """Store one answer, once (rules 3, 5, 6); at the end of a step, move the worker on.

    ``item`` is the current item's handle (``annotation.handles``), as the worker was shown it.
    Raises TimeUp (a Conflict, 409) when the part's time limit has passed; Conflict: not in a step, the item is
    not the current one (any other handle, another enrollment's or a made-up one), or it is already answered;
    InvalidAnswer (400). Nothing is stored when it raises.

    An answer that leaves the worker in their step and part is stored in two statements (``_submit_within_step``);
    anything else takes the locking path: the enrollment's row lock serialises a worker's submissions, and the
    answers are counted after the lock is taken, so the count includes every submission committed before. A
    constant number of queries there: lock, the count with the current item (one statement), the INSERT, which
    clears the serving time on PostgreSQL (a separate UPDATE on SQLite); plus 4 at the end of a step.
    """
    now = timezone.now()
    within = _submit_within_step(enrollment_id, item, answer, now)
    if within is not None:
        return within
    with transaction.atomic():
        enrollment = hot_path().fetch(enrollment_id, lock=True)
        if is_stale(enrollment, now) and enrollment.state in STEP_OF_STATE:
            raise TimeUp(TIME_UP)  # rolled back with the request: the next read expires it (current_item)
        expire_if_stale(enrollment, now)
        step = STEP_OF_STATE.get(enrollment.state)
        if step is None:
            if timed_out(enrollment):
                raise TimeUp(TIME_UP)
            raise Conflict(f"no answers are taken now: your enrollment is {enrollment.state}")
        done, example = _answered_and_next(enrollment, step)
        total = step_total(enrollment, step)
        checks = _attention(enrollment, step, done)
        checks_done = checks.answered
        if checks.due is not None:
            return _submit_check(enrollment, checks.due, item, answer, done + checks_done, total + checks.total)
        if example is None or done >= total or not is_handle_of(item, enrollment_id=enrollment.pk, item_id=example.pk):
            _refuse_other_item(enrollment, item)
        stored = _scored_answer(enrollment, example, step, done, answer)
        try:
            # No savepoint: on an IntegrityError the Conflict leaves the block and rolls it all back.
            # The next item is not served yet (a step's or a part's end clears it with the state's UPDATE).
            hot_path().insert(stored, clear_served=enrollment.current_served_at is not None and done + 1 < total)
        except IntegrityError:
            raise NotCurrentItem("this item was already answered; answers are final") from None
        result = _submitted(enrollment, stored, total=total, handle=item)
        done = result.done
        if step == Answer.Step.TRAINING:
            if done == total:
                finish_training(enrollment, now)
        elif done == total:
            bounds = part_bounds(enrollment, checks.positions)
            _keep_part_timing(enrollment, bounds, checks.positions, now)
            enrollment.completed_at = now
            transition(
                enrollment,
                State.COMPLETED,
                actor="worker",
                action="complete test step",
                update_fields=("completed_at", "current_served_at"),
                parts=len(bounds),
            )
        elif done == (bounds := part_bounds(enrollment, checks.positions))[enrollment.part - 1][1]:
            # The end of a part: the worker gets its code and comes back for the next (RETURN_DAYS to do so).
            _keep_part_timing(enrollment, bounds, checks.positions, now)
            enrollment.timer_started_at, enrollment.timer_minutes = now, RETURN_DAYS * 24 * 60
            transition(
                enrollment,
                State.BETWEEN,
                actor="worker",
                action="finish part",
                reason=f"part {enrollment.part} of {len(bounds)}",
                update_fields=("timer_started_at", "timer_minutes", "current_served_at"),
                parts=len(bounds),
            )
        result.next_state = enrollment.state
        result.done, result.total = result.done + checks_done, result.total + checks.total
        return result


def _submit_within_step(enrollment_id: int, handle: str, answer, now) -> SubmitResult | None:
    """The answer to the current item when it leaves the worker in their step and part, stored as the locking path
    stores it, in two statements: the enrollment read with its place (``hot_sql.fetch``), and the INSERT that holds
    only if the enrollment is still as read (``hot_sql.insert_if_unchanged``, which takes its row lock). None, and
    nothing stored, for anything else: the end of a step or a part, an attention check, a handle that is not the
    current item's, the time up, a concurrent change; the locking path decides those. Raises InvalidAnswer as it."""
    enrollment = hot_path().fetch(enrollment_id, lock=False)
    step = STEP_OF_STATE.get(enrollment.state)
    if step is None or enrollment.cohort.study.has_attention_checks or is_stale(enrollment, now):
        return None
    done = enrollment.training_done if step == Answer.Step.TRAINING else enrollment.test_done
    total = step_total(enrollment, step)
    if done + 1 >= total:
        return None
    if step == Answer.Step.TEST and done + 1 == part_bounds(enrollment, [])[enrollment.part - 1][1]:
        return None
    example = item_at(enrollment, step, done)  # read with the enrollment, in the file's order
    if example is None or not is_handle_of(handle, enrollment_id=enrollment.pk, item_id=example.pk):
        return None
    stored = _scored_answer(enrollment, example, step, done, answer)
    try:
        if not hot_path().insert_if_unchanged(stored, read=enrollment):
            return None
    except IntegrityError:
        return None  # answered by a concurrent request: the locking path refuses it, as it refuses any repeat
    return _submitted(enrollment, stored, total=total, handle=handle)


def _scored_answer(enrollment: Enrollment, example: Example, step: str, position: int, raw) -> Answer:
    """The worker's answer to ``example``, validated (InvalidAnswer) and scored against its gold, not yet stored."""
    spec = enrollment.cohort.task.spec
    valid = validate_answer(spec, example, raw)
    return Answer(
        enrollment=enrollment,
        example=example,
        step=step,
        position=position,
        texts=valid.texts,
        spans=valid.spans,
        s1=item_s1(valid.texts, example.gold, alternatives=spec.answer_kind.gold_is_alternatives),
        served_at=enrollment.current_served_at,
    )


def _submitted(enrollment: Enrollment, stored: Answer, *, total: int, handle: str) -> SubmitResult:
    """What a stored answer tells the worker (a training answer: its item's gold and S1); its item's serving time is
    cleared."""
    enrollment.current_served_at = None
    result = SubmitResult(
        step=stored.step,
        answer=stored,
        done=stored.position + 1,
        total=total,
        next_state=enrollment.state,
        item=handle,
    )
    if stored.step == Answer.Step.TRAINING:
        result.gold, result.s1 = list(stored.example.gold), stored.s1
        result.gold_unproducible = stored.example.gold_unproducible
    return result


def _answered_and_next(enrollment: Enrollment, step: str) -> tuple[int, Example | None]:
    """The answers given in the step and the item after them (``item_at``): one statement in the file's order; a
    shuffled test order counts, then loads its order."""
    cohort = enrollment.cohort
    if step == Answer.Step.TEST and cohort.study.test_order == Study.TestOrder.SHUFFLE:
        done = hot_path().answers_in_step(enrollment.pk, step)
        return done, item_at(enrollment, step, done)
    done, example = hot_path().next_item(
        enrollment.pk, step, training_set_id=cohort.training_set_id, task_id=cohort.task_id
    )
    if example is not None:
        example.task = cohort.task  # loaded with the enrollment
    return done, example


TIME_UP = "the time for this part has passed: that answer was not saved; your earlier answers are kept"


def _keep_part_timing(enrollment: Enrollment, bounds: list[tuple[int, int]], checks: list[int], now) -> None:
    """The part just finished: how long it took, from its start to its last answer (breaks included), for the
    measured time limits (``annotation.estimates``)."""
    PartTiming.objects.create(
        enrollment=enrollment,
        part=enrollment.part,
        started_at=part_start(enrollment),
        ended_at=now,
        items=attention.part_items(enrollment, bounds, checks, enrollment.part),
        limit_minutes=round((part_deadline(enrollment) - part_start(enrollment)).total_seconds() / 60),
    )  # the transition that follows (between parts, or completed) tells the results (``results_changes``)


@dataclass
class LastAnswer:
    """The worker's latest answer in the test step, a test item's or an attention check's alike (the worker
    cannot tell them apart): what they may still change until they answer the next item."""

    item: Example  # the item as the worker was shown it (a check as its item)
    texts: list[str]
    spans: list | None
    position: int  # 0-based place among the items the worker saw in the test step (checks included)
    record: Answer | AttentionAnswer


def last_test_answer(enrollment: Enrollment) -> LastAnswer | None:
    """The latest answer of the enrollment's test step, or None (1 query; 3 in a study with attention checks)."""
    last = (
        Answer.objects.filter(enrollment_id=enrollment.pk, step=Answer.Step.TEST)
        .select_related("example")
        .order_by("-position")
        .first()
    )
    if not enrollment.cohort.study.has_attention_checks:
        return None if last is None else LastAnswer(last.example, last.texts, last.spans, last.position, last)
    check = attention.last_answer(enrollment.pk)
    if check is not None and (last is None or check.answered_at > last.answered_at):
        # Every test answer came before it; so did the checks answered before it.
        position = (last.position + 1 if last else 0) + attention.answered_before(enrollment.pk, check.answered_at)
        item = attention.as_item(check.attention_check, enrollment.cohort.task)
        return LastAnswer(item, check.texts, check.spans, position, check)
    if last is None:
        return None
    position = last.position + attention.answered_before(enrollment.pk, last.answered_at)
    return LastAnswer(last.example, last.texts, last.spans, position, last)


def revisable_test_answer(enrollment: Enrollment) -> LastAnswer | None:
    """The latest test answer while the worker may still change it: in the test step, and given in the part they are
    in. A part is sealed once its code was shown: nothing of it changes after (its pay and its submission on the crowd
    platform are for what it held then)."""
    if enrollment.state != State.TESTING:
        return None
    last = last_test_answer(enrollment)
    if last is None or (enrollment.part > 1 and last.record.answered_at <= part_started_at(enrollment)):
        return None
    return last


def revise_last_test_answer(*, enrollment_id: int, item: str, answer) -> LastAnswer:
    """Change the worker's latest test answer, until the next one is submitted (a forgiving test step).

    ``item`` is that answer's handle (``annotation.handles``). The latest answer may be an attention check's:
    it is changed the same way (and the check scored on the final answer), so that a check cannot be told
    apart from an item by what the worker may do after it.

    The paper makes an answer final once its gold is shown: training answers (gold shown at once),
    an older test answer, and the last one once the enrollment has left the test step stay final
    (Conflict, 409). InvalidAnswer (400) as for submit_answer. The change is audited with both values.
    The only update of a stored answer: a queryset UPDATE under the enrollment's row lock, which
    submit_answer also takes, so no later answer can appear in between.
    """
    now = timezone.now()
    with transaction.atomic():
        enrollment = hot_path().fetch(enrollment_id, lock=True)
        if expire_if_stale(enrollment, now) or timed_out(enrollment):
            raise TimeUp(TIME_UP)
        if enrollment.state != State.TESTING:
            raise Conflict("answers can be changed only during the test step: this answer is final")
        last = revisable_test_answer(enrollment)
        if last is None or not is_handle_of(item, enrollment_id=enrollment.pk, item_id=last.item.pk):
            raise Conflict(
                "only your last test answer can be changed, until you submit the next one (a part's answers are final "
                "once its code was shown)"
            )
        if isinstance(last.record, AttentionAnswer):
            changed = attention.revise_answer(enrollment, last.record, answer)
            last.texts, last.spans = changed.texts, changed.spans
            return last
        stored = last.record
        spec = enrollment.cohort.task.spec
        valid = validate_answer(spec, stored.example, answer)
        score = item_s1(valid.texts, stored.example.gold, alternatives=spec.answer_kind.gold_is_alternatives)
        Answer.objects.filter(pk=stored.pk).update(texts=valid.texts, spans=valid.spans, s1=score)
        results_changed(enrollment=enrollment)
        AuditEvent.objects.create(
            study_id=enrollment.cohort.study_id,
            enrollment=enrollment,
            actor="worker",
            action="revise test answer",
            from_state=enrollment.state,
            to_state=enrollment.state,
            reason=json.dumps(
                {
                    "example_id": stored.example_id,
                    "position": stored.position,
                    "before": {"texts": stored.texts, "spans": stored.spans},
                    "after": {"texts": valid.texts, "spans": valid.spans},
                },
                ensure_ascii=False,
            ),
        )
        stored.texts, stored.spans, stored.s1 = valid.texts, valid.spans, score
        last.texts, last.spans = valid.texts, valid.spans
        return last


def _refuse_other_item(enrollment: Enrollment, handle) -> NoReturn:
    """Conflict for a handle that is not the current item's: "already answered" when it is one of this
    enrollment's answered items, tests and checks alike (a check must answer a repeat as any item does),
    else "not the current item". Only on a refusal, so the hot path pays nothing for it."""
    answered = [
        *Answer.objects.filter(enrollment_id=enrollment.pk).values_list("example_id", flat=True),
        *enrollment.attention_answers.values_list("attention_check__item_id", flat=True),
    ]
    if any(is_handle_of(handle, enrollment_id=enrollment.pk, item_id=pk) for pk in answered):
        raise NotCurrentItem("this item was already answered; answers are final")
    raise NotCurrentItem("this is not the current item: items are answered one at a time, in order")


def _submit_check(enrollment: Enrollment, check, handle, raw_answer, done: int, total: int) -> SubmitResult:
    """Store an attention check's answer apart from test answers (``annotation.attention``)."""
    if not is_handle_of(handle, enrollment_id=enrollment.pk, item_id=check.item_id):
        _refuse_other_item(enrollment, handle)
    answer = attention.new_answer(enrollment, check, raw_answer)
    hot_path().insert(answer, clear_served=True)
    return SubmitResult(
        step=Answer.Step.TEST, answer=answer, done=done + 1, total=total, next_state=enrollment.state, item=handle
    )
