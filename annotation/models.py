"""Studies, cohorts, workers, enrollments, answers and the audit log (paper section 4).

Rules live in ``annotation.protocol`` (the enrollment state machine), ``annotation.answers``
(answer validation) and ``annotation.services`` (every operation); these models only hold
data and the constraints the database itself enforces.
"""

from __future__ import annotations

import secrets

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.serializers.json import DjangoJSONEncoder
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models

import crowd
from tasks_data.models import Example, Task, TrainingSet
from tasks_data.registry import SHOTS, SPLITS, find_task, unknown_tasks

RESEARCHERS_GROUP = "researchers"


def all_shot_conditions() -> list[int]:
    return list(Study.SHOT_CONDITIONS)


def _bounds(low, high) -> list:
    return [MinValueValidator(low), MaxValueValidator(high)]


# Codes go into URLs and forms (the crowd platform's completion link): letters and digits only.
code_validator = RegexValidator(r"^[A-Za-z0-9]+\Z", "use letters and digits only")


def new_join_token() -> str:
    return secrets.token_urlsafe(24)  # 192 random bits


class Study(models.Model):
    # The shot conditions of a cohort: 0 (the task description only) and the training-file sizes (the CLUES
    # tasks'; a task of one's own has its own sizes, ``TaskSpec.shots``).
    SHOT_CONDITIONS = (0, *SHOTS)

    class TestOrder(models.TextChoices):
        FILE = "file", "test-file order"
        SHUFFLE = "shuffle", "seeded shuffle per worker"

    # A study's parameters and their limits, defined here once: the editable fields (``parameters()``).
    # The dashboard form, the API's input serializer and launch_study's options are derived from them,
    # and full_clean() (field validators plus clean()) is what services.create_study enforces.
    MAX_WORKERS_PER_COHORT = 1000
    MAX_PAY_RATE = 1000  # USD per hour
    MAX_IDLE_CAP_SECONDS = 24 * 3600
    MAX_TIME_LIMIT_MINUTES = 30 * 24 * 60

    name = models.CharField(max_length=200, help_text="For you; workers do not see it.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+", editable=False
    )
    created_at = models.DateTimeField(auto_now_add=True)
    tasks = models.JSONField(help_text='Task slugs, e.g. ["sst2", "conll03"].')
    shots = models.JSONField(
        default=all_shot_conditions,
        help_text="Shot conditions: 0 and the tasks' training-file sizes (CLUES: 10, 20, 30).",
    )
    chain = models.PositiveSmallIntegerField(
        default=1,
        validators=_bounds(min(SPLITS), max(SPLITS)),
        help_text="Training files nest 10 in 20 in 30; a chain is named by its 10-shot split.",
    )
    workers_per_cohort = models.PositiveSmallIntegerField(
        default=3,
        validators=_bounds(1, MAX_WORKERS_PER_COHORT),
        help_text="Workers who must finish the test step in each cohort.",
    )
    pay_rate = models.DecimalField(
        max_digits=7,
        decimal_places=2,
        default=12,
        validators=_bounds(0, MAX_PAY_RATE),
        verbose_name="pay rate (per hour)",
        help_text="Per hour, in the pay currency.",
    )
    # A platform that pays in its account's currency refuses a mismatch when the study is published there.
    pay_currency = models.CharField(
        max_length=3,
        choices=[("USD", "USD"), ("GBP", "GBP")],
        default="USD",
        help_text="The currency of the pay rate (your recruitment platform account's currency).",
    )
    filter_floor = models.FloatField(
        null=True,
        blank=True,
        validators=_bounds(0, 1),
        verbose_name="filter: floor",
        help_text="Filter a worker whose training S1 (0-1) is below this. Empty: off.",
    )
    filter_fraction = models.FloatField(
        null=True,
        blank=True,
        default=0.5,
        validators=_bounds(0, 1),
        verbose_name="filter: fraction of the others' mean",
        help_text="Filter a worker below this fraction of the mean training S1 of the cohort's other workers. "
        "Empty: off.",
    )
    # The crowd platform's slug (crowd.PROVIDERS): every platform question goes to ``provider``, and the
    # platform's own settings are its (``provider.settings_fields``), kept by the provider.
    platform = models.CharField(
        max_length=10,
        choices=crowd.choices,
        default=crowd.DEFAULT,
        verbose_name="recruitment platform",
        help_text="Where the workers come from.",
    )
    worker_id_param = models.CharField(
        max_length=50,
        default="worker_id",
        verbose_name="worker-id parameter",
        help_text="Generic link only: the query parameter that carries the worker id.",
    )
    # The prefixes of the codes workers get: each part of each cohort has codes of its own, this prefix followed by
    # random characters (``annotation.codes``), so that no code tells another.
    completion_code = models.CharField(
        max_length=50,
        validators=[code_validator],
        help_text="The start of every completion code (each cohort and part adds random characters of its own). "
        "Empty: one is generated.",
    )
    screenout_code = models.CharField(
        max_length=50,
        validators=[code_validator],
        verbose_name="screen-out code",
        help_text="The start of every screen-out code (filtered workers, and a part ended before its end). "
        "Empty: generated.",
    )
    # Identity (crowd providers) and the time limit (rule 7).
    worker_id_pattern = models.CharField(
        max_length=200,
        blank=True,
        verbose_name="worker-id pattern",
        help_text="Generic link only: a regular expression the worker id must match.",
    )
    # The duration of a cohort is estimated from its items (``annotation.estimates``); this is the researcher's
    # own figure, an override compared with the estimate (a warning when far off).
    expected_minutes = models.PositiveIntegerField(
        null=True,
        blank=True,
        default=None,
        validators=_bounds(1, MAX_TIME_LIMIT_MINUTES),
        verbose_name="expected duration (minutes)",
        help_text="Empty: estimated per cohort from its items (recommended). A figure of yours overrides the "
        "estimate for the platform's reward and time limit.",
    )
    sitting_minutes = models.PositiveIntegerField(
        default=60,
        validators=_bounds(10, MAX_TIME_LIMIT_MINUTES),
        verbose_name="sitting cap (minutes)",
        help_text="A test step estimated longer than this is split into parts (sittings), each with its own "
        "start, time limit, code and pay.",
    )
    test_order = models.CharField(max_length=10, choices=TestOrder.choices, default=TestOrder.FILE)
    idle_cap_seconds = models.PositiveIntegerField(
        default=300,
        validators=_bounds(1, MAX_IDLE_CAP_SECONDS),
        verbose_name="idle cap (seconds)",
        help_text="A gap between answers counts at most this long for pay.",
    )
    time_limit_minutes = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=_bounds(1, MAX_TIME_LIMIT_MINUTES),
        verbose_name="time limit (minutes)",
        help_text="Minutes a part (sitting) may take before it ends. Empty: long enough for a slow worker (the 96th "
        "percentile of the time a part takes, from the task's figure, then from the cohort's measured times).",
    )
    closed_at = models.DateTimeField(null=True, blank=True, editable=False)
    # Set when the researcher writes the study's first attention check (AttentionCheck): the worker's
    # hot path reads it with the study and looks for checks only then. Off by default, as in the paper.
    has_attention_checks = models.BooleanField(default=False, editable=False)
    # The crowd platform's own settings for this study, where the provider keeps them with the study
    # (``crowd.CrowdProvider.load_settings``); a platform with an app of its own keeps them there.
    platform_settings = models.JSONField(default=dict, blank=True, editable=False, encoder=DjangoJSONEncoder)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "studies"

    def __str__(self):
        return self.name

    @classmethod
    def parameters(cls) -> tuple[str, ...]:
        """The names of the parameters a researcher sets, in the model's order: every editable field."""
        return tuple(f.name for f in cls._meta.concrete_fields if f.editable and not f.primary_key)

    @property
    def is_open(self) -> bool:
        return self.closed_at is None

    @property
    def provider(self) -> crowd.CrowdProvider:
        """The crowd platform this study recruits on (``crowd.PROVIDERS``)."""
        return crowd.get(self.platform)

    def clean(self):
        """The limits no single field can check: the task and shot lists, and two distinct codes."""
        errors: dict[str, list[str]] = {}
        tasks = self.tasks if isinstance(self.tasks, list) else []
        if not isinstance(self.tasks, list) or not all(isinstance(t, str) for t in tasks):
            errors.setdefault("tasks", []).append("a list of task slugs")
        elif not tasks:
            errors.setdefault("tasks", []).append("choose at least one task")
        unknown = [t for t in tasks if isinstance(t, str) and not find_task(t)]
        if unknown:
            errors.setdefault("tasks", []).append(unknown_tasks(unknown))
        conditions = self.shot_conditions()
        shots = self.shots if isinstance(self.shots, list) else None
        if shots is None or not all(isinstance(k, int) and not isinstance(k, bool) for k in shots):
            errors.setdefault("shots", []).append(f"a list of shot conditions among {conditions}")
        elif not shots:
            errors.setdefault("shots", []).append("choose at least one shot condition")
        else:
            bad = sorted({k for k in shots if k not in conditions})
            if bad:
                errors.setdefault("shots", []).append(f"shots must be among {conditions}, got {bad}")
        if self.completion_code and self.completion_code == self.screenout_code:
            errors.setdefault("screenout_code", []).append("must differ from the completion code")
        if errors:
            raise ValidationError(errors)

    def shot_conditions(self) -> tuple[int, ...]:
        """0 and the training-file sizes of the study's tasks (the CLUES tasks': 10, 20 and 30)."""
        specs = (
            [spec for t in self.tasks if isinstance(t, str) and (spec := find_task(t))]
            if isinstance(self.tasks, list)
            else []
        )
        return (0, *sorted({k for spec in specs for k in spec.shots} or SHOTS))


