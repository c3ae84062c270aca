"""Read-only queries over the benchmark data."""

from __future__ import annotations

from django.db.models import Count, Q, QuerySet

from .models import Example, Task, TrainingSet, TrainingSetItem
from .registry import TaskSpec, task_name, task_order


def imported_specs(slug: str | None = None) -> list[TaskSpec]:
    """The registry's source (``registry.set_task_source``): the tasks of one's own, from their stored cards
    (1 query); one task with ``slug``, else all."""
    rows = Task.objects.exclude(card__isnull=True)
    if slug is not None:
        rows = rows.filter(slug=slug)
    return [task.spec for task in rows.only("slug", "card")]


def tasks_visible_to(user) -> QuerySet[Task]:
    """The tasks a person may see and use: the CLUES tasks (no card), and a task of one's own to its owner, the
    researchers it is shared with, and everyone once public; a superuser sees every task. Anyone else (a
    researcher who is none of these) is told nothing of it: a 404, as a task that does not exist."""
    tasks = Task.objects.all()
    if user is not None and user.is_authenticated and user.is_superuser:
        return tasks
    shown = Q(card__isnull=True) | Q(public=True)
    if user is not None and user.is_authenticated:
        mine = Task.objects.filter(Q(owner=user) | Q(shared_with=user)).values("pk")
        shown |= Q(pk__in=mine)
    return tasks.filter(shown)


def visible_slugs(user) -> set[str]:
    """The slugs of ``tasks_visible_to(user)`` (1 query)."""
    return set(tasks_visible_to(user).values_list("slug", flat=True))


def task_overview(user=None) -> list[dict]:
    """Each imported task ``user`` may see (``tasks_visible_to``) with its spec, test count and training-file sizes
    (two queries), in the registry's order."""
    visible = tasks_visible_to(user)
    tasks = (
        visible.select_related("owner")
        .prefetch_related("shared_with")
        .annotate(
            test_count=Count("examples", filter=Q(examples__role=Example.Role.TEST)),
            train_count=Count("examples", filter=Q(examples__role=Example.Role.TRAIN)),
        )
    )
    files: dict[int, dict[int, set]] = {}
    for task_id, shots, split in TrainingSet.objects.filter(task__in=visible).values_list("task_id", "shots", "split"):
        files.setdefault(task_id, {}).setdefault(shots, set()).add(split)
    return [
        {
            "task": task,
            "spec": task.spec,
            "test_count": task.test_count,
            "train_count": task.train_count,
            "shots": sorted(files.get(task.pk, {})),
            "splits": max((len(s) for s in files.get(task.pk, {}).values()), default=0),
        }
        for task in sorted(tasks, key=lambda t: task_order(t.slug))
    ]


def test_examples(task: Task):
    """The task's test items in file order."""
    return Example.objects.filter(task=task, role=Example.Role.TEST).order_by("position")


# Not a test, despite its name: test modules that import it must not have pytest collect it.
test_examples.__test__ = False  # type: ignore[attr-defined]


def unproducible_training_counts(user=None) -> list[dict]:
    """Training items whose gold cannot be marked exactly, counted per task, chain and shots (1 query).

    ``[{"task": slug, "task_name", "chain", "shots", "n"}, ...]`` with n > 0 only, in registry,
    chain and shots order: for the study form (such items do not count in the training S1 used
    for filtering; see ``annotation.services.filtering.finish_training``); the tasks ``user`` may see.
    """
    rows = (
        TrainingSetItem.objects.filter(example__gold_unproducible=True, training_set__task__in=tasks_visible_to(user))
        .values_list("training_set__task__slug", "training_set__chain", "training_set__shots")
        .annotate(n=Count("pk"))
        .order_by()
    )
    return [
        {"task": slug, "task_name": task_name(slug), "chain": chain, "shots": shots, "n": n}
        for slug, chain, shots, n in sorted(rows, key=lambda r: (task_order(r[0]), r[1], r[2]))
    ]
