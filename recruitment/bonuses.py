"""Fair pay on Prolific: top each part a worker was paid for (approved, or screened out when they stopped in the
middle of it) up to the hourly rate over its active time (rule 7), through a ledger that never pays a part twice
(``BonusPayment``)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from annotation.estimates import cohort_estimate
from annotation.models import Enrollment, Study
from annotation.pay import worked_seconds
from annotation.protocol import State, pay

from . import client as prolific
from . import records
from .audit import audit
from .models import BonusPayment, ProlificSubmission
from .publish import reward_cents, screenout_reward_cents
from .sync import finished_part
from .tokens import NO_TOKEN, client_for


def part_active_seconds(enrollment: Enrollment, part: int) -> float:
    """Rule 7's active time of one part (``annotation.pay``): from the part's start through its answers (and on to
    when the worker stopped in it), each gap capped at the idle cap; the wait between parts is never work."""
    return worked_seconds(enrollment).get(part, 0.0)


def base_of(enrollment: Enrollment, part: int, *, stopped: bool) -> Decimal:
    """What Prolific pays for the part by itself: the reward it was published with, or its fixed screen-out reward
    when the worker was screened out in it (filtered, or stopped in the middle of it). Never the estimate of now: a
    measured estimate (three colluders who rush a part, say) moves no one's pay."""
    published = records.published_parts(enrollment.cohort_id).get(part)
    stored = None if published is None else (published.screenout_reward if stopped else published.reward)
    if stored is None:  # a part published before its figures were kept
        study = enrollment.cohort.study
        stored = screenout_reward_cents(study) if stopped else reward_cents(enrollment.cohort, part)
    return Decimal(stored) / 100


def planned_bonus(enrollment: Enrollment, part: int = 1, *, stopped: bool = False) -> tuple[Decimal, float]:
    """(bonus, active seconds) of one part: max(0, its active time x rate - what Prolific pays for it)."""
    study = enrollment.cohort.study
    seconds = part_active_seconds(enrollment, part)
    earned = pay(seconds=seconds, rate_per_hour=study.pay_rate)
    return max(Decimal("0.00"), earned - base_of(enrollment, part, stopped=stopped)), seconds


def payable_parts(study: Study) -> list[tuple[Enrollment, int, bool]]:
    """(enrollment, part, screened out) for every part Prolific paid for: a finished part's submission approved, or
    screened out with the part's screen-out code: a worker filtered after training (part 1), or one who stopped in the
    middle of a part with answers in it (the time limit, or their choice). A screen-out pays only Prolific's minimum
    by itself: the bonus pays the rest of the time worked."""
    out = []
    rows = (
        ProlificSubmission.objects.filter(enrollment__cohort__study=study)
        .filter(status__in=(prolific.APPROVED, prolific.SCREENED_OUT))
        .exclude(enrollment__verification=Enrollment.UNVERIFIED)
        .select_related("enrollment__cohort__study", "enrollment__cohort__task", "enrollment__worker")
        .order_by("enrollment_id", "part")
    )
    for row in rows:
        enrollment = row.enrollment
        if row.status == prolific.APPROVED:
            finished, _ = finished_part(enrollment, row.part)
            if finished and enrollment.state != State.FILTERED:
                out.append((enrollment, row.part, False))
        elif (enrollment.stopped_at and row.part == enrollment.part) or (
            enrollment.state == State.FILTERED and row.part == 1
        ):
            out.append((enrollment, row.part, True))
    return out


@dataclass
class PayReport:
    paid: list[tuple[str, Decimal]] = field(default_factory=list)
    # Beside ``paid``, in its order: the part each bonus was for ("part 2 of 4"; "" for a cohort in one part).
    paid_parts: list[str] = field(default_factory=list)
    uncertain: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