class Cohort(models.Model):
    """One (study, task, shots) cell; its target is N workers who finish the test step unfiltered."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="cohorts")
    task = models.ForeignKey(Task, on_delete=models.PROTECT, related_name="cohorts")
    shots = models.PositiveSmallIntegerField()
    training_set = models.ForeignKey(
        TrainingSet,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="cohorts",
        help_text="None for 0 shots.",
    )
    target = models.PositiveSmallIntegerField()
    join_token = models.CharField(max_length=64, unique=True, default=new_join_token, editable=False)
    launched_at = models.DateTimeField(null=True, blank=True)
    closed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["study", "task", "shots"]
        constraints = [
            models.UniqueConstraint(fields=["study", "task", "shots"], name="cohort_unique_cell"),
            models.CheckConstraint(
                condition=(
                    models.Q(shots=0, training_set__isnull=True) | models.Q(shots__gt=0, training_set__isnull=False)
                ),
                name="cohort_training_set_iff_shots",
            ),
        ]

    def __str__(self):
        return f"{self.study} / {self.task} / {self.shots}-shot"

    @property
    def join_path(self) -> str:
        return f"/join/{self.join_token}/"

    @property
    def is_accepting(self) -> bool:
        return self.launched_at is not None and self.closed_at is None and self.study.is_open


class PartCode(models.Model):
    """The codes of one part of a cohort's test step (part 1 for a cohort in one part): the completion code of a
    worker who finished it, and the screen-out code of one filtered in it or who stopped in it. Random after the
    study's prefixes (``annotation.codes``): no code can be worked out from another, a part's or a cohort's."""

    cohort = models.ForeignKey(Cohort, on_delete=models.CASCADE, related_name="part_codes")
    part = models.PositiveSmallIntegerField()
    completion_code = models.CharField(max_length=50)
    screenout_code = models.CharField(max_length=50)

    class Meta:
        ordering = ["cohort", "part"]
        constraints = [models.UniqueConstraint(fields=["cohort", "part"], name="part_code_once")]

    def __str__(self):
        return f"codes of part {self.part} of {self.cohort}"


