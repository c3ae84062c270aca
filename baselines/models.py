"""One row per baseline run: (task, method, model, shots, split, seed), stored once."""

from django.db import models

from tasks_data.models import Task


class BaselineRun(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        COMPLETED = "completed"
        FAILED = "failed"

    task = models.ForeignKey(Task, on_delete=models.PROTECT, related_name="baseline_runs")
    method = models.CharField(max_length=20)
    model = models.CharField(max_length=300, help_text="transformers name or local path; '' for reference predictors")
    shots = models.PositiveSmallIntegerField()
    split = models.PositiveSmallIntegerField()
    seed = models.IntegerField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    config = models.JSONField(default=dict, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    device = models.CharField(max_length=40, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    train_seconds = models.FloatField(null=True, blank=True)
    predict_seconds = models.FloatField(null=True, blank=True)
    examples_per_second = models.FloatField(null=True, blank=True, help_text="Training examples per second.")
    peak_gpu_memory_bytes = models.BigIntegerField(null=True, blank=True)
    s1 = models.FloatField(null=True, blank=True, help_text="S1 on the task's test set, 0-1.")
    # [{"id": CLUES test id, "prediction": [...]}, ...] in test-file order: re-scorable and exportable.
    predictions = models.JSONField(null=True, blank=True)
    item_scores = models.JSONField(null=True, blank=True, help_text="Per test item S1, in test-file order.")
    notes = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["task", "method", "model", "shots", "split", "seed"]
        constraints = [
            models.UniqueConstraint(fields=["task", "method", "model", "shots", "split", "seed"],
                                    name="baselinerun_unique_run"),
        ]

    def __str__(self):
        model = self.model or "-"
        return f"{self.task.slug} {self.method} {model} {self.shots}-shot split {self.split} seed {self.seed}"
