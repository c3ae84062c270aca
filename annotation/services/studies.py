"""Studies and cohorts: create a study (one cohort per task x shots), launch and close them."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from decimal import Decimal

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

import crowd
from tasks_data.models import Task, TrainingSet
from tasks_data.registry import CLUES_TASKS, SHOTS, find_task, get_task
from tasks_data.selectors import tasks_visible_to

from .. import platform_settings
from ..estimates import sitting_refusal
from ..models import AuditEvent, Cohort, Enrollment, Study
from ..protocol import holds_place, reopen_refusal
from .errors import Conflict
from .filtering import require_reason


def study_defaults() -> dict:
    """The model's default of every parameter but the name and tasks (one place: ``Study.parameters``)."""
    fields = {f.name: f for f in Study._meta.concrete_fields}
    return {name: fields[name].get_default() for name in Study.parameters() if name not in ("name", "tasks")}


def data_errors(*, tasks: list[str], shots: list[int], chain, user=None) -> tuple[dict, dict, dict]:
    """(errors, task rows, training sets): the imported data each (task, shots) cohort needs; with ``user``, only
    the tasks they may use (``tasks_visible_to``: another researcher's task is unknown to them)."""
    errors: dict[str, list[str]] = {}
    rows = Task.objects.all() if user is None else tasks_visible_to(user)
    task_rows = {t.slug: t for t in rows.filter(slug__in=tasks)}
    missing = [t for t in tasks if find_task(t) and t not in task_rows]
    not_imported = [t for t in missing if t in CLUES_TASKS]
    if not_imported:
        errors.setdefault("tasks", []).append(f"no data imported for: {', '.join(not_imported)} (run import_clues)")
    if len(missing) > len(not_imported):  # a task of one's own, but someone else's
        errors.setdefault("tasks", []).append(f"unknown task(s): {', '.join(sorted(set(missing) - set(not_imported)))}")
    training_sets = {
        (ts.task.slug, ts.shots): ts
        for ts in TrainingSet.objects.filter(
            task__slug__in=tasks, chain=chain, shots__in=[k for k in shots if k]
        ).select_related("task")
    }
    for slug in task_rows:
        absent = [k for k in shots if k and (slug, k) not in training_sets]
        if absent:
            errors.setdefault("chain", []).append(f"{get_task(slug).name} has no chain {chain} for {absent} shots")
    return errors, task_rows, training_sets


def default_shots(tasks) -> list[int]:
    """A study's shot conditions when none are chosen: 0 and the training-file sizes every task has."""
    specs = [spec for t in tasks if isinstance(t, str) and (spec := find_task(t))] if isinstance(tasks, list) else []
    if not specs:
        return [0, *SHOTS]
    return [0, *sorted(set.intersection(*(set(spec.shots) for spec in specs)))]


def _shot_list(shots):
    """Shot conditions given as ints, in order and each once (anything else is left for full_clean to name)."""
    if isinstance(shots, (list, tuple)) and all(isinstance(k, int) for k in shots):
        return sorted(set(shots))
    return shots


def _sitting_errors(study: Study, *, checked: bool) -> dict[str, list[str]]:
    """The sitting cap's error when it cannot hold a cohort's part 1 (``estimates.sitting_refusal``)."""
    refusal = sitting_refusal(study=study) if checked else ""
    return {"sitting_minutes": [refusal]} if refusal else {}


