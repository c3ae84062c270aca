"""Publishing a study on Prolific: one Prolific study per cohort, with its reward, codes and places; a cohort whose
test step comes in parts (``annotation.estimates``) has one Prolific study per part, each later part open only to
the participants who finished the part before (a participant group as its filter, Prolific's multi-part studies)."""

from __future__ import annotations

from django.conf import settings
from django.utils import timezone

from annotation.codes import part_codes
from annotation.estimates import cohort_estimate
from annotation.models import Cohort, Study

from . import client as prolific
from . import webhooks
from .audit import audit
from .models import ParticipantGroup, ProlificCohort, ProlificPart
from .places import places_for
from .tokens import NO_TOKEN, client_for, on_prolific

# The least fixed screen-out reward Prolific accepts, in the smallest unit of the account's currency (its custom
# screening with a fixed payment, https://prolific.notion.site/New-Custom-Screening-July-2025-23770df1d20280c29cdee4cea83f2371,
# and its announcement "Update to In-Study Screening Rewards": "The minimum pay for a screen-out is $0.14 / £0.10").
MIN_SCREEN_OUT_REWARD = {"USD": 14, "GBP": 10}
# Prolific's clock runs from the participant's start there to their submitting the code: its maximum time is the part's
# time limit here and these minutes to reach the study and to come back and submit the code.
REACH_MINUTES = 10


def reward_cents(cohort: Cohort, part: int = 1) -> int:
    """A part's base reward in the smallest unit (pence / cents) of the study's pay currency, as it would be published
    now: the cohort's estimate (``annotation.estimates``), the hourly rate over the part's listed minutes, rounded up.
    Once the part is published, what it pays is what was published (``records.published_part``)."""
    return int(cohort_estimate(cohort).reward(part) * 100)


def screenout_reward_cents(study: Study) -> int:
    """What Prolific pays by itself for a screen-out code (a filtered worker, or one who stopped in a part with
    answers in it): the least Prolific accepts. A code alone (shared, or sent by someone who never opened the platform)
    earns nothing more; the time a worker of the platform spent is paid as a bonus (``recruitment.bonuses``)."""
    return MIN_SCREEN_OUT_REWARD[study.pay_currency]


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


def study_body(study: Study, cohort: Cohort, site_url: str, group_id: str, *, part: int = 1, groups=()) -> dict:
    """The Prolific study of a cohort's ``part``: its time, reward and maximum time from the cohort's estimate.
    ``groups``: the participant groups of the cohort's parts (who finished each), when it has several: a part's
    completion code adds its finisher to its group, and a later part is open only to the previous part's group."""
    spec = cohort.task.spec
    estimate = cohort_estimate(cohort)
    this, parts = estimate.part(part), len(estimate.parts)
    add = [{"action": prolific.ADD_TO_PARTICIPANT_GROUP, "participant_group": group_id}]
    if part < parts:  # the last part has no next one to open
        add.append({"action": prolific.ADD_TO_PARTICIPANT_GROUP, "participant_group": groups[part - 1]})
    reward = reward_cents(cohort, part)
    if reward <= screenout_reward_cents(study):
        raise ValueError(
            f"{cohort.task.slug} {cohort.shots}-shot part {part}: its reward of {reward} ({study.pay_currency} cents) "
            f"must be above Prolific's minimum screen-out payment of {screenout_reward_cents(study)}: raise the pay "
            "rate or the sitting cap"
        )
    codes = part_codes(cohort, part)
    screen_out = {
        "action": prolific.FIXED_SCREEN_OUT_PAYMENT,
        "fixed_screen_out_reward": screenout_reward_cents(study),
        # Prolific pauses the study once this many were screened out: more than the cohort's target is a filter or a
        # time limit gone wrong, for the researcher to look at.
        "slots": cohort.target + 1,
    }
    training = f" with {cohort.shots} training examples first" if cohort.shots and part == 1 else ""
    named = f" (part {part} of {parts})" if parts > 1 else ""
    sittings = (
        f" Part {part} of {parts}: each part is a study of its own on Prolific, open to those who finished the "
        "part before."
        if parts > 1
        else ""
    )
    filters = [{"filter_id": prolific.PARTICIPANT_GROUP_BLOCKLIST, "selected_values": [group_id]}]
    if part > 1:
        # Only those who finished the part before may take this one (Prolific's multi-part studies).
        filters = [{"filter_id": prolific.PARTICIPANT_GROUP_ALLOWLIST, "selected_values": [groups[part - 2]]}]
    return {
        "name": f"{spec.name}: mark the answers in short texts{named}",
        "internal_name": f"{study.name} / {cohort.task.slug} / {cohort.shots}-shot{named}",
        "description": f"{spec.name}{training}. You mark the answer in each text. About "
        f"{this.listed_minutes} minutes.{sittings} A training step can end the study early "
        "(you are paid for it).",
        "external_study_url": external_url(site_url, cohort),
        "prolific_id_option": "url_parameters",
        "total_available_places": places_for(cohort, part),
        "estimated_completion_time": this.listed_minutes,
        "maximum_allowed_time": this.time_limit + REACH_MINUTES,
        "reward": reward,
        "device_compatibility": ["desktop"],
        "completion_codes": [
            {
                "code": codes.completion_code,
                "code_type": prolific.CODE_COMPLETED,
                "actor": "participant",
                "actions": [{"action": prolific.MANUALLY_REVIEW}, *add],
            },
            {
                "code": codes.screenout_code,
                "code_type": prolific.CODE_FIXED_SCREENOUT,
                "actor": "participant",
                "actions": [screen_out, *add[:1]],
            },
        ],
        "filters": filters,
    }