class Worker(models.Model):
    """An identity on a recruitment platform (no password), or a local account."""

    platform = models.CharField(max_length=10, choices=crowd.choices)
    external_id = models.CharField(max_length=100)
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="worker"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["platform", "external_id"], name="worker_unique_identity")]

    def __str__(self):
        return f"{self.platform}:{self.external_id}"


class Enrollment(models.Model):
    class State(models.TextChoices):
        TRAINING = "training"
        TESTING = "testing"
        COMPLETED = "completed"
        # A part (sitting) of a test step in several parts is done; the worker comes back for the next one.
        BETWEEN = "between", "between parts"
        FILTERED = "filtered"
        WITHDRAWN = "withdrawn"
        EXPIRED = "expired"

    cohort = models.ForeignKey(Cohort, on_delete=models.PROTECT, related_name="enrollments")
    worker = models.ForeignKey(Worker, on_delete=models.PROTECT, related_name="enrollments")
    # Copied from the cohort so the database can enforce rule 1 (one cohort per task per worker, ever).
    task = models.ForeignKey(Task, on_delete=models.PROTECT, related_name="+")
    state = models.CharField(max_length=10, choices=State.choices)
    enrolled_at = models.DateTimeField(auto_now_add=True)
    training_finished_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    training_s1 = models.FloatField(null=True, blank=True, help_text="Mean training-item S1, 0-1.")
    order_seed = models.BigIntegerField(help_text="Seeds this worker's test order when the study shuffles.")
    current_served_at = models.DateTimeField(null=True, blank=True, help_text="When the current item was served.")
    # The part (sitting) the worker is in, or last finished while between parts.
    part = models.PositiveSmallIntegerField(default=1)
    # The clock of the part the worker is in (between parts: of their wait for the next one): when it started
    # (empty: at joining) and its minutes, set as the part starts from the cohort's estimate
    # (``annotation.estimates``), so that the worker's requests read no estimate.
    timer_started_at = models.DateTimeField(null=True, blank=True)
    timer_minutes = models.PositiveIntegerField(null=True, blank=True)
    # When the worker stopped in the middle of a part with answers in it (they chose to end it, or its time limit
    # passed: then the limit itself): they got the part's screen-out code and are paid for the time worked up to then;
    # their answers are kept.
    stopped_at = models.DateTimeField(null=True, blank=True)
    # When each later part started, {"2": ISO time, ...} (part 1 starts at joining): a part's time is paid from its
    # start, so the wait between parts is never work (``annotation.pay``).
    part_starts = models.JSONField(default=dict, blank=True, encoder=DjangoJSONEncoder)
    # What the recruitment platform sent on joining (its study and session ids, an assignment...), as its provider
    # read it from the join link (``crowd.Identity``).
    platform_session = models.CharField(max_length=200, blank=True)
    platform_data = models.JSONField(default=dict, blank=True)
    # "" (not checked), "verified" or "unverified": the crowd platform could not be asked at join, so the
    # enrollment stays out of every result until the platform's sync verifies it (the provider's ``verify_join``).
    # "superseded": an unverified enrollment withdrawn when the genuine holder of the same platform id
    # arrived with a session the platform confirmed; it is kept for the audit and no longer counts for rule 1.
    VERIFIED, UNVERIFIED, SUPERSEDED = "verified", "unverified", "superseded"
    verification = models.CharField(max_length=10, blank=True, default="")
    # Shown on the description page to workers whose platform cannot vouch for them again (generic link,
    # lab accounts): with it, a worker who lost their browser opens the join link again and continues.
    resume_code = models.CharField(max_length=16, blank=True, default="", editable=False)
    # Set by a researcher, with a reason in the audit log, once filtering is closed (the test step has started):
    # the worker finishes and is paid as any other, and no result counts them (annotation.selectors.in_results).
    left_out = models.BooleanField(default=False, help_text="Left out of every result by a researcher (audited).")

    # Not columns: the counts the worker's hot path loads with the enrollment (annotation/services/hot_sql.py).
    training_total: int
    test_total: int
    training_done: int
    test_done: int
    # (step, position, item or None past the end): the item at the worker's place in the step their state is in, in
    # the file's order, read with the counts (hot_sql.fetch, unlocked); None where the state is no step or the test
    # order is shuffled.
    place_read: tuple[str, int, Example | None] | None

    class Meta:
        ordering = ["cohort", "enrolled_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["worker", "task"],
                name="enrollment_one_cohort_per_task",
                condition=~models.Q(verification="superseded"),
            )
        ]

    def __str__(self):
        return f"{self.worker} in {self.cohort}"


