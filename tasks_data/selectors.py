"""Read-only queries over the benchmark data."""

from django.db.models import Count, Q

from .models import Example, Task, TrainingSet


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
test_examples.__test__ = False
