"""One row per baseline run: (task, method, model, backend, server, shots, split, seed), stored once; and the
answers of the inference servers it asked, kept so that a run started again asks nothing twice (its transcript).
"""

import json
import zlib

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
    backend = models.CharField(
        max_length=40, blank=True, default="", help_text="where the model ran (fewshot_models.backends.BACKENDS)"
    )
    # Part of the run's identity: the same model name on two servers is two models.
    server = models.CharField(
        max_length=300,
        blank=True,
        default="",
        help_text="base URL of the OpenAI-compatible server; '' when the model runs in process",
    )
    shots = models.PositiveSmallIntegerField()
    split = models.PositiveSmallIntegerField()
    seed = models.IntegerField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    config = models.JSONField(default=dict, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    # The process running it, or that ran it last ({"pid", "host", "started"}): a second runner names it when it
    # leaves a running run alone (baselines/runners.py).
    runner = models.JSONField(null=True, blank=True)
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
    # What the prompts actually held and how answers were read, so that a run is never shown for more than it was:
    # training examples per test item's prompt ({"min", "median", "max", "of": the training file's}; None where no
    # prompt holds them: a method that trains), and the scoring route ("log-likelihood", "generation", "chat"; ""
    # for a method with one way).
    demonstrations = models.JSONField(null=True, blank=True)
    scoring = models.CharField(max_length=40, blank=True)
    # What the servers were asked: requests (retries included), refused (as too long for the window), resumed
    # (answered from the kept responses), retries, prompt_tokens, completion_tokens, seconds, and
    # killed_attempt_requests (sent by earlier attempts that did not complete). None for a model run in process.
    usage = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["task", "method", "model", "shots", "split", "seed"]
        constraints = [
            models.UniqueConstraint(
                fields=["task", "method", "model", "backend", "server", "shots", "split", "seed"],
                name="baselinerun_unique_run_per_backend",
            ),
        ]

    def __str__(self):
        model = self.model or "-"
        where = f" at {self.server}" if self.server else (f" ({self.backend})" if self.backend else "")
        return f"{self.task.slug} {self.method} {model}{where} {self.shots}-shot split {self.split} seed {self.seed}"

    @property
    def fewer_demonstrations(self) -> bool:
        """Some test item's prompt held fewer training examples than the training file has (the model's window was
        too small for them all, or the run was told to hold fewer)."""
        held = self.demonstrations or {}
        return bool(held) and held["min"] < held["of"]

    @property
    def total_tokens(self) -> int | None:
        if not self.usage:
            return None
        return int(self.usage.get("prompt_tokens", 0)) + int(self.usage.get("completion_tokens", 0))


class BaselineResponse(models.Model):
    """One answered request of a run to an inference server: the request's hash, and what scoring needs of the
    answer with its token counts (``{"answer": ..., "usage": {...}}``), compressed. Never the request's text, nor a
    key, which travels in a header. Once per run and request."""

    run = models.ForeignKey(BaselineRun, on_delete=models.CASCADE, related_name="responses")
    key = models.CharField(max_length=64, help_text="sha256 of the request's URL and body")
    data = models.BinaryField(help_text="zlib-compressed JSON: what scoring needs of the answer, and its usage")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "id"]
        constraints = [models.UniqueConstraint(fields=["run", "key"], name="baselineresponse_once_per_run")]

    def __str__(self):
        return f"response {self.key[:12]} of run {self.run_id}"

    @staticmethod
    def pack(record: dict) -> bytes:
        return zlib.compress(json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode(), 9)

    @property
    def record(self) -> dict:
        return json.loads(zlib.decompress(bytes(self.data)))
