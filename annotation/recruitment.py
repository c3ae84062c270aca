"""Recruitment rules (issue 9): Prolific publish, verify at join, sync and reconcile, fair pay.

The HTTP client is ``annotation.prolific`` (no Django); this module decides. Every call to
Prolific and its outcome is written to the study's audit log. Nothing here ever rejects a
submission (irreversible on Prolific, and it needs a written reason: the researcher's call),
and nothing pays twice: see ``pay_bonuses``.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import math
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, Decimal

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from tasks_data.registry import TASKS

from . import prolific
from .models import (
    Answer,
    AuditEvent,
    BonusPayment,
    Cohort,
    Enrollment,
    ParticipantGroup,
    ProlificCredential,
    ProlificPlaces,
    Study,
)
from .protocol import HOLDS_SLOT, JoinRefusal, JoinRefused, State, transition

NOT_OPEN = "this study is not open yet; please try again later"
FULL = "this study is full: all places have been taken"
ENDED = "this study has ended and no longer takes participants"
RETURN_ON_PROLIFIC = ("On Prolific, please return your submission (the \"Return\" button on the study's page), "
                      "so that it does not count against you.")
VERIFIED, UNVERIFIED = Enrollment.VERIFIED, Enrollment.UNVERIFIED
logger = logging.getLogger(__name__)


# ---------------------------------------------------------------- tokens


class TokenKeyMissing(Exception):
    pass


def _fernet():
    from cryptography.fernet import Fernet

    secret = getattr(settings, "PROLIFIC_TOKEN_KEY", "")
    if not secret:
        raise TokenKeyMissing("PROLIFIC_TOKEN_KEY is not set: a Prolific token can only be stored encrypted, "
                              "with a key from the environment")
    return Fernet(base64.urlsafe_b64encode(hashlib.sha256(secret.encode()).digest()))


def store_token(user, token: str) -> None:
    """Keep a researcher's Prolific token, encrypted; refuses without PROLIFIC_TOKEN_KEY."""
    token = (token or "").strip()
    if not token:
        raise ValueError("the token is empty")
    encrypted = _fernet().encrypt(token.encode()).decode()
    ProlificCredential.objects.update_or_create(owner=user, defaults={"token_encrypted": encrypted})


def token_for(study: Study) -> str:
    """The study owner's stored token, else PROLIFIC_API_TOKEN; "" when none is configured."""
    credential = ProlificCredential.objects.filter(owner_id=study.created_by_id).first()
    if credential is not None:
        try:
            return _fernet().decrypt(credential.token_encrypted.encode()).decode()
        except Exception:  # key missing or changed: fall back to the environment's token
            pass
    return getattr(settings, "PROLIFIC_API_TOKEN", "")


def client_for(study: Study) -> prolific.ProlificClient | None:
    token = token_for(study)
    if not token:
        return None
    return prolific.ProlificClient(token, settings.PROLIFIC_API_URL, timeout=settings.PROLIFIC_TIMEOUT,
                                   retries=settings.PROLIFIC_RETRIES, backoff=settings.PROLIFIC_BACKOFF)


def _audit(study: Study, action: str, reason: str, enrollment: Enrollment | None = None, actor: str = "system"):
    AuditEvent.objects.create(study=study, enrollment=enrollment, actor=actor, action=action[:40], reason=reason)


# ---------------------------------------------------------------- joining


def check_accepting(cohort: Cohort) -> None:
    """Refuse a join with what is true: not open yet, or ended (full is decided under the cohort lock)."""

    platform = cohort.study.platform
    if not cohort.study.is_open or cohort.closed_at is not None:
        raise JoinRefused(JoinRefusal.CLOSED, ENDED, platform)
    if cohort.launched_at is None:
        raise JoinRefused(JoinRefusal.NOT_OPEN, NOT_OPEN, platform)