def pay_bonuses(study: Study, *, actor: str = "system") -> PayReport:
    """Top each approved worker up to the hourly rate, through the ledger; never pays a row twice.

    1. a ledger row per approved enrollment (unique per enrollment: a rerun finds it);
    2. rows ``planned`` -> Prolific's bulk bonus set up (pays nothing) -> ``set_up``;
    3. each ``set_up`` row is moved to ``paying`` by a conditional UPDATE committed before the
       pay call (so only one caller ever calls pay for it), then ``paid`` when Prolific answers.
    A row left ``paying`` is never paid again here: the researcher checks it on Prolific.
    """
    report = PayReport()
    client = client_for(study)
    if client is None:
        raise ValueError(NO_TOKEN)
    for enrollment, part, stopped in payable_parts(study):
        if not BonusPayment.objects.filter(enrollment=enrollment, part=part).exists():
            amount, seconds = planned_bonus(enrollment, part, stopped=stopped)
            if amount > 0:
                BonusPayment.objects.get_or_create(
                    enrollment=enrollment, part=part, defaults={"amount": amount, "active_seconds": seconds}
                )
    with client:
        for cohort in records.published_cohorts(study):
            for part_study, part in sorted(records.part_studies(cohort).items(), key=lambda kv: kv[1]):
                _set_up(client, study, cohort, part, part_study, report, actor)
        bulk_ids = (
            BonusPayment.objects.filter(enrollment__cohort__study=study, state=BonusPayment.State.SET_UP)
            .values_list("prolific_bulk_id", flat=True)
            .distinct()
        )
        for bulk_id in list(bulk_ids):
            rows = BonusPayment.objects.filter(prolific_bulk_id=bulk_id, state=BonusPayment.State.SET_UP)
            members = list(
                rows.select_related("enrollment__worker", "enrollment__cohort__study", "enrollment__cohort__task")
            )
            # The claim: committed before the call, and only one caller's UPDATE matches. Its time says, to another
            # run, that this call is in flight (not unknown) until the call's longest wait has passed.
            if rows.update(state=BonusPayment.State.PAYING, claimed_at=timezone.now()) != len(members) or not members:
                continue
            paying = BonusPayment.objects.filter(prolific_bulk_id=bulk_id, state=BonusPayment.State.PAYING)
            try:
                client.pay_bonuses(bulk_id)
            except prolific.ProlificUnreachable as exc:
                paying.update(state=BonusPayment.State.UNKNOWN)
                audit(study, "prolific bonus pay unknown", f"bulk {bulk_id}: {exc}; check it on Prolific", actor=actor)
                report.uncertain += [m.enrollment.worker.external_id for m in members]
                continue
            except prolific.ProlificError as exc:
                if exc.status is not None and exc.status < 500:  # refused, so nothing was paid
                    paying.update(state=BonusPayment.State.SET_UP, claimed_at=None)
                    audit(study, "prolific bonus pay refused", f"bulk {bulk_id}: {exc}", actor=actor)
                    report.failed += [m.enrollment.worker.external_id for m in members]
                else:
                    paying.update(state=BonusPayment.State.UNKNOWN)
                    report.uncertain += [m.enrollment.worker.external_id for m in members]
                    audit(study, "prolific bonus pay unknown", f"bulk {bulk_id}: {exc}", actor=actor)
                continue
            BonusPayment.objects.filter(prolific_bulk_id=bulk_id, state=BonusPayment.State.PAYING).update(
                state=BonusPayment.State.PAID, paid_at=timezone.now()
            )
            audit(study, "prolific bonus paid", f"bulk {bulk_id}: {len(members)} bonus(es)", actor=actor)
            report.paid += [(m.enrollment.worker.external_id, m.amount) for m in members]
            report.paid_parts += [_part_text(m) for m in members]
    return report


def _part_text(row: BonusPayment) -> str:
    parts = len(cohort_estimate(row.enrollment.cohort).parts)
    return f"part {row.part} of {parts}" if parts > 1 else ""


