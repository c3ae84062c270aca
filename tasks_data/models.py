"""The benchmark's data: tasks, examples and the few-shot training sets.

What a task *is* (answer kind, labels, description) is its ``TaskSpec`` in ``tasks_data.registry``: a CLUES
task's is written there, a task of one's own is its card (``Task.card``, ``tasks_data.cards``), which this
app feeds to the registry. A Task row anchors the data imported for it, and says who may use it.
"""

from django.conf import settings
from django.db import models

from . import registry
from .cards import spec_from_card
from .registry import TaskSpec, get_task


class Task(models.Model):
    slug = models.SlugField(unique=True)
    source = models.CharField(max_length=200, help_text="Where the data came from (demo data or the CLUES release).")
    fingerprint = models.CharField(max_length=64, help_text="sha256 of the imported data; equal means unchanged.")
    imported_at = models.DateTimeField(auto_now=True)
    # A task of one's own (manage.py import_task, the dashboard's upload): its card, as tasks_data.cards reads it.
    # None for the CLUES tasks, which the registry holds and every researcher uses.
    card = models.JSONField(null=True, blank=True, editable=False, help_text="The task card (a task of one's own).")
    # Who may use a task of one's own: its owner, the researchers it is shared with, everyone once an operator
    # makes it public. PROTECT: a researcher's tasks go (or change hands) before the account does.
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="tasks"
    )
    shared_with = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="shared_tasks")
    public = models.BooleanField(
        default=False, db_default=False, help_text="Every researcher may use it (set by an operator)."
    )

    class Meta:
        ordering = ["id"]

    def __str__(self):
        return self.spec.name

    @property
    def spec(self) -> TaskSpec:
        if self.card is None:
            return get_task(self.slug)
        spec = spec_from_card(self.card)
        registry.refresh_task(spec)  # this process's look-ups by slug follow the card as stored
        return spec


class Example(models.Model):
    class Role(models.TextChoices):
        TRAIN = "train", "training"
        TEST = "test", "test"

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="examples")
    role = models.CharField(max_length=5, choices=Role.choices)
    # Identity by content: CLUES ids collide between files. Test items are lines of the test
    # file (it repeats a few CoNLL03 sentences under different ids), so theirs includes the id.
    identity = models.CharField(max_length=64)
    clues_id = models.CharField(max_length=100, help_text="The id as given in the CLUES file.")
    clues_id_is_number = models.BooleanField(
        default=False, help_text="Test items: the file writes the id as a JSON number (SST-2), and exports do too."
    )
    position = models.PositiveIntegerField(help_text="Line number in the test file; first file seen for training.")
    context = models.TextField(help_text="The context; for MNLI the premise.")
    hypothesis = models.TextField(blank=True, help_text="MNLI only.")
    question = models.TextField()
    gold = models.JSONField(help_text="Gold answer set; for MRC the distinct alternatives. [] is the empty set.")
    genre = models.CharField(max_length=40, blank=True, help_text="MNLI only.")
    is_impossible = models.BooleanField(null=True, blank=True, help_text="SQuADv2 and ReCoRD.")
    candidates = models.JSONField(default=list, blank=True, help_text="ReCoRD: [[start, end), ...] end exclusive.")
    # The data's quirks (apostrophes dropped, two names merged: "MOODY S"): no answer marked in the
    # context can reach S1 1. Set at import (importer.gold_unproducible); a training item flagged so
    # is left out of the training S1 that filters workers.
    gold_unproducible = models.BooleanField(
        default=False,
        help_text="A gold string cannot be found in the context (MRC: no alternative can): full credit is impossible.",
    )
    answer_starts = models.JSONField(
        default=list, blank=True, help_text="SQuADv2/ReCoRD: the given answer_start of each gold alternative."
    )

    class Meta:
        ordering = ["task", "role", "position"]
        constraints = [models.UniqueConstraint(fields=["task", "identity"], name="example_unique_content")]
        # In the order the worker's item query reads the test step (``LIMIT 1 OFFSET n`` by position, then id:
        # annotation.services.answering.item_order): an index scan that stops at the item, no sort of the step.
        indexes = [models.Index(fields=["task", "role", "position", "id"], name="example_item_order")]

    def __str__(self):
        return f"{self.task_id}:{self.role}:{self.clues_id}"

    @property
    def gold_is_alternatives(self) -> bool:
        return self.task.spec.answer_kind.gold_is_alternatives


class TrainingSet(models.Model):
    """One CLUES training file: K shots of split s; chains nest 10 in 20 in 30."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="training_sets")
    shots = models.PositiveSmallIntegerField()
    split = models.PositiveSmallIntegerField(help_text="The file's split number, 1-5.")
    chain = models.PositiveSmallIntegerField(
        help_text="The chain (10 in 20 in 30) this file belongs to, named by its 10-shot file's split."
    )
    examples = models.ManyToManyField(Example, through="TrainingSetItem", related_name="training_sets")

    class Meta:
        ordering = ["task", "chain", "shots"]
        constraints = [
            models.UniqueConstraint(fields=["task", "shots", "split"], name="trainingset_unique_file"),
            models.UniqueConstraint(fields=["task", "shots", "chain"], name="trainingset_unique_chain_link"),
        ]

    def __str__(self):
        return f"{self.task.spec.name} {self.shots}-shot split {self.split} (chain {self.chain})"


class TrainingSetItem(models.Model):
    training_set = models.ForeignKey(TrainingSet, on_delete=models.CASCADE, related_name="items")
    # RESTRICT, not PROTECT: an example stays while a training file lists it, yet deleting the whole
    # task (which cascades to both) works; PROTECT would refuse that too.
    example = models.ForeignKey(Example, on_delete=models.RESTRICT, related_name="+")
    position = models.PositiveSmallIntegerField(help_text="0-based row in the training file: the order workers see.")

    class Meta:
        ordering = ["training_set", "position"]
        constraints = [
            models.UniqueConstraint(fields=["training_set", "position"], name="trainingsetitem_unique_position"),
            models.UniqueConstraint(fields=["training_set", "example"], name="trainingsetitem_unique_example"),
        ]