def verify_join(cohort: Cohort, pid: str, data: dict) -> str:
    """Check a Prolific join against Prolific: "" (not checked), "verified" or "unverified" (unreachable).

    Raises JoinRefused (403) when the submission does not exist, is another participant's or
    another study's, or is not RESERVED/ACTIVE.
    """

    study = cohort.study
    if study.platform != Study.Platform.PROLIFIC or not cohort.prolific_study_id:
        return ""
    client = client_for(study)
    if client is None:
        return ""
    session_id = data.get("SESSION_ID", "")
    refused = ("Prolific does not know this submission for this study; please open the study from Prolific "
               "again (the link must carry your own SESSION_ID)")
    if not prolific.SAFE_ID.match(session_id):
        raise JoinRefused(JoinRefusal.NOT_VERIFIED, refused, study.platform)
    try:
        with client:
            submission = client.get_submission(session_id)
    except prolific.ProlificUnreachable as exc:
        _audit(study, "prolific verify unreachable", f"{pid}: {exc}")
        return UNVERIFIED
    except prolific.ProlificError as exc:
        if exc.status == 404:
            raise JoinRefused(JoinRefusal.NOT_VERIFIED, refused, study.platform) from None
        _audit(study, "prolific verify failed", f"{pid}: {exc}")
        return UNVERIFIED
    participant = str(submission.get("participant") or "").lower()  # the single submission's field name
    if participant != pid or submission.get("study_id") != cohort.prolific_study_id:
        raise JoinRefused(JoinRefusal.NOT_VERIFIED, refused, study.platform)
    if submission.get("status") not in (prolific.RESERVED, prolific.ACTIVE):
        raise JoinRefused(JoinRefusal.NOT_VERIFIED, "your Prolific submission for this study is no longer active "
                               f"({str(submission.get('status'))[:30].lower()})", study.platform)
    return VERIFIED


def counts_in_results(enrollment: Enrollment) -> bool:
    """An enrollment admitted while Prolific was unreachable counts only once verified."""
    return enrollment.verification != UNVERIFIED


# ---------------------------------------------------------------- publish


def reward_cents(study: Study) -> int:
    """The base reward in the smallest unit (pence / cents) of ``study.pay_currency``: the hourly rate
    over the expected duration, rounded up, so never below the rate."""
    amount = Decimal(study.pay_rate) * study.expected_minutes / 60 * 100
    return int(amount.to_integral_value(rounding=ROUND_CEILING))


def screenout_reward_cents(study: Study, cohort: Cohort) -> int:
    """What a filtered worker is paid (Prolific's fixed screen-out reward): the reward's share of the
    training step (k of the k + test items), rounded up, and strictly below the reward as Prolific asks."""
    from tasks_data.selectors import test_examples

    reward = reward_cents(study)
    items = cohort.shots + test_examples(cohort.task).count()
    share = Decimal(reward) * cohort.shots / max(items, 1)
    return max(1, min(reward - 1, int(share.to_integral_value(rounding=ROUND_CEILING))))


def check_currency(client: prolific.ProlificClient, study: Study) -> None:
    """Refuse to publish when the study's pay currency is not the Prolific account's (rewards are in its cents)."""
    account = str(client.me().get("currency_code") or "").upper()
    if account != study.pay_currency:
        raise ValueError(f"this study pays in {study.pay_currency} but the Prolific account pays in "
                         f"{account or 'an unknown currency'}: set the study's pay currency to match")


def places_owed(cohort: Cohort) -> int:
    """Places freed here that Prolific will not give back by itself.

    A filtered worker leaves with the screen-out code, and a screened-out submission keeps its
    Prolific place; a withdrawn or expired one keeps it too once the submission was sent
    (awaiting review, approved, screened out). Returned, timed-out and rejected submissions free
    their place on Prolific already (the submission object's reference), so they are not counted:
    counting them would recruit too many.
    """
    kept = [prolific.AWAITING_REVIEW, prolific.APPROVED, prolific.SCREENED_OUT, prolific.PARTIALLY_APPROVED]
    freed = (Enrollment.objects.filter(cohort=cohort).exclude(state__in=HOLDS_SLOT)
             .exclude(prolific_status__in=prolific.FREES_PROLIFIC_PLACE))
    return (freed.filter(state=State.FILTERED) | freed.filter(prolific_status__in=kept)).distinct().count()