def _set_up(client, study: Study, cohort, part: int, part_study: str, report: PayReport, actor: str) -> None:
    """Set up one bulk bonus on Prolific for the planned rows of the cohort's ``part`` (it pays nothing yet), on
    that part's Prolific study.

    The rows are locked for the call: a concurrent pay run waits, then finds them set up, so Prolific gets one
    set-up per row and no orphan bulk (SQLite: the transaction takes the write lock, ``transaction_mode``)."""
    with transaction.atomic():
        planned = list(
            BonusPayment.objects.select_for_update(of=("self",))
            .filter(enrollment__cohort=cohort, part=part, state=BonusPayment.State.PLANNED)
            .select_related("enrollment__worker")
            .order_by("pk")
        )
        if not planned:
            return
        lines = [(b.enrollment.worker.external_id, f"{b.amount:.2f}") for b in planned]
        try:
            bulk = client.set_up_bonuses(part_study, lines)
        except prolific.ProlificError as exc:
            audit(study, "prolific bonus set-up failed", str(exc), actor=actor)
            report.failed += [b.enrollment.worker.external_id for b in planned]
            return
        BonusPayment.objects.filter(pk__in=[b.pk for b in planned], state=BonusPayment.State.PLANNED).update(
            state=BonusPayment.State.SET_UP, prolific_bulk_id=str(bulk["id"])
        )
        audit(study, "prolific bonus set up", f"bulk {bulk['id']}: {len(lines)} bonus(es)", actor=actor)


UNKNOWN, IN_FLIGHT = "unknown", "in flight"
SETTLE_HOW = (
    "check bulk bonus payment {bulk} on Prolific (your workspace's payments), then run "
    "`manage.py pay_bonuses --study {study} --settle {bulk} --paid` if Prolific paid it, or "
    "`--not-paid` if it did not (it is then paid by the next run); it is never paid again by itself"
)
WAIT_HOW = (
    "another pay run is making this pay call now (since {since:%H:%M:%S} UTC): wait a minute and look again; do not "
    "settle it meanwhile"
)


def in_flight_seconds() -> float:
    """How long a pay call can be waiting for Prolific's answer (the client's timeout for connecting, sending and
    reading, and a margin): a claim younger than this is a call in flight in another run, an older one a run that
    died in the call (its outcome unknown)."""
    return 4 * float(settings.PROLIFIC_TIMEOUT) + 30


def _in_flight(state: str, claimed_at, now) -> bool:
    return (
        state == BonusPayment.State.PAYING
        and claimed_at is not None
        and (now - claimed_at).total_seconds() < in_flight_seconds()
    )


def shown_state(state: str, claimed_at) -> str:
    """A ledger row's state as the researcher reads it: a pay call in flight in another run, or one whose outcome
    nobody knows (no answer, or the run died in the call), never mixed up."""
    if state == BonusPayment.State.UNKNOWN or (
        state == BonusPayment.State.PAYING and not _in_flight(state, claimed_at, timezone.now())
    ):
        return UNKNOWN
    if state == BonusPayment.State.PAYING:
        return IN_FLIGHT
    return state


@dataclass
class MoneyStates:
    """The ledger's bonuses by state; ``unknown`` lists (bulk id, participant ids, how to settle); ``in_flight``
    (bulk id, participant ids, what to do: wait) the pay calls another run is making now."""

    planned: int = 0
    set_up: int = 0
    paid: int = 0
    unknown: list[tuple[str, list[str], str]] = field(default_factory=list)
    in_flight: list[tuple[str, list[str], str]] = field(default_factory=list)

    @property
    def unknown_count(self) -> int:
        return sum(len(pids) for _, pids, _ in self.unknown)

    @property
    def in_flight_count(self) -> int:
        return sum(len(pids) for _, pids, _ in self.in_flight)


