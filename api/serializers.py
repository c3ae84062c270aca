"""Request parsing and response shapes of the API (no rules: those live in annotation.services).

The worker payloads (``work_state_payload``, ``submit_payload``) are the contract crowd
platforms and the worker UI depend on; they never carry the gold answer of an item before
the worker answered it, nor the item's CLUES id or database id (items are addressed by their
handle, ``annotation.handles``).
"""

from __future__ import annotations

import json

from django.core.serializers.json import DjangoJSONEncoder
from rest_framework import serializers

from annotation import platform_settings, selectors, services
from annotation.models import AuditEvent, Study
from annotation.protocol import step_name
from tasks_data.models import Example
from tasks_data.registry import TaskSpec

# ---------------------------------------------------------------- workers


def item_payload(example: Example, spec: TaskSpec, handle: str) -> dict:
    """What a worker sees of an item: its handle (``annotation.handles``), never the gold answer, the CLUES id,
    the database id or answerability."""
    kind = spec.answer_kind
    item: dict = {"id": handle, "kind": kind.name, "question": example.question}
    if spec.context_is_pair:
        item["premise"], item["hypothesis"] = example.context, example.hypothesis
    else:
        item["context"] = example.context
    item.update(kind.item_fields(spec, example))  # the choices: labels, candidates
    return item


def completion_payload(enrollment) -> dict | None:
    done = services.completion(enrollment=enrollment)
    if done is None:
        return None
    return {
        "code": done.code,
        "redirect_url": done.redirect_url,
        "post_url": done.post_url,
        "post_fields": dict(done.post_fields),
    }


def task_payload(spec: TaskSpec) -> dict:
    return {"slug": spec.slug, "name": spec.name, "description": spec.description, "kind": spec.answer_kind.name}


def work_state_payload(state: services.WorkState) -> dict:
    """``GET /api/work/current/``: step, progress, the current item (or null) and, when done, the code."""
    spec = state.enrollment.cohort.task.spec
    handle = state.item_handle  # None exactly when there is no item
    return {
        "step": state.step,
        "progress": {"done": state.done, "total": state.total},
        "item": item_payload(state.item, spec, handle) if state.item is not None and handle is not None else None,
        "task": task_payload(spec),
        "completion": completion_payload(state.enrollment),
    }


def submit_payload(result: services.SubmitResult, enrollment) -> dict:
    """``POST /api/work/answer/`` (201): training answers get the gold and S1 of that item."""
    payload: dict[str, object] = {
        "item": result.item,
        "step": "training" if result.step == "training" else "test",
        "progress": {"done": result.done, "total": result.total},
        "next_step": step_name(result.next_state),
    }
    if result.step == "training":
        payload["gold"] = list(result.gold or [])
        payload["s1"] = result.s1
        # The data's quirk: this gold cannot be marked exactly; the item is not held against the worker.
        payload["gold_unproducible"] = result.gold_unproducible
    payload["completion"] = completion_payload(enrollment)
    return payload


class AnswerSubmitSerializer(serializers.Serializer):
    item = serializers.CharField(
        trim_whitespace=False, max_length=64, help_text="The item's handle: item.id as GET /api/work/current/ gave it."
    )
    answer = serializers.JSONField(
        help_text='A label ["positive"]; spans [{"start": s, "end": e}] (end exclusive); [] for none.'
    )


class WithdrawSerializer(serializers.Serializer):
    reason = serializers.CharField(
        required=False, allow_blank=True, default="", max_length=AuditEvent.REASON_MAX_LENGTH
    )


class ProgressSerializer(serializers.Serializer):
    done = serializers.IntegerField()
    total = serializers.IntegerField()


class CompletionSerializer(serializers.Serializer):
    code = serializers.CharField()
    redirect_url = serializers.CharField(allow_null=True, help_text="Prolific: send the worker here.")
    post_url = serializers.CharField(allow_null=True, help_text="MTurk: POST post_fields here (externalSubmit).")
    post_fields = serializers.DictField(child=serializers.CharField())


class WorkStateSerializer(serializers.Serializer):
    step = serializers.ChoiceField(choices=["training", "test", "done", "filtered", "withdrawn", "expired"])
    progress = ProgressSerializer()
    item = serializers.DictField(
        allow_null=True,
        help_text=(
            "id (the item's handle for this worker, a string: post it back as item), kind "
            "(label|spans|span_or_none|entity), question, context (MNLI: premise and hypothesis), "
            "labels (label kind), candidates [{start, end, text}] (entity kind)"
        ),
    )
    task = serializers.DictField()
    completion = CompletionSerializer(allow_null=True)


class SubmitResultSerializer(serializers.Serializer):
    item = serializers.CharField(help_text="The handle of the item answered.")
    step = serializers.ChoiceField(choices=["training", "test"])
    progress = ProgressSerializer()
    next_step = serializers.CharField()
    gold = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="Training step only: the gold answer (MRC: its alternatives).",
    )
    s1 = serializers.FloatField(required=False, help_text="Training step only: S1 (0-1) of this answer.")
    gold_unproducible = serializers.BooleanField(
        required=False,
        help_text="Training step only: the gold cannot be marked exactly in the text (a quirk of the "
        "data); the item is left out of the training S1 that filters.",
    )
    completion = CompletionSerializer(allow_null=True)


# ---------------------------------------------------------------- researchers