def places_for(cohort: Cohort) -> int:
    """Prolific's places: the target plus every place owed (``places_owed``)."""
    return cohort.target + places_owed(cohort)


def give_back_places(cohort_id: int, *, actor: str = "system", retries: int | None = None) -> int | None:
    """Give the cohort's Prolific study the places freed here, at once; idempotent from our side.

    The ``ProlificPlaces`` row is locked, the places owed counted, and Prolific is told the new
    absolute total only when more places are owed than were given back: a rerun, a concurrent
    call or a crash after Prolific answered sets the same total again, never one more.
    Returns the total Prolific now has (None when the cohort is not on Prolific). Raises ProlificError.
    ``retries`` overrides PROLIFIC_RETRIES (the task queued on commit makes one attempt: the sync retries).
    """
    cohort = Cohort.objects.select_related("study", "task").get(pk=cohort_id)
    if not cohort.prolific_study_id or not token_for(cohort.study):
        return None
    if cohort.closed_at is not None or cohort.study.closed_at is not None:
        return None  # more places would re-open a finished Prolific study
    ProlificPlaces.objects.get_or_create(cohort=cohort, defaults={"total": cohort.target})
    with transaction.atomic():
        row = ProlificPlaces.objects.select_for_update().get(cohort=cohort)
        owed = places_owed(cohort)
        if owed <= row.given_back:
            return row.total
        total = cohort.target + owed
        client = client_for(cohort.study)
        if retries is not None:
            client.retries = retries
        with client:
            client.set_places(cohort.prolific_study_id, total)
        row.given_back, row.total = owed, total
        row.save(update_fields=["given_back", "total", "updated_at"])
        _audit(cohort.study, "prolific places", f"{cohort.task.slug} {cohort.shots}-shot: {total} places "
               f"({owed} given back)", actor=actor)
        return total


def place_freed(enrollment: Enrollment) -> None:
    """Called by ``protocol.transition`` for every enrollment leaving a slot: queue the give-back on commit.

    Nothing happens for a cohort that is not on Prolific. The task runs eagerly without a broker;
    the periodic sync gives the places back too if the task cannot.
    """
    cohort_id, prolific_id = enrollment.cohort_id, enrollment.cohort.prolific_study_id
    if not prolific_id:
        return

    def queue():
        from .tasks import give_back_places as task

        task.delay(cohort_id)

    transaction.on_commit(queue, robust=True)


def external_url(site_url: str, cohort: Cohort) -> str:
    return (f"{site_url.rstrip('/')}{cohort.join_path}?PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}"
            f"&STUDY_ID={{{{%STUDY_ID%}}}}&SESSION_ID={{{{%SESSION_ID%}}}}")


def _group(client: prolific.ProlificClient, study: Study, cohort: Cohort) -> str:
    row = ParticipantGroup.objects.filter(owner_id=study.created_by_id, task=cohort.task).first()
    if row is None:
        workspace = getattr(settings, "PROLIFIC_WORKSPACE_ID", "")
        if not workspace:
            raise ValueError("PROLIFIC_WORKSPACE_ID is not set: Prolific creates participant groups only in a "
                             "workspace (its id is in the workspace's URL on Prolific)")
        answer = client.create_participant_group(f"CLUES {cohort.task.slug}: took part", workspace)
        row = ParticipantGroup.objects.create(owner_id=study.created_by_id, task=cohort.task,
                                              prolific_id=answer["id"])
        _audit(study, "prolific create group", f"{cohort.task.slug}: {row.prolific_id}")
    return row.prolific_id