def money_states(study: Study) -> MoneyStates:
    states = MoneyStates()
    unknown: dict[str, list[str]] = {}
    flying: dict[str, tuple[list[str], object]] = {}
    for state, bulk, pid, claimed_at in BonusPayment.objects.filter(enrollment__cohort__study=study).values_list(
        "state", "prolific_bulk_id", "enrollment__worker__external_id", "claimed_at"
    ):
        shown = shown_state(state, claimed_at)
        if shown == UNKNOWN:
            unknown.setdefault(bulk, []).append(pid)
        elif shown == IN_FLIGHT:
            flying.setdefault(bulk, ([], claimed_at))[0].append(pid)
        elif state in (BonusPayment.State.PLANNED, BonusPayment.State.SET_UP, BonusPayment.State.PAID):
            setattr(states, state, getattr(states, state) + 1)
    states.unknown = [(bulk, pids, SETTLE_HOW.format(bulk=bulk, study=study.pk)) for bulk, pids in unknown.items()]
    states.in_flight = [(bulk, pids, WAIT_HOW.format(since=since)) for bulk, (pids, since) in flying.items()]
    return states


def settle(study: Study, *, bulk_id: str, paid: bool, actor: str = "system") -> int:
    """The researcher checked an unknown pay call on Prolific: mark its rows paid, or back to set up (the
    next run pays them). Only rows of this study whose outcome is unknown, never a call in flight in another run
    (settling it as not paid while it pays would pay twice); returns how many. Audited."""
    rows = BonusPayment.objects.filter(enrollment__cohort__study=study, prolific_bulk_id=bulk_id)
    claims = list(rows.filter(state=BonusPayment.State.PAYING).values_list("claimed_at", flat=True))
    if any(_in_flight(BonusPayment.State.PAYING, at, timezone.now()) for at in claims):
        raise ValueError(
            f"bulk payment {bulk_id[:64]!r} is being paid by another pay run right now: wait a minute and look again"
        )
    rows = rows.filter(state__in=(BonusPayment.State.PAYING, BonusPayment.State.UNKNOWN))
    if paid:
        count = rows.update(state=BonusPayment.State.PAID, paid_at=timezone.now())
    else:
        count = rows.update(state=BonusPayment.State.SET_UP, claimed_at=None)
    if not count:
        raise ValueError(f"no bonus of this study has an unknown outcome in bulk payment {bulk_id[:64]!r}")
    audit(
        study,
        "prolific bonus settled",
        f"bulk {bulk_id}: {count} bonus(es) " + ("paid on Prolific" if paid else "not paid on Prolific: to pay again"),
        actor=actor,
    )
    return count


def bonus_rows(study: Study) -> list[dict]:
    """Per part Prolific paid for (``payable_parts``), and per completed worker not yet approved: the part, base
    reward, bonus (planned/paid) and effective hourly rate."""
    seen = set()
    pairs = []
    for enrollment, part, stopped in payable_parts(study):
        pairs.append((enrollment, part, stopped))
        seen.add((enrollment.pk, part))
    for e in (
        Enrollment.objects.filter(cohort__study=study, state=State.COMPLETED)
        .select_related("worker", "cohort__task", "cohort__study")
        .order_by("pk")
    ):
        if (e.pk, e.part) not in seen:
            pairs.append((e, e.part, False))
    rows = []
    for e, part, stopped in sorted(pairs, key=lambda p: (p[0].pk, p[1])):
        ledger = BonusPayment.objects.filter(enrollment=e, part=part).first()
        amount, seconds = (ledger.amount, ledger.active_seconds) if ledger else planned_bonus(e, part, stopped=stopped)
        base = base_of(e, part, stopped=stopped)
        hours = seconds / 3600
        parts = len(cohort_estimate(e.cohort).parts)
        rows.append(
            {
                "worker": e.worker.external_id,
                "task": e.cohort.task.slug,
                "task_name": e.cohort.task.spec.name,
                "shots": e.cohort.shots,
                "part": f"{part} of {parts}" + (" (stopped)" if stopped else ""),
                "prolific_status": records.status_of(e, part),
                "active_minutes": round(seconds / 60, 1),
                "base": base,
                "bonus": amount,
                "bonus_state": shown_state(ledger.state, ledger.claimed_at) if ledger else "not planned",
                "bulk": ledger.prolific_bulk_id if ledger else "",
                "hourly": (float(base + amount) / hours) if hours else math.nan,
            }
        )
    return rows
