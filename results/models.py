"""What the results store: each cohort's scores (``StoredScores``), and what the model set computes for a study
and the web app only reads: fits stored once per cohort (``CohortFit``).

The joint ability scale (an item-response model over the cohort's annotators and the model runs on the same
items) and the crowd's aggregated answers (crowd-kit) need libraries that the web app does not install
(``requirements/baselines.txt``); ``manage.py fit_results`` computes them (``results.fits``) and stores
one row per cohort and method, with what it was computed from (``basis``), so that a page tells a fit of
older results from a current one.
"""

from django.db import models

from annotation.models import Cohort


class CohortFit(models.Model):
    class Kind(models.TextChoices):
        ABILITY = "ability", "joint ability scale (item response theory)"
        AGGREGATE = "aggregate", "aggregated answers (crowd-kit)"

    cohort = models.ForeignKey(Cohort, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    method = models.CharField(max_length=60, help_text='How it was fitted, as the tables name it ("Dawid-Skene").')
    library = models.CharField(max_length=60, help_text='The library and its version ("crowd-kit 1.4.2").')
    basis = models.CharField(
        max_length=64, help_text="Fingerprint of what it was fitted on: the cohort's results (and the runs)."
    )
    result = models.JSONField(help_text="The fit, as results.fits writes it.")
    fitted_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["cohort", "kind", "method"], name="cohortfit_one_per_method"),
        ]

    def __str__(self):
        return f"{self.get_kind_display()} {self.method} of cohort {self.cohort_id}"


class StoredScores(models.Model):
    """A cohort's scores (``results.scores.CohortScores``) and its annotators' prediction files, stored so that
    no request scores answers that did not change, whatever the cache holds.

    ``changes`` counts the changes to what the cohort's results read (``annotation.results_changes``: bumped in
    the changing transaction); the scores are current while ``basis`` (``changes`` when they were computed)
    equals it, ``task_data`` is the task's data as imported now (a new import may change a gold answer or an
    item's place) and ``version`` is ``results.cache.VERSION``. Written only through ``results.scores``.
    """

    cohort = models.OneToOneField(Cohort, on_delete=models.CASCADE, primary_key=True, related_name="stored_scores")
    changes = models.PositiveBigIntegerField(default=0)
    basis = models.PositiveBigIntegerField(null=True, help_text="``changes`` when the scores were computed.")
    task_data = models.CharField(
        max_length=64,
        blank=True,
        help_text="The task's data (tasks_data.Task.fingerprint) the scores were computed on.",
    )
    version = models.PositiveIntegerField(default=0, help_text="results.cache.VERSION of the scores.")
    annotators = models.PositiveIntegerField(default=0, help_text="Annotators in results (0: no scores to read).")
    # Pickled (what the cache kept before: numpy arrays and dataclasses, read back exactly and fast); only
    # results.scores writes them, from the platform's own rows.
    scores = models.BinaryField(null=True)
    predictions = models.BinaryField(null=True)
    computed_at = models.DateTimeField(null=True)

    def __str__(self):
        return f"scores of cohort {self.cohort_id} ({'current' if self.basis == self.changes else 'stale'})"
