"""The protocol of the paper (section 4): its rules, the enrollment state machine and every guard.

The rules (code and tests cite them by number):

1. Exposure: a worker takes part in at most one cohort per task, ever (a database constraint on
   (worker, task); a second cohort of the same task, or the same task under another worker id from
   the same browser, refuses them with ``JoinRefusal.NOT_ALLOWED``, the same answer as any other
   "not allowed", so the join page never tells whether an id has taken part before). Only an
   enrollment the crowd platform vouched for (or does not check) exposes its worker id: one admitted
   unverified, waiting or expired, never blocks the id elsewhere, and the id's holder whose session
   the platform confirms takes its place (``services.joining``).
2. Capacity: a cohort holds at most ``target`` enrollments that keep a place (``holds_place``: in
   training, in the test step or completed, and verified by the crowd platform or not checked);
   filtered, withdrawn and expired enrollments free theirs. An enrollment admitted *unverified* (the
   platform could not be asked) holds no place: it waits outside the capacity until the platform
   confirms it, at most ``MAX_UNVERIFIED_WAITING`` per cohort, so that forged joins during an outage
   never make a genuine participant see "full". Joins and reinstatements count places under a lock
   on the cohort row.
3. Training step (k > 0 shots): the k training examples one at a time; the gold answer and the
   item's S1 are revealed after each answer; answers are final (stored once, never changed).
4. Filtering: after the training step the study's rule decides (``filtering_decision``: training
   S1 below the floor, or below a fraction of the mean of the cohort's other workers: the
   comparison set is the cohort's other workers who finished training, verified by the crowd
   platform, and not filtered, withdrawn or expired, so that neither forged joins nor filtered
   workers lower the bar for the next one, ``services.filtering.comparison_set``); a
   researcher may filter by hand until the first test answer (``can_filter``) and reinstate a
   filtered worker while the cohort has room (``can_reinstate``, rule 2).
5. Test step: the test items one at a time, in the study's order, no feedback; answers are final;
   the last answer completes the enrollment.
6. Answers are validated against the task's answer kind before anything is stored
   (``annotation.answers``).
7. Time and pay: active time is, per part, the gaps from the part's start (joining, for part 1) through
   each of its answers, and on to the moment the worker stopped in it (their choice, or its time limit),
   each capped at the study's idle cap; the wait between parts is never work, nor a part without an
   answer. Pay is active time x the hourly rate; past the time limit an enrollment expires.

The state machine:

    (join, k > 0 shots) -> training -> testing -> completed
    (join, 0 shots)     ->             testing -> completed
    testing -> between -> testing   (a test step in parts: a part done, the worker comes back for the next)
    training -> filtered            (training S1 below the study's rule, or by a researcher)
    testing  -> filtered            (by a researcher, only before the first test answer)
    filtered -> testing | training  (a researcher reinstates)
    training | testing | between -> withdrawn | expired   (expired: time ran out, or did not come back)
    completed | filtered -> expired (only one admitted unverified that the platform never confirmed)

Every transition goes through ``transition``, is written to the audit log, and is told to the study's
crowd provider through its hook (``PROVIDER_HOOKS``: ``on_join``, ``on_finish``, ``on_filter``,
``on_expire``, ``on_withdraw``; docs/crowd_providers.md). Services call the guards below; views and
serializers only display what they decide.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from datetime import datetime
from decimal import Decimal

from django.db.models import Q

import crowd

from .codes import part_codes
from .models import AuditEvent, Cohort, Enrollment
from .results_changes import results_changed

State = Enrollment.State

ALLOWED: dict[str | None, set[str]] = {
    None: {State.TRAINING, State.TESTING},
    State.TRAINING: {State.TESTING, State.FILTERED, State.WITHDRAWN, State.EXPIRED},
    State.TESTING: {State.COMPLETED, State.BETWEEN, State.FILTERED, State.WITHDRAWN, State.EXPIRED},
    State.BETWEEN: {State.TESTING, State.WITHDRAWN, State.EXPIRED},
    State.FILTERED: {State.TESTING, State.TRAINING, State.EXPIRED},
    State.COMPLETED: {State.EXPIRED},
    State.WITHDRAWN: set(),
    State.EXPIRED: set(),
}

# Moves allowed only for an enrollment admitted unverified that its crowd platform never confirmed: it never held
# a place nor counted in a result, so it expires whatever it did (rule 2).
UNVERIFIED_ONLY = frozenset({(State.COMPLETED, State.EXPIRED), (State.FILTERED, State.EXPIRED)})

# The states in which an enrollment keeps one of the cohort's places (rule 2); the others freed theirs.
HOLDS_SLOT = frozenset({State.TRAINING, State.TESTING, State.BETWEEN, State.COMPLETED})
# How many enrollments admitted unverified may wait in a cohort (outside its places) for the platform to confirm
# them: while the platform cannot be asked, a further join is asked to come back in a few minutes.
MAX_UNVERIFIED_WAITING = 5


def holds_place(prefix: str = "") -> Q:
    """The enrollments that hold one of their cohort's places (rule 2), as a query (``prefix`` e.g. "enrollment__"):
    in a step or completed, and verified by the crowd platform or not checked by it ("")."""
    return Q(**{f"{prefix}state__in": HOLDS_SLOT, f"{prefix}verification__in": ("", Enrollment.VERIFIED)})


def waits_unverified(prefix: str = "") -> Q:
    """Enrollments admitted unverified, in a step or completed: outside the places, counted against
    ``MAX_UNVERIFIED_WAITING`` until the platform confirms them or its sync expires them (rule 2)."""
    return Q(**{f"{prefix}state__in": HOLDS_SLOT, f"{prefix}verification": Enrollment.UNVERIFIED})


# Never in the filtering comparison set (rule 4): a filtered worker would lower the bar for the next one,
# and a worker who quit (or a sybil who was withdrawn) says nothing about the items.
COMPARISON_EXCLUDES = frozenset({State.FILTERED, State.WITHDRAWN, State.EXPIRED})
# Enrollments in a step (their worker is expected to come back and answer).
ACTIVE_STATES = frozenset({State.TRAINING, State.TESTING})
# The worker-facing step of each state (the worker API's "step").
STEP_NAMES: dict[str, str] = {
    State.TRAINING: "training",
    State.TESTING: "test",
    State.COMPLETED: "done",
    State.BETWEEN: "between",
}
# How long a worker between parts has to start the next one before their place is offered again (they keep
# the pay of the parts they did).
RETURN_DAYS = 7


# The crowd provider's hook told of each move (the entry into a first state: ``on_join``). A state that is
# not here (a reinstatement back to a step) is not the platform's business.
PROVIDER_HOOKS: dict[str | None, str] = {
    None: "on_join",
    State.COMPLETED: "on_finish",
    State.BETWEEN: "on_finish",  # a part finished (``Outcome.part`` of ``Outcome.parts``)
    State.FILTERED: "on_filter",
    State.EXPIRED: "on_expire",
    State.WITHDRAWN: "on_withdraw",
}


class TransitionNotAllowed(Exception):
    pass


def code_for(cohort: Cohort, state: str, *, part: int = 1, stopped: bool = False) -> str:
    """The code a worker gets in ``state``: the completion code of the part they finished (completed: the last part;
    between parts: the part done), the screen-out code of part 1 when filtered after training, and the screen-out code
    of the part they stopped in with answers in it (the time limit, or their choice: paid for the time worked); ""
    otherwise. Every part of every cohort has codes of its own (``annotation.codes``)."""
    if state in (State.COMPLETED, State.BETWEEN):
        return part_codes(cohort, part).completion_code
    if state == State.FILTERED:
        return part_codes(cohort, 1).screenout_code
    if state == State.EXPIRED and stopped:
        return part_codes(cohort, part).screenout_code
    return ""


def transition(
    enrollment: Enrollment,
    to_state: str,
    *,
    actor: str,
    action: str,
    reason: str = "",
    update_fields: tuple[str, ...] = (),
    parts: int = 1,
) -> AuditEvent:
    """Move ``enrollment`` to ``to_state`` (saving it), record the event and tell the study's crowd provider
    (``PROVIDER_HOOKS``), in the caller's transaction. ``parts``: how many parts the cohort's test step has
    (the enrollment's ``part`` is the one concerned)."""
    from_state = enrollment.state if enrollment.pk else None
    if to_state not in ALLOWED[from_state] or (
        (from_state, to_state) in UNVERIFIED_ONLY and enrollment.verification != Enrollment.UNVERIFIED
    ):
        raise TransitionNotAllowed(f"an enrollment cannot go from {from_state or 'nothing'} to {to_state}")
    enrollment.state = to_state
    if enrollment.pk:
        enrollment.save(update_fields=["state", *update_fields])
    else:
        enrollment.save()
    event = AuditEvent.objects.create(
        study_id=enrollment.cohort.study_id,
        enrollment=enrollment,
        actor=actor,
        action=action,
        from_state=from_state or "",
        to_state=to_state,
        reason=reason,
    )
    hook = PROVIDER_HOOKS.get(to_state if from_state else None)
    if hook:
        study = enrollment.cohort.study
        part = min(enrollment.part or 1, parts)
        code = code_for(enrollment.cohort, to_state, part=part, stopped=bool(enrollment.stopped_at))
        outcome = crowd.Outcome(code=code, reason=reason, actor=actor, part=part, parts=parts)
        getattr(study.provider, hook)(enrollment, outcome)
    results_changed(enrollment=enrollment, from_state=from_state)
    return event


def step_name(state: str) -> str:
    """The worker-facing step of an enrollment state: training, test, done, filtered, withdrawn, expired."""
    return STEP_NAMES.get(state, state)


def first_state(shots: int) -> str:
    """Where a new enrollment starts: the training step, or the test step for 0 shots (rules 3, 5)."""
    return State.TRAINING if shots else State.TESTING


# ---------------------------------------------------------------- rule 4: filtering


def filtering_decision(own: float, others: list[float], *, floor: float | None, fraction: float | None) -> str:
    """Why the study's rule filters a worker after training (a reason for the audit log), or "" to pass.

    ``own`` is the worker's training S1 (0-1); ``others`` the training S1 of the comparison set:
    the cohort's other workers who finished training, verified, and not filtered, withdrawn or
    expired (rule 4). The fraction rule needs at least two others.
    """
    if floor is not None and own < floor:
        return f"training S1 {own:.3f} is below the floor {floor:.3f}"
    if fraction is not None and len(others) >= 2:
        mean = sum(others) / len(others)
        if own < fraction * mean:
            return f"training S1 {own:.3f} is below {fraction:g} x the mean {mean:.3f} of {len(others)} other worker(s)"
    return ""


def at_or_below_chance(training_s1: float | None, chance: float | None) -> bool:
    """Whether a finished training S1 is no better than chance (``TaskSpec.chance_item_s1``).

    Only a flag for the researcher to decide on (filter by hand): the study's rule alone filters
    automatically, and its fraction part needs two other workers, so a cohort's first workers
    pass it whatever they score (a 30% on SST-2 did).
    """
    return training_s1 is not None and chance is not None and training_s1 <= chance + 1e-9


def filter_refusal(state: str, test_answers: int) -> str | None:
    """Why a researcher may not filter this enrollment, or None when they may (rule 4)."""
    if state not in (State.TRAINING, State.TESTING):
        return f"only a worker in training or waiting for the test step can be filtered (this one is {state})"
    if test_answers:
        return "this worker's test step has started: they can no longer be filtered"
    return None


def can_filter(state: str, test_answers: int) -> bool:
    return filter_refusal(state, test_answers) is None


def leave_out_refusal(state: str, test_answers: int, left_out: bool) -> str | None:
    """Why a researcher may not leave this enrollment out of the results, or None when they may. It is the
    action once filtering is closed (rule 4): the test step has started or the worker has finished. The worker
    keeps their place and pay; only the results stop counting them."""
    if left_out:
        return "this worker is already left out of the results"
    if state not in (State.TESTING, State.COMPLETED) or (state == State.TESTING and not test_answers):
        return (
            f"only a worker whose test step has started, or who has finished, can be left out of the results "
            f"(this one is {state}; before the test step, filter them instead)"
        )
    return None


def can_leave_out(state: str, test_answers: int, left_out: bool) -> bool:
    return leave_out_refusal(state, test_answers, left_out) is None


def reinstate_refusal(state: str, *, taken: int | None = None, target: int | None = None) -> str | None:
    """Why a filtered enrollment may not be reinstated, or None (rule 4; the slot count is rule 2)."""
    if state != State.FILTERED:
        return f"only a filtered worker can be reinstated (this one is {state})"
    if taken is not None and target is not None and taken >= target:
        return "the cohort is full: its places were taken after this worker was filtered"
    return None


def can_reinstate(state: str) -> bool:
    return reinstate_refusal(state) is None


def reinstate_state(enrollment: Enrollment) -> str:
    """Back to the test step, or to training if it was not finished."""
    if enrollment.training_finished_at or not enrollment.cohort.shots:
        return State.TESTING
    return State.TRAINING


# ---------------------------------------------------------------- rule 7: time and pay


def active_seconds(*, enrolled_at: datetime, answered_at: Sequence[datetime], idle_cap_seconds: int) -> float:
    """Time on the study: the gaps between joining and each answer, each capped at the idle cap."""
    times = [enrolled_at, *sorted(answered_at)]
    return sum(min((b - a).total_seconds(), idle_cap_seconds) for a, b in zip(times, times[1:], strict=False))


def part_seconds(
    *, start: datetime, answered_at: Sequence[datetime], end: datetime | None = None, idle_cap_seconds: int
) -> float:
    """Active time of one part (sitting): the gaps from the part's start through each of its answers, and on to
    ``end`` when it ended after its last answer (the worker ended it, or its time limit passed: the time up to it),
    each capped at the idle cap. A part without an answer is no work: 0."""
    times = sorted(answered_at)
    if not times:
        return 0.0
    points = [start, *times, *([end] if end is not None and end > times[-1] else [])]
    return sum(
        min(max(0.0, (b - a).total_seconds()), idle_cap_seconds) for a, b in zip(points, points[1:], strict=False)
    )


def pay(*, seconds: float, rate_per_hour: Decimal) -> Decimal:
    """What ``seconds`` of active time earn at the hourly rate, to the cent."""
    return (Decimal(str(seconds)) / Decimal(3600) * Decimal(rate_per_hour)).quantize(Decimal("0.01"))


# ---------------------------------------------------------------- cohorts


class CohortStatus(str, enum.Enum):
    NOT_LAUNCHED = "not launched"
    OPEN = "open"
    FULL = "full"  # every slot held (rule 2), not every worker finished
    DONE = "done"  # the target of completed enrollments reached
    NOT_OPEN = "not_open"  # created, not launched yet
    CLOSED = "closed"


def cohort_status(cohort, *, enrolled: int, completed: int, study_open: bool = True) -> CohortStatus:
    """A cohort's status from its dates and counts (``enrolled``: enrollments holding a slot)."""
    if cohort.closed_at or not study_open:
        return CohortStatus.CLOSED
    if cohort.launched_at is None:
        return CohortStatus.NOT_LAUNCHED
    if completed >= cohort.target:
        return CohortStatus.DONE
    if enrolled >= cohort.target:
        return CohortStatus.FULL
    return CohortStatus.OPEN


def reopen_refusal(cohort, *, taken: int, study_open: bool = True) -> str | None:
    """Why a closed cohort may not be re-opened, or None: it must be closed, its study open, and
    places left (rule 2: ``taken`` enrollments holding a slot, below the target)."""
    if cohort.closed_at is None:
        return "this cohort is not closed"
    if not study_open:
        return "the study is closed: no cohort of it can take workers again"
    if taken >= cohort.target:
        return f"the cohort has no places left ({taken} of {cohort.target} taken)"
    return None


# ---------------------------------------------------------------- joining


class JoinRefusal(str, enum.Enum):
    """Why a join link refuses a worker; the join page maps each to an HTTP status (worker_pages.join)."""

    INVALID_LINK = "invalid_link"
    BAD_PARAMETER = "bad_parameter"
    LOGIN_REQUIRED = "login_required"
    # Also "already took part" (rule 1): one answer for both, so the join page never tells whether a
    # given worker id has taken part before.
    NOT_ALLOWED = "not_allowed"
    NOT_VERIFIED = "not_verified"  # the crowd platform does not confirm the worker (its provider's verify_join)
    NOT_OPEN = "not_open"  # created, not launched yet
    CLOSED = "closed"
    FULL = "full"  # rule 2
    # Not a refusal of the person: someone with a place between parts, from a browser not bound to it, is welcomed
    # back and told how to continue (a resume code, or the next part's own study on their platform).
    RETURNING = "returning"


class JoinRefused(Exception):
    """A worker cannot join a cohort: ``reason`` (a JoinRefusal) says which rule, ``message`` what to
    tell them, ``platform`` the crowd platform's slug whose instructions to add (``CrowdProvider.refusal_help``)."""

    def __init__(self, reason: JoinRefusal, message: str, platform: str = ""):
        self.reason, self.message, self.platform = reason, message, platform
        super().__init__(message)


# ---------------------------------------------------------------- the worker's pages


class WorkerPage(str, enum.Enum):
    """What the worker's page (worker_pages.views) shows."""

    DESCRIPTION = "description"  # the task description, until the worker starts (or has answered)
    FEEDBACK = "feedback"  # the gold of the last training answer, until the worker moves on (rule 3)
    ITEM = "item"  # the current item of the training or test step
    DONE = "done"  # completed: the completion code
    FILTERED = "filtered"  # filtered after training: the screen-out code
    BETWEEN = "between"  # a part of the test step done: its code, and what comes next
    ENDED = "ended"  # withdrawn or expired


_PAGE_OF_STEP = {
    "training": WorkerPage.ITEM,
    "test": WorkerPage.ITEM,
    "done": WorkerPage.DONE,
    "filtered": WorkerPage.FILTERED,
    "between": WorkerPage.BETWEEN,
}


def page_of_step(step: str) -> WorkerPage:
    """The page of a worker-facing step (``step_name``): an item, done, filtered, or ended."""
    return _PAGE_OF_STEP.get(step, WorkerPage.ENDED)


def worker_page(
    state: str,
    *,
    shots: int,
    started: bool,
    has_answers: Callable[[], bool],
    last_training_answer: Callable[[], int | None],
    feedback_seen: int | None,
) -> WorkerPage:
    """Which page a worker sees, from the enrollment's state and what they acknowledged.

    ``started``: the worker pressed Start on this enrollment's description; ``feedback_seen``: the id of
    the last training answer whose feedback they left with Next (both remembered by the browser session,
    annotation.session). ``has_answers`` and ``last_training_answer`` (the id of the last training answer
    while no test answer exists, else None) read the stored answers: each is called only when the
    decision needs it. The worker's progress itself always comes from the stored answers.
    """
    active = state in (State.TRAINING, State.TESTING)
    if active and not (started or has_answers()):
        return WorkerPage.DESCRIPTION
    if (active or state == State.FILTERED) and shots:
        last = last_training_answer()
        if last is not None and last != feedback_seen:
            return WorkerPage.FEEDBACK
    return page_of_step(step_name(state))