def study_body(study: Study, cohort: Cohort, site_url: str, group_id: str) -> dict:
    spec = TASKS[cohort.task.slug]
    add = [{"action": prolific.ADD_TO_PARTICIPANT_GROUP, "participant_group": group_id}]
    screen_out = {"action": prolific.FIXED_SCREEN_OUT_PAYMENT, "fixed_screen_out_reward": screenout_reward_cents(
        study, cohort), "slots": cohort.target}  # more screen-outs than the target pauses the study: look at it
    training = f" with {cohort.shots} training examples first" if cohort.shots else ""
    return {
        "name": f"{spec.name}: mark the answers in short texts",
        "internal_name": f"{study.name} / {cohort.task.slug} / {cohort.shots}-shot",
        "description": f"{spec.name}{training}. You mark the answer in each text. About "
                       f"{study.expected_minutes} minutes. A training step can end the study early "
                       "(you are paid for it).",
        "external_study_url": external_url(site_url, cohort),
        "prolific_id_option": "url_parameters",
        "total_available_places": places_for(cohort),
        "estimated_completion_time": study.expected_minutes,
        "maximum_allowed_time": study.time_limit,
        "reward": reward_cents(study),
        "device_compatibility": ["desktop"],
        "completion_codes": [
            {"code": study.completion_code, "code_type": prolific.CODE_COMPLETED, "actor": "participant",
             "actions": [{"action": prolific.MANUALLY_REVIEW}, *add]},
            {"code": study.screenout_code, "code_type": prolific.CODE_FIXED_SCREENOUT, "actor": "participant",
             "actions": [screen_out, *add]},
        ],
        "filters": [{"filter_id": prolific.PARTICIPANT_GROUP_BLOCKLIST, "selected_values": [group_id]}],
    }


def publish(study: Study, *, site_url: str, draft: bool = False, actor: str = "system") -> list[tuple[str, int, str]]:
    """One Prolific study per cohort (published unless ``draft``); cohorts already published are left alone.

    Returns (task slug, shots, Prolific study id) for every cohort. Raises ProlificError.
    """
    if study.platform != Study.Platform.PROLIFIC:
        raise ValueError("this study does not recruit on Prolific (its platform is "
                         f"{study.get_platform_display()})")
    client = client_for(study)
    if client is None:
        raise ValueError("no Prolific token: set PROLIFIC_API_TOKEN or store one on the dashboard")
    lines = []
    with client:
        cohorts = list(study.cohorts.select_related("task").order_by("task__slug", "shots"))
        if any(not c.prolific_study_id for c in cohorts):
            check_currency(client, study)
        for cohort in cohorts:
            if not cohort.prolific_study_id:
                body = study_body(study, cohort, site_url, _group(client, study, cohort))
                created = client.create_study(body)
                cohort.prolific_study_id = created["id"]
                cohort.save(update_fields=["prolific_study_id"])
                ProlificPlaces.objects.update_or_create(cohort=cohort, defaults={
                    "total": body["total_available_places"],
                    "given_back": body["total_available_places"] - cohort.target})
                _audit(study, "prolific create study", f"{cohort.task.slug} {cohort.shots}-shot: "
                       f"{cohort.prolific_study_id}, {body['total_available_places']} places, "
                       f"reward {body['reward']} ({study.pay_currency} cents)", actor=actor)
                if not draft:
                    client.transition_study(cohort.prolific_study_id, "PUBLISH")
                    _audit(study, "prolific publish", cohort.prolific_study_id, actor=actor)
                if cohort.launched_at is None and not draft:
                    Cohort.objects.filter(pk=cohort.pk).update(launched_at=timezone.now())
            lines.append((cohort.task.slug, cohort.shots, cohort.prolific_study_id))
    return lines


# ---------------------------------------------------------------- sync and reconcile


@dataclass
class SyncReport:
    freed: list[str] = field(default_factory=list)
    approved: list[str] = field(default_factory=list)
    verified: list[str] = field(default_factory=list)
    attention: list[tuple[str, str, str]] = field(default_factory=list)  # (submission, participant, reason)
    places: dict[str, int] = field(default_factory=dict)


_FREES = {prolific.RETURNED: State.WITHDRAWN, prolific.REJECTED: State.WITHDRAWN, prolific.TIMED_OUT: State.EXPIRED}


def sync(study: Study, *, actor: str = "system") -> SyncReport:
    """Read every cohort's submissions on Prolific and reconcile (see the module docstring)."""
    report = SyncReport()
    client = client_for(study)
    if client is None:
        return report
    with client:
        for cohort in study.cohorts.exclude(prolific_study_id="").select_related("task"):
            enrollments = {e.worker.external_id: e for e in
                           Enrollment.objects.filter(cohort=cohort).select_related("worker")}
            for sub in client.study_submissions(cohort.prolific_study_id):
                _reconcile(client, study, cohort, sub, enrollments, report, actor)
            # The safety net of the give-back queued when a place is freed (``place_freed``).
            report.places[cohort.prolific_study_id] = give_back_places(cohort.pk, actor=actor)
    return report