def _part_groups(client: prolific.ProlificClient, study: Study, cohort: Cohort, parts: int) -> list[str]:
    """One participant group per part of a cohort in several parts: who finished it (kept, so a rerun reuses them)."""
    if parts < 2:
        return []
    groups = []
    workspace = getattr(settings, "PROLIFIC_WORKSPACE_ID", "")
    for number in range(1, parts):
        row = ProlificPart.objects.filter(cohort=cohort, number=number).first()
        if row is None or not row.finishers_group:
            answer = client.create_participant_group(
                f"CLUES {cohort.task.slug} {cohort.shots}-shot: finished part {number}", workspace
            )
            row, _ = ProlificPart.objects.update_or_create(
                cohort=cohort, number=number, defaults={"finishers_group": answer["id"]}
            )
            audit(study, "prolific create group", f"{cohort.task.slug} part {number} finishers: {answer['id']}")
        groups.append(row.finishers_group)
    return groups


def _record_part(cohort: Cohort, number: int, prolific_study_id: str, body: dict, *, draft: bool) -> None:
    """Keep what the part's Prolific study was created with: its workers' bonus base and the figures its pages show,
    whatever the estimate becomes later (a new estimate applies only to parts published after it)."""
    (screen_out,) = [
        action
        for code in body["completion_codes"]
        for action in code["actions"]
        if action["action"] == prolific.FIXED_SCREEN_OUT_PAYMENT
    ]
    ProlificPart.objects.update_or_create(
        cohort=cohort,
        number=number,
        defaults={
            "prolific_study_id": prolific_study_id,
            "reward": body["reward"],
            "screenout_reward": screen_out["fixed_screen_out_reward"],
            "minutes": body["estimated_completion_time"],
            "maximum_minutes": body["maximum_allowed_time"],
            "estimate_source": cohort_estimate(cohort).source,
            "published_at": None if draft else timezone.now(),
            "total": body["total_available_places"],
            "given_back": body["total_available_places"] - cohort.target,
        },
    )


def _publish_later_parts(client, study: Study, cohort: Cohort, site_url: str, *, draft: bool, actor: str) -> None:
    """The cohort's parts after the first, each a Prolific study open only to the finishers of the part before."""
    parts = len(cohort_estimate(cohort).parts)
    if parts < 2:
        return
    groups = _part_groups(client, study, cohort, parts)
    group_id = _group(client, study, cohort)
    for number in range(2, parts + 1):
        row = ProlificPart.objects.filter(cohort=cohort, number=number).first()
        if row is not None and row.prolific_study_id:
            continue
        body = study_body(study, cohort, site_url, group_id, part=number, groups=groups)
        created = client.create_study(body)
        _record_part(cohort, number, created["id"], body, draft=draft)
        audit(
            study,
            "prolific create study",
            f"{cohort.task.slug} {cohort.shots}-shot part {number} of {parts}: {created['id']}, "
            f"reward {body['reward']} ({study.pay_currency} cents), about {body['estimated_completion_time']} minutes",
            actor=actor,
        )
        if not draft:
            client.transition_study(created["id"], "PUBLISH")
            audit(study, "prolific publish", created["id"], actor=actor)


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
                parts = len(cohort_estimate(cohort).parts)
                groups = _part_groups(client, study, cohort, parts)
                body = study_body(study, cohort, site_url, _group(client, study, cohort), groups=groups)
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
                _record_part(cohort, 1, prolific_study_id, body, draft=draft)
                if cohort.launched_at is None and not draft:
                    Cohort.objects.filter(pk=cohort.pk).update(launched_at=timezone.now())
            _publish_later_parts(client, study, cohort, site_url, draft=draft, actor=actor)
            lines.append((cohort.task.slug, cohort.shots, published[cohort.pk]))
        if not draft:
            # Submission status changes acted on at once (the sync remains the safety net); never fails the publish.
            webhooks.subscribe(client, study, site_url=site_url, actor=actor)
    return lines
