"""Deleting data: a whole task can go; an example a training file lists cannot go alone."""

import pytest
from django.db.models import RestrictedError

from tasks_data.importer import import_release
from tasks_data.models import Example, Task, TrainingSet, TrainingSetItem
from tests.tasks_data import synthetic


@pytest.fixture
def two_tasks(db, tmp_path):
    import_release(synthetic.write_release(tmp_path, slugs=["sst2", "conll03"]), source="synthetic")


def test_deleting_a_task_deletes_its_data(two_tasks):
    kept = Task.objects.get(slug="conll03")
    counts = (
        Example.objects.filter(task=kept).count(),
        TrainingSet.objects.filter(task=kept).count(),
        TrainingSetItem.objects.filter(training_set__task=kept).count(),
    )
    Task.objects.get(slug="sst2").delete()
    assert list(Task.objects.values_list("slug", flat=True)) == ["conll03"]
    assert (Example.objects.count(), TrainingSet.objects.count(), TrainingSetItem.objects.count()) == counts


def test_an_example_in_a_training_file_cannot_be_deleted_alone(two_tasks):
    example = TrainingSetItem.objects.select_related("example").first().example
    with pytest.raises(RestrictedError):
        example.delete()
    assert Example.objects.filter(pk=example.pk).exists()
    test_item = Example.objects.filter(role=Example.Role.TEST).first()
    test_item.delete()  # nothing refers to it
    assert not Example.objects.filter(pk=test_item.pk).exists()