def _reconcile(client, study, cohort, sub: dict, enrollments: dict, report: SyncReport, actor: str) -> None:
    sub_id, status = str(sub.get("id", "")), sub.get("status", "")
    pid = str(sub.get("participant_id") or "").lower()  # the list's field name (get-study-submissions)
    enrollment = enrollments.get(pid)
    if enrollment is None:
        if status == prolific.AWAITING_REVIEW:
            report.attention.append((sub_id, pid, "no enrollment here for this participant"))
        return
    with transaction.atomic():
        enrollment = Enrollment.objects.select_for_update().select_related("cohort__study").get(pk=enrollment.pk)
        if enrollment.verification == UNVERIFIED and sub_id == enrollment.platform_session:
            enrollment.verification = VERIFIED
            enrollment.save(update_fields=["verification"])
            report.verified.append(pid)
            _audit(study, "prolific verified", f"submission {sub_id}", enrollment, actor)
        if enrollment.prolific_status != status:
            enrollment.prolific_status = status[:20]
            enrollment.save(update_fields=["prolific_status"])
        if status in _FREES and enrollment.state in (State.TRAINING, State.TESTING):
            transition(enrollment, _FREES[status], actor=actor, action="prolific " + status.lower(),
                       reason=f"Prolific status {status}: the place is free again")
            report.freed.append(pid)
            return
    if status != prolific.AWAITING_REVIEW:
        return
    code = str(sub.get("study_code") or "")
    if enrollment.state == State.FILTERED:
        return  # paid by Prolific's screen-out handling
    if enrollment.state != State.COMPLETED:
        report.attention.append((sub_id, pid, f"the enrollment is {enrollment.state}, not completed"))
    elif code != study.completion_code:
        report.attention.append((sub_id, pid, "the submission carries another code than the study's"))
    elif enrollment.verification == UNVERIFIED:
        report.attention.append((sub_id, pid, "the enrollment is not verified (another SESSION_ID)"))
    elif study.manual_review:
        report.attention.append((sub_id, pid, "completed with the right code; the study is set to manual review"))
    else:
        try:
            client.approve(sub_id)
        except prolific.ProlificError as exc:
            _audit(study, "prolific approve failed", f"{sub_id}: {exc}", enrollment, actor)
            report.attention.append((sub_id, pid, f"approval failed: {exc}"))
            return
        Enrollment.objects.filter(pk=enrollment.pk).update(prolific_status=prolific.APPROVED)
        _audit(study, "prolific approve", f"submission {sub_id}", enrollment, actor)
        report.approved.append(pid)


# ---------------------------------------------------------------- fair pay


def planned_bonus(enrollment: Enrollment) -> tuple[Decimal, float]:
    """(bonus, active seconds): max(0, active time x rate - base reward)."""
    from .services import active_seconds, pay

    study = enrollment.cohort.study
    answered = list(Answer.objects.filter(enrollment=enrollment).values_list("answered_at", flat=True))
    seconds = active_seconds(enrollment.enrolled_at, answered, study.idle_cap_seconds)
    earned = pay(seconds, study.pay_rate)
    base = Decimal(reward_cents(study)) / 100
    return max(Decimal("0.00"), earned - base), seconds