class StudyCreateSerializer(serializers.ModelSerializer):
    """Derived from the Study model: its fields, limits (min/max from the validators) and defaults;
    services.create_study then runs ``Study.full_clean`` (400 with the field's errors). Each crowd
    platform's own settings are optional fields too (``annotation.platform_settings``): given for
    another platform than the study's, they are refused by name. Without a platform, the first one
    configured for the researcher (``crowd.default``)."""

    tasks = serializers.ListField(
        child=serializers.CharField(max_length=50),
        allow_empty=False,
        help_text=Study._meta.get_field("tasks").help_text,
    )
    shots = serializers.ListField(
        child=serializers.IntegerField(),
        required=False,
        help_text="Shot conditions: 0 and the tasks' training-file sizes (CLUES: 10, 20, 30); default: 0 and every "
        "size all the tasks have.",
    )
    launch = serializers.BooleanField(default=False, help_text="Open every cohort for joining at once.")

    class Meta:
        model = Study
        fields = [*Study.parameters(), "launch"]
        extra_kwargs = {
            "completion_code": {"required": False, "allow_blank": True},
            "screenout_code": {"required": False, "allow_blank": True},
        }

    def get_fields(self):
        fields = super().get_fields()
        for name, (provider, field) in platform_settings.all_fields().items():
            help_text = f"{provider.name} only: {field.help_text or field.verbose_name}"
            if getattr(field, "model", None) is None:  # a field declared outside a model: read by the field itself
                fields[name] = serializers.ModelField(model_field=field, required=False, help_text=help_text)
                continue
            field_class, kwargs = self.build_standard_field(name, field)
            kwargs.pop("default", None)  # not given: the platform's default, and only for the study's platform
            fields[name] = field_class(**{**kwargs, "required": False, "help_text": help_text})
        return fields


class CohortRowSerializer(serializers.Serializer):
    """A row of ``selectors.study_grid``."""

    id = serializers.IntegerField(source="cohort.pk")
    task = serializers.CharField()
    task_name = serializers.CharField()
    shots = serializers.IntegerField()
    target = serializers.IntegerField()
    enrolled = serializers.IntegerField(
        help_text="Enrollments holding a place (training, test step, completed; verified or not checked)."
    )
    training_finished = serializers.IntegerField()
    test_items_done = serializers.IntegerField()
    test_items_total = serializers.IntegerField()
    completed = serializers.IntegerField(help_text="Completed enrollments the results count.")
    unverified = serializers.IntegerField(
        help_text="Enrollments admitted unverified (the platform could not be asked): outside the places."
    )
    filtered = serializers.IntegerField()
    accepting = serializers.BooleanField()
    join_path = serializers.CharField()
    launched_at = serializers.DateTimeField(source="cohort.launched_at", allow_null=True)
    closed_at = serializers.DateTimeField(source="cohort.closed_at", allow_null=True)


class StudySerializer(serializers.ModelSerializer):
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = Study
        fields = ["id", *Study.parameters(), "created_by", "created_at", "closed_at", "is_open"]
        read_only_fields = fields


class StudyDetailSerializer(StudySerializer):
    platform_settings = serializers.SerializerMethodField(help_text="The study's settings of its crowd platform.")
    cohorts = serializers.SerializerMethodField()

    class Meta(StudySerializer.Meta):
        fields = [*StudySerializer.Meta.fields, "platform_settings", "cohorts"]
        read_only_fields = fields

    def get_platform_settings(self, study) -> dict:
        # As JSON spells them (a decimal as text, as the study's pay rate is).
        return json.loads(json.dumps(platform_settings.settings_of(study), cls=DjangoJSONEncoder))

    def get_cohorts(self, study) -> list[dict]:
        return CohortRowSerializer(selectors.study_grid(study), many=True).data


class EnrollmentRowSerializer(serializers.Serializer):
    """A row of ``selectors.cohort_enrollments`` / ``study_enrollments``."""

    id = serializers.IntegerField(source="enrollment.pk")
    cohort = serializers.IntegerField(source="enrollment.cohort_id")
    worker = serializers.CharField(help_text="The platform's worker id.")
    platform = serializers.CharField()
    task = serializers.CharField()
    shots = serializers.IntegerField()
    state = serializers.CharField()
    enrolled_at = serializers.DateTimeField()
    training_s1 = serializers.FloatField(allow_null=True, help_text="0-1")
    learning_curve = serializers.ListField(child=serializers.FloatField(), help_text="S1 of each training item.")
    training_done = serializers.IntegerField()
    test_done = serializers.IntegerField()
    test_total = serializers.IntegerField()
    active_seconds = serializers.FloatField(help_text="Idle gaps capped at the study's idle_cap_seconds.")
    pay = serializers.DecimalField(max_digits=9, decimal_places=2, help_text="In the pay currency: active time x rate.")
    test_s1 = serializers.FloatField(allow_null=True, help_text="0-1, completed enrollments only.")
    left_out = serializers.BooleanField(
        source="enrollment.left_out", help_text="Left out of every result by a researcher (audited)."
    )


class ReasonSerializer(serializers.Serializer):
    reason = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        max_length=AuditEvent.REASON_MAX_LENGTH,
        help_text="Kept in the audit log; required to filter or reinstate.",
    )


class LaunchSerializer(serializers.Serializer):
    # Ids the database can hold (a 64-bit key): a larger number is a bad request, never a query that fails.
    cohorts = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=2**63 - 1),
        max_length=1000,
        required=False,
        allow_null=True,
        default=None,
        help_text="Cohort ids to open; all of the study's when left out.",
    )


class AuditEventSerializer(serializers.ModelSerializer):
    worker = serializers.SerializerMethodField()

    class Meta:
        model = AuditEvent
        fields = ["id", "at", "actor", "action", "enrollment", "worker", "from_state", "to_state", "reason"]
        read_only_fields = fields

    def get_worker(self, event) -> str | None:
        return event.enrollment.worker.external_id if event.enrollment_id else None
