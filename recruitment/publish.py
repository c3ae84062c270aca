"""Publishing a study on Prolific: one Prolific study per cohort, with its reward, codes and places."""

from __future__ import annotations

from decimal import ROUND_CEILING, Decimal

from django.conf import settings
from django.utils import timezone

from annotation.models import Cohort, Study
from tasks_data.registry import TASKS
from tasks_data.selectors import test_examples

from . import client as prolific
from . import webhooks
from .audit import audit
from .models import ParticipantGroup, ProlificCohort
from .places import places_for
from .tokens import NO_TOKEN, client_for, on_prolific


def reward_cents(study: Study) -> int:
    """The base reward in the smallest unit (pence / cents) of ``study.pay_currency``: the hourly rate
    over the expected duration, rounded up, so never below the rate."""
    amount = Decimal(study.pay_rate) * study.expected_minutes / 60 * 100
    return int(amount.to_integral_value(rounding=ROUND_CEILING))


def screenout_reward_cents(study: Study, cohort: Cohort) -> int:
    """What a filtered worker is paid (Prolific's fixed screen-out reward): the reward's share of the
    training step (k of the k + test items), rounded up, and strictly below the reward as Prolific asks."""
    reward = reward_cents(study)
    items = cohort.shots + test_examples(cohort.task).count()
    share = Decimal(reward) * cohort.shots / max(items, 1)
    return max(1, min(reward - 1, int(share.to_integral_value(rounding=ROUND_CEILING))))


def check_currency(client: prolific.ProlificClient, study: Study) -> None:
    """Refuse to publish when the study's pay currency is not the Prolific account's (rewards are in its cents)."""
    account = str(client.me().get("currency_code") or "").upper()
    if account != study.pay_currency:
        raise ValueError(
            f"this study pays in {study.pay_currency} but the Prolific account pays in "
            f"{account or 'an unknown currency'}: set the study's pay currency to match"
        )


def external_url(site_url: str, cohort: Cohort) -> str:
    return (
        f"{site_url.rstrip('/')}{cohort.join_path}?PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}"
        f"&STUDY_ID={{{{%STUDY_ID%}}}}&SESSION_ID={{{{%SESSION_ID%}}}}"
    )


def _group(client: prolific.ProlificClient, study: Study, cohort: Cohort) -> str:
    row = ParticipantGroup.objects.filter(owner_id=study.created_by_id, task=cohort.task).first()
    if row is None:
        workspace = getattr(settings, "PROLIFIC_WORKSPACE_ID", "")
        if not workspace:
            raise ValueError(
                "PROLIFIC_WORKSPACE_ID is not set: Prolific creates participant groups only in a "
                "workspace (its id is in the workspace's URL on Prolific)"
            )
        answer = client.create_participant_group(f"CLUES {cohort.task.slug}: took part", workspace)
        row = ParticipantGroup.objects.create(owner_id=study.created_by_id, task=cohort.task, prolific_id=answer["id"])
        audit(study, "prolific create group", f"{cohort.task.slug}: {row.prolific_id}")
    return row.prolific_id


def study_body(study: Study, cohort: Cohort, site_url: str, group_id: str) -> dict:
    spec = TASKS[cohort.task.slug]
    add = [{"action": prolific.ADD_TO_PARTICIPANT_GROUP, "participant_group": group_id}]
    screen_out = {
        "action": prolific.FIXED_SCREEN_OUT_PAYMENT,
        "fixed_screen_out_reward": screenout_reward_cents(study, cohort),
        "slots": cohort.target,
    }  # more screen-outs than the target pauses the study: look at it
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
            {
                "code": study.completion_code,
                "code_type": prolific.CODE_COMPLETED,
                "actor": "participant",
                "actions": [{"action": prolific.MANUALLY_REVIEW}, *add],
            },
            {
                "code": study.screenout_code,
                "code_type": prolific.CODE_FIXED_SCREENOUT,
                "actor": "participant",
                "actions": [screen_out, *add],
            },
        ],
        "filters": [{"filter_id": prolific.PARTICIPANT_GROUP_BLOCKLIST, "selected_values": [group_id]}],
    }


def publish(study: Study, *, site_url: str, draft: bool = False, actor: str = "system") -> list[tuple[str, int, str]]:
    """One Prolific study per cohort (published unless ``draft``); cohorts already published are left alone.

    Returns (task slug, shots, Prolific study id) for every cohort. Raises ProlificError.
    """
    if not on_prolific(study):
        raise ValueError(f"this study does not recruit on Prolific (its platform is {study.provider.name})")
    client = client_for(study)
    if client is None:
        raise ValueError(NO_TOKEN)
    lines = []
    with client:
        cohorts = list(study.cohorts.select_related("task").order_by("task__slug", "shots"))
        published = dict(
            ProlificCohort.objects.filter(cohort__study=study)
            .exclude(prolific_study_id="")
            .values_list("cohort_id", "prolific_study_id")
        )
        if any(c.pk not in published for c in cohorts):
            check_currency(client, study)
        for cohort in cohorts:
            if cohort.pk not in published:
                body = study_body(study, cohort, site_url, _group(client, study, cohort))
                created = client.create_study(body)
                prolific_study_id = published[cohort.pk] = created["id"]
                ProlificCohort.objects.update_or_create(
                    cohort=cohort,
                    defaults={
                        "prolific_study_id": prolific_study_id,
                        "total": body["total_available_places"],
                        "given_back": body["total_available_places"] - cohort.target,
                    },
                )
                audit(
                    study,
                    "prolific create study",
                    f"{cohort.task.slug} {cohort.shots}-shot: "
                    f"{prolific_study_id}, {body['total_available_places']} places, "
                    f"reward {body['reward']} ({study.pay_currency} cents)",
                    actor=actor,
                )
                if not draft:
                    client.transition_study(prolific_study_id, "PUBLISH")
                    audit(study, "prolific publish", prolific_study_id, actor=actor)
                if cohort.launched_at is None and not draft:
                    Cohort.objects.filter(pk=cohort.pk).update(launched_at=timezone.now())
            lines.append((cohort.task.slug, cohort.shots, published[cohort.pk]))
        if not draft:
            # Submission status changes acted on at once (the sync remains the safety net); never fails the publish.
            webhooks.subscribe(client, study, site_url=site_url, actor=actor)
    return lines
