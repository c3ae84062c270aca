"""Prolific records: a study's Prolific settings, a cohort's Prolific study and the places given back to it,
an enrollment's submission status, researchers' tokens, participant groups, the bonus ledger and webhooks."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from tasks_data.models import Task


class ProlificCredential(models.Model):
    """A researcher's Prolific API token, encrypted at rest (recruitment.tokens.store_token)."""

    owner = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="prolific_credential")
    token_encrypted = models.TextField()
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self):
        return f"Prolific token of {self.owner}"  # never the token


class ParticipantGroup(models.Model):
    """One Prolific participant group per task and token owner: who took any cohort of the task."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="+")
    prolific_id = models.CharField(max_length=64)

    class Meta:
        # (A group made with the environment's token has no owner; SQLite cannot make NULLs equal here.)
        constraints = [models.UniqueConstraint(fields=["owner", "task"], name="participant_group_per_task")]


class BonusPayment(models.Model):
    """The never-pay-twice ledger: one row per enrollment and part (1 for a cohort in one part), written before
    Prolific is called.

    planned -> set_up (Prolific's bulk bonus id stored) -> paying (committed before the pay
    call, with ``claimed_at``: a pay run is making the call) -> paid, or unknown (the call got no
    answer). An unknown row, or one left in ``paying`` past the pay call's longest wait (the run
    died in the call), is never paid again automatically: the researcher checks it on Prolific.
    """

    class State(models.TextChoices):
        PLANNED = "planned"
        SET_UP = "set_up"
        PAYING = "paying"
        PAID = "paid"
        UNKNOWN = "unknown"

    enrollment = models.ForeignKey("annotation.Enrollment", on_delete=models.PROTECT, related_name="bonuses")
    part = models.PositiveSmallIntegerField(default=1)
    amount = models.DecimalField(max_digits=8, decimal_places=2)
    active_seconds = models.FloatField()
    state = models.CharField(max_length=8, choices=State.choices, default=State.PLANNED)
    prolific_bulk_id = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    claimed_at = models.DateTimeField(null=True, blank=True, help_text="When a pay run started the pay call.")
    paid_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["enrollment", "part"], name="bonus_once_per_part")]


class ProlificStudy(models.Model):
    """A study's Prolific settings (the provider's ``settings_fields``: the study form, the API and
    launch_study show them for Prolific studies only). A Prolific study without a row has the defaults."""

    study = models.OneToOneField("annotation.Study", on_delete=models.CASCADE, related_name="prolific")
    manual_review = models.BooleanField(
        default=False,
        verbose_name="Prolific: review every submission by hand",
        help_text="Never approve Prolific submissions automatically.",
    )

    class Meta:
        verbose_name_plural = "Prolific studies"

    def __str__(self):
        return f"Prolific settings of {self.study}"


class ProlificCohort(models.Model):
    """A cohort's own study on Prolific (set on publishing), and how many places the cohort gave back to it.

    The give-back is idempotent from our side: Prolific's ``total_available_places`` is set to
    ``target + given_back`` (an absolute value, so a repeat after a crash changes nothing) and only
    when ``given_back`` grows: Prolific never takes places back, so neither does this row.
    """

    cohort = models.OneToOneField("annotation.Cohort", on_delete=models.CASCADE, related_name="prolific")
    prolific_study_id = models.CharField(max_length=64, blank=True, help_text="Empty: not published on Prolific.")
    given_back = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0, help_text="The last total_available_places Prolific accepted.")
    updated_at = models.DateTimeField(auto_now=True)


class ProlificPart(models.Model):
    """A part of a cohort on Prolific (part 1 of 1 for a cohort in one part): its own Prolific study (part 1's is the
    cohort's), the participant group of those who finished it (the next part's filter), and what its listing
    promised when it was published: the bonus base of its workers, whatever the estimate says later."""

    cohort = models.ForeignKey("annotation.Cohort", on_delete=models.CASCADE, related_name="prolific_parts")
    number = models.PositiveSmallIntegerField()
    prolific_study_id = models.CharField(max_length=64, blank=True)
    finishers_group = models.CharField(max_length=64, blank=True)
    # As published (the smallest unit of the study's pay currency, and the listed minutes); empty before.
    reward = models.PositiveIntegerField(null=True, blank=True)
    screenout_reward = models.PositiveIntegerField(null=True, blank=True)
    minutes = models.PositiveIntegerField(null=True, blank=True)
    # Prolific's maximum time for the part, as published (it cannot change there afterwards).
    maximum_minutes = models.PositiveIntegerField(null=True, blank=True)
    estimate_source = models.CharField(max_length=20, blank=True, help_text="What the minutes came from.")
    published_at = models.DateTimeField(null=True, blank=True)
    # Places given back to a later part's study (part 1's are the cohort's, ``ProlificCohort``), as there.
    given_back = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["cohort", "number"]
        constraints = [models.UniqueConstraint(fields=["cohort", "number"], name="prolific_part_once")]


class ProlificReview(models.Model):
    """A submission to one of a cohort's Prolific studies that the platform cannot approve: its participant has no
    enrollment here (a code shared, or guessed), or did not earn the code it carries. Kept for the researcher's list;
    the participant is asked once to return it (``return_requested_at``); its place is given back while it holds one."""

    cohort = models.ForeignKey("annotation.Cohort", on_delete=models.CASCADE, related_name="prolific_reviews")
    part = models.PositiveSmallIntegerField(default=1)
    submission_id = models.CharField(max_length=64, unique=True)
    participant_id = models.CharField(max_length=64)
    enrollment = models.ForeignKey(
        "annotation.Enrollment", null=True, blank=True, on_delete=models.SET_NULL, related_name="prolific_reviews"
    )
    status = models.CharField(max_length=20, blank=True)
    code = models.CharField(max_length=64, blank=True)
    reason = models.TextField()
    return_requested_at = models.DateTimeField(null=True, blank=True)
    seen_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["cohort", "part", "seen_at"]


class ProlificSubmission(models.Model):
    """The last status seen on Prolific (the sync, a webhook, an approval) of an enrollment's submission to the
    Prolific study of one part (1 for a cohort in one part)."""

    enrollment = models.ForeignKey(
        "annotation.Enrollment", on_delete=models.CASCADE, related_name="prolific_submissions"
    )
    part = models.PositiveSmallIntegerField(default=1)
    status = models.CharField(max_length=20, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["enrollment", "part"], name="prolific_submission_per_part")]


class WebhookSubscription(models.Model):
    """This platform's subscription to Prolific's submission status changes in a workspace (``recruitment.webhooks``).

    The workspace's secret signs every event; it is kept encrypted (``tokens.seal``) and never shown.
    """

    workspace_id = models.CharField(max_length=64)
    target_url = models.URLField(max_length=500)
    subscription_id = models.CharField(max_length=64)
    secret_encrypted = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["workspace_id", "target_url"], name="webhook_per_workspace")]

    def __str__(self):
        return f"Prolific webhook of workspace {self.workspace_id}"  # never the secret


class WebhookEvent(models.Model):
    """An event received from Prolific, by its ``X-Event-ID``: a redelivery is acknowledged and not acted on twice."""

    event_id = models.CharField(max_length=100, unique=True)
    received_at = models.DateTimeField(auto_now_add=True)
    event_type = models.CharField(max_length=50)
    status = models.CharField(max_length=20, blank=True)