@dataclass
class PayReport:
    paid: list[tuple[str, Decimal]] = field(default_factory=list)
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
        raise ValueError("no Prolific token: set PROLIFIC_API_TOKEN or store one on the dashboard")
    approved = (Enrollment.objects.filter(cohort__study=study, state=State.COMPLETED, prolific_status=prolific.APPROVED)
                .exclude(verification=UNVERIFIED).select_related("cohort__study", "worker"))
    for enrollment in approved:
        if not BonusPayment.objects.filter(enrollment=enrollment).exists():
            amount, seconds = planned_bonus(enrollment)
            if amount > 0:
                BonusPayment.objects.get_or_create(enrollment=enrollment,
                                                   defaults={"amount": amount, "active_seconds": seconds})
    with client:
        for cohort in study.cohorts.exclude(prolific_study_id=""):
            planned = list(BonusPayment.objects.filter(enrollment__cohort=cohort, state=BonusPayment.State.PLANNED)
                           .select_related("enrollment__worker"))
            if planned:
                lines = [(b.enrollment.worker.external_id, f"{b.amount:.2f}") for b in planned]
                try:
                    bulk = client.set_up_bonuses(cohort.prolific_study_id, lines)
                except prolific.ProlificError as exc:
                    _audit(study, "prolific bonus set-up failed", str(exc), actor=actor)
                    report.failed += [b.enrollment.worker.external_id for b in planned]
                    continue
                BonusPayment.objects.filter(pk__in=[b.pk for b in planned], state=BonusPayment.State.PLANNED).update(
                    state=BonusPayment.State.SET_UP, prolific_bulk_id=str(bulk["id"]))
                _audit(study, "prolific bonus set up", f"bulk {bulk['id']}: {len(lines)} bonus(es)", actor=actor)
        bulk_ids = (BonusPayment.objects.filter(enrollment__cohort__study=study, state=BonusPayment.State.SET_UP)
                    .values_list("prolific_bulk_id", flat=True).distinct())
        for bulk_id in list(bulk_ids):
            rows = BonusPayment.objects.filter(prolific_bulk_id=bulk_id, state=BonusPayment.State.SET_UP)
            members = list(rows.select_related("enrollment__worker"))
            # The claim: committed before the call, and only one caller's UPDATE matches.
            if rows.update(state=BonusPayment.State.PAYING) != len(members) or not members:
                continue
            try:
                client.pay_bonuses(bulk_id)
            except prolific.ProlificUnreachable as exc:
                _audit(study, "prolific bonus pay unknown", f"bulk {bulk_id}: {exc}; check it on Prolific",
                       actor=actor)
                report.uncertain += [m.enrollment.worker.external_id for m in members]
                continue
            except prolific.ProlificError as exc:
                if exc.status is not None and exc.status < 500:  # refused, so nothing was paid
                    BonusPayment.objects.filter(prolific_bulk_id=bulk_id).update(state=BonusPayment.State.SET_UP)
                    _audit(study, "prolific bonus pay refused", f"bulk {bulk_id}: {exc}", actor=actor)
                    report.failed += [m.enrollment.worker.external_id for m in members]
                else:
                    report.uncertain += [m.enrollment.worker.external_id for m in members]
                    _audit(study, "prolific bonus pay unknown", f"bulk {bulk_id}: {exc}", actor=actor)
                continue
            BonusPayment.objects.filter(prolific_bulk_id=bulk_id, state=BonusPayment.State.PAYING).update(
                state=BonusPayment.State.PAID, paid_at=timezone.now())
            _audit(study, "prolific bonus paid", f"bulk {bulk_id}: {len(members)} bonus(es)", actor=actor)
            report.paid += [(m.enrollment.worker.external_id, m.amount) for m in members]
    return report


def bonus_rows(study: Study) -> list[dict]:
    """Per approved or completed worker: base reward, bonus (planned/paid) and effective hourly rate."""
    base = Decimal(reward_cents(study)) / 100
    rows = []
    for e in (Enrollment.objects.filter(cohort__study=study, state=State.COMPLETED)
              .select_related("worker", "cohort__task", "cohort__study").order_by("pk")):
        ledger = BonusPayment.objects.filter(enrollment=e).first()
        amount, seconds = (ledger.amount, ledger.active_seconds) if ledger else planned_bonus(e)
        hours = seconds / 3600
        rows.append({"worker": e.worker.external_id, "task": e.cohort.task.slug, "shots": e.cohort.shots,
                     "prolific_status": e.prolific_status, "active_minutes": round(seconds / 60, 1),
                     "base": base, "bonus": amount, "bonus_state": ledger.state if ledger else "not planned",
                     "hourly": (float(base + amount) / hours) if hours else math.nan})
    return rows