class PartTiming(models.Model):
    """How long a worker took for one part of the test step (the training step counts in part 1), kept as the
    part ends: finished, or cut off by its time limit (then ``ended_at`` is the deadline: the worker needed at
    least that long). The measured time limits and estimates read these (``annotation.estimates``), and the
    results say per cohort how many workers were cut off by time."""

    enrollment = models.ForeignKey(Enrollment, on_delete=models.CASCADE, related_name="part_timings")
    part = models.PositiveSmallIntegerField()
    started_at = models.DateTimeField()
    ended_at = models.DateTimeField()
    items = models.PositiveIntegerField(help_text="The part's items (training, test and attention checks).")
    limit_minutes = models.PositiveIntegerField(help_text="The part's time limit for this worker.")
    cut_off = models.BooleanField(default=False, help_text="The time limit passed before the part was done.")

    class Meta:
        ordering = ["enrollment", "part"]
        constraints = [models.UniqueConstraint(fields=["enrollment", "part"], name="part_timing_once")]

    @property
    def seconds(self) -> float:
        return (self.ended_at - self.started_at).total_seconds()


class ImmutableAnswer(Exception):
    """Answers are final: rule 3 of the protocol."""


class Answer(models.Model):
    class Step(models.TextChoices):
        TRAINING = "training"
        TEST = "test"

    enrollment = models.ForeignKey(Enrollment, on_delete=models.PROTECT, related_name="answers")
    example = models.ForeignKey(Example, on_delete=models.PROTECT, related_name="+")
    step = models.CharField(max_length=8, choices=Step.choices)
    position = models.PositiveIntegerField(help_text="0-based index of the item in the worker's order for the step.")
    texts = models.JSONField(help_text="The answer as a set of strings ([] = 'none'), as S1 scores it.")
    spans = models.JSONField(null=True, blank=True, help_text="Character offsets [[start, end), ...] where spans.")
    s1 = models.FloatField(help_text="S1 of this answer against the gold, 0-1.")
    served_at = models.DateTimeField(null=True, blank=True)
    answered_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["enrollment", "step", "position"]
        constraints = [
            models.UniqueConstraint(fields=["enrollment", "example"], name="answer_once_per_item"),
            models.UniqueConstraint(fields=["enrollment", "step", "position"], name="answer_once_per_position"),
        ]

    def save(self, *args, **kwargs):
        if not self._state.adding:
            raise ImmutableAnswer("a submitted answer is final and cannot be changed")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise ImmutableAnswer("a submitted answer is final and cannot be deleted")