def create_study(*, name: str, tasks: Sequence[str], created_by=None, launch: bool = False, **params) -> Study:
    """Create a study and its cohorts (one per task x shots); raises ValidationError naming the field.

    ``params`` are Study's fields (shots, chain, workers_per_cohort, pay_rate, ...); left out, the
    model's default, but for the platform: the first configured one (``crowd.default``). Their limits are
    the model's (``Study.full_clean``), checked before any query. ``params`` may also give the chosen
    platform's own settings by name (``annotation.platform_settings``; another platform's are refused);
    its provider keeps them.
    """
    defaults = study_defaults()
    settings_known = platform_settings.all_fields()
    unknown_params = set(params) - set(defaults) - set(settings_known)
    if unknown_params:
        raise TypeError(f"create_study() got unknown parameters: {', '.join(sorted(unknown_params))}")
    given_settings = {key: params.pop(key) for key in list(params) if key in settings_known}
    values = {**defaults, **params}
    if "platform" not in params:
        values["platform"] = crowd.default(owner=created_by)
    if isinstance(tasks, (list, tuple)):
        tasks = list(dict.fromkeys(tasks))
    # Not chosen: 0 and every size all the tasks have (the CLUES tasks: 0, 10, 20, 30).
    values["shots"] = _shot_list(params["shots"]) if "shots" in params else default_shots(tasks)
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
    settings: dict = {}
    if "platform" not in errors:
        settings, settings_errors = platform_settings.clean(study.provider, given_settings)
        for key, messages in settings_errors.items():
            errors.setdefault(key, []).extend(messages)
        for key, messages in study.provider.check_settings(study, settings).items():
            errors.setdefault(key, []).extend(messages)
    valid = not ({"tasks", "shots", "chain"} & set(errors))
    missing, task_rows, training_sets = (
        data_errors(tasks=study.tasks, shots=study.shots, chain=study.chain, user=created_by) if valid else ({}, {}, {})
    )
    missing.update(_sitting_errors(study, checked=valid and "sitting_minutes" not in errors))
    for key, messages in missing.items():
        errors.setdefault(key, []).extend(messages)
    if errors:
        raise ValidationError(errors)
    tasks, shots, workers_per_cohort = study.tasks, study.shots, study.workers_per_cohort
    actor = created_by.get_username() if created_by else "system"
    with transaction.atomic():
        study.save()
        Cohort.objects.bulk_create(
            [
                Cohort(
                    study=study,
                    task=task_rows[slug],
                    shots=k,
                    training_set=training_sets.get((slug, k)),
                    target=workers_per_cohort,
                )
                for slug in tasks
                for k in shots
            ]
        )
        study.provider.save_settings(study, settings)
        AuditEvent.objects.create(
            study=study,
            actor=actor,
            action="create study",
            reason=f"{len(tasks)} task(s) x {len(shots)} shot condition(s)",
        )
        if launch:
            launch_cohorts(study=study, actor=actor)
    return study


def launch_cohorts(*, study: Study, cohorts: Sequence[Cohort] | None = None, actor: str) -> int:
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


def close_cohort(*, cohort: Cohort, actor: str, reason: str = "") -> None:
    if cohort.closed_at is None:
        cohort.closed_at = timezone.now()
        cohort.save(update_fields=["closed_at"])
        AuditEvent.objects.create(
            study=cohort.study,
            actor=actor,
            action="close cohort",
            reason=f"{cohort.task.slug} {cohort.shots}-shot" + (f": {reason}" if reason else ""),
        )


def reopen_cohort(*, cohort: Cohort, actor: str, reason: str) -> Cohort:
    """Re-open a closed cohort that has places left (``protocol.reopen_refusal``); a reason is required.

    The join link takes workers again (or, if it was never launched, waits to be launched).
    """
    reason = require_reason(reason)
    with transaction.atomic():
        cohort = Cohort.objects.select_for_update(of=("self",)).select_related("study", "task").get(pk=cohort.pk)
        taken = Enrollment.objects.filter(holds_place(), cohort=cohort).count()
        refusal = reopen_refusal(cohort, taken=taken, study_open=cohort.study.is_open)
        if refusal:
            raise Conflict(refusal)
        cohort.closed_at = None
        cohort.save(update_fields=["closed_at"])
        AuditEvent.objects.create(
            study=cohort.study,
            actor=actor,
            action="reopen cohort",
            reason=f"{cohort.task.slug} {cohort.shots}-shot: {reason}",
        )
    return cohort


def close_study(*, study: Study, actor: str, reason: str = "") -> None:
    if study.closed_at is None:
        study.closed_at = timezone.now()
        study.save(update_fields=["closed_at"])
        AuditEvent.objects.create(study=study, actor=actor, action="close study", reason=reason)
