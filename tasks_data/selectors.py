"""Read-only queries over the benchmark data."""

from django.db.models import Count, Q

from .models import Example, Task, TrainingSet, TrainingSetItem
from .registry import task_name, task_order


def task_overview() -> list[dict]:
    """Each imported task with its spec, test count and training-file sizes (two queries)."""
    tasks = Task.objects.annotate(
        test_count=Count("examples", filter=Q(examples__role=Example.Role.TEST)),
        train_count=Count("examples", filter=Q(examples__role=Example.Role.TRAIN)),
    )
    files: dict[int, dict[int, set]] = {}
    for task_id, shots, split in TrainingSet.objects.values_list("task_id", "shots", "split"):
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
        for task in tasks
    ]


def test_examples(task: Task):
    """The task's test items in file order."""
    return Example.objects.filter(task=task, role=Example.Role.TEST).order_by("position")


# Not a test, despite its name: test modules that import it must not have pytest collect it.
test_examples.__test__ = False  # type: ignore[attr-defined]


def unproducible_training_counts() -> list[dict]:
    """Training items whose gold cannot be marked exactly, counted per task, chain and shots (1 query).

    ``[{"task": slug, "task_name", "chain", "shots", "n"}, ...]`` with n > 0 only, in registry,
    chain and shots order: for the study form (such items do not count in the training S1 used
    for filtering; see ``annotation.services.filtering.finish_training``).
    """
    rows = (
        TrainingSetItem.objects.filter(example__gold_unproducible=True)
        .values_list("training_set__task__slug", "training_set__chain", "training_set__shots")
        .annotate(n=Count("pk"))
        .order_by()
    )
    return [
        {"task": slug, "task_name": task_name(slug), "chain": chain, "shots": shots, "n": n}
        for slug, chain, shots, n in sorted(rows, key=lambda r: (task_order(r[0]), r[1], r[2]))
    ]