class AuditEvent(models.Model):
    """Every enrollment transition and researcher action: time, actor and reason."""

    REASON_MAX_LENGTH = 2000  # one limit for every reason field (form, API, withdraw)

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="audit_events")
    enrollment = models.ForeignKey(
        Enrollment, null=True, blank=True, on_delete=models.CASCADE, related_name="audit_events"
    )
    at = models.DateTimeField(auto_now_add=True)
    actor = models.CharField(max_length=150, help_text="'worker', 'system', or the researcher's username.")
    action = models.CharField(max_length=40)
    from_state = models.CharField(max_length=10, blank=True)
    to_state = models.CharField(max_length=10, blank=True)
    reason = models.TextField(blank=True)

    class Meta:
        ordering = ["at", "id"]


class AttentionCheck(models.Model):
    """An instructed-response item a researcher writes ("for this item choose negative"), optional per study.

    Shown in the test step of the study's cohorts of ``task``, before the test item at ``position``
    (0-based), as a normal item (``item_id`` is the id the worker sees). Its answers are stored apart
    (``AttentionAnswer``): no result, progress total or export counts them. A failure is shown to the
    researcher on the cohort page, never acted on automatically.
    """

    MAX_QUESTION = 500
    MAX_CONTEXT = 5000

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="attention_checks")
    task = models.ForeignKey(Task, on_delete=models.PROTECT, related_name="+")
    position = models.PositiveIntegerField(help_text="Shown before the test item at this 0-based position.")
    question = models.CharField(
        max_length=MAX_QUESTION, help_text="The instruction, e.g. 'For this item choose negative.'"
    )
    context = models.TextField(max_length=MAX_CONTEXT, help_text="The text shown, as an item's context.")
    expected = models.JSONField(help_text="The expected answer set ([] = none).")
    candidates = models.JSONField(default=list, blank=True, help_text="ReCoRD-like tasks: [[start, end), ...].")
    item_id = models.BigIntegerField(unique=True, help_text="The item id the worker sees.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study", "task", "position", "id"]

    def __str__(self):
        return f"attention check {self.pk} of {self.study} ({self.task_id}, before item {self.position})"


class AttentionAnswer(models.Model):
    """A worker's answer to an attention check, kept apart from test answers (``Answer``)."""

    enrollment = models.ForeignKey(Enrollment, on_delete=models.PROTECT, related_name="attention_answers")
    attention_check = models.ForeignKey(AttentionCheck, on_delete=models.PROTECT, related_name="answers")
    texts = models.JSONField()
    spans = models.JSONField(null=True, blank=True)
    passed = models.BooleanField()
    served_at = models.DateTimeField(null=True, blank=True)
    answered_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["enrollment", "attention_check"]
        constraints = [models.UniqueConstraint(fields=["enrollment", "attention_check"], name="attention_answer_once")]

    @property
    def example_id(self) -> int:
        """The item id answered (the worker knew it only by its handle, ``annotation.handles``)."""
        return self.attention_check.item_id
