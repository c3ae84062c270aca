"""Training items whose gold cannot be produced from the context, on the official data.

Flagged at import (and by the migration for data imported before), counted per chain and shots
on the study form, announced on the worker's feedback page, and left out of the training S1
that filters workers.
"""

import importlib

import pytest
from django.apps import apps as django_apps
from django.contrib.auth.models import Group, User
from django.db.models import Count
from django.test import Client

from annotation import services
from annotation.models import Answer
from annotation.protocol import State
from tasks_data.models import Example
from tasks_data.selectors import unproducible_training_counts
from tests.annotation.factories import WorkerClient, cohort, gold_answer, join, make_study
from tests.conftest import imported_for_module

pytestmark = [pytest.mark.django_db, pytest.mark.official_data]

# Measured on the release (shared/clues/README.md: CoNLL2003 4 train rows, WikiANN_EN 5 train and 9 test rows).
FLAGGED = {("conll03", "train"): 4, ("wikiann", "train"): 5, ("wikiann", "test"): 9}
PER_CHAIN = [  # (task, chain, shots, items): NER chains keep their split number
    ("conll03", 1, 30, 1),
    ("conll03", 2, 10, 1),
    ("conll03", 2, 20, 1),
    ("conll03", 2, 30, 1),
    ("conll03", 3, 30, 1),
    ("conll03", 4, 10, 1),
    ("conll03", 4, 20, 1),
    ("conll03", 4, 30, 1),
    ("wikiann", 1, 20, 1),
    ("wikiann", 1, 30, 2),
    ("wikiann", 3, 30, 2),
    ("wikiann", 4, 20, 1),
    ("wikiann", 4, 30, 1),
]


@pytest.fixture(scope="module")
def official(clues_zip, django_db_setup, django_db_blocker):
    from tasks_data.importer import import_release

    with imported_for_module(django_db_blocker, lambda: import_release(clues_zip)) as report:
        yield report


def flagged() -> dict:
    counts: dict = {}
    for slug, role in Example.objects.filter(gold_unproducible=True).values_list("task__slug", "role"):
        counts[(slug, role)] = counts.get((slug, role), 0) + 1
    return counts


def test_flagged_at_import_as_the_data_readme_lists(official):
    assert flagged() == FLAGGED
    moody = Example.objects.get(task__slug="conll03", role="train", clues_id="7888_2")
    assert moody.gold == ["S&P", '"MOODY S"'] and '"MOODY S"' not in moody.context and moody.gold_unproducible
    report = {t.spec.slug: t.gold_not_in_context for t in official.tasks}
    assert report["conll03"] == (0, 4) and report["wikiann"] == (9, 5)  # what the importer already warned about


def number_ids() -> dict:
    return dict(Example.objects.filter(clues_id_is_number=True).values_list("task__slug").annotate(n=Count("pk")))


def test_migration_flags_rows_imported_before_the_fields(official):
    assert number_ids() == {"sst2": 210}  # the importer: SST-2 test ids are JSON numbers, no other task's
    migration = importlib.import_module("tasks_data.migrations.0003_i12_unproducible")
    Example.objects.update(gold_unproducible=False, clues_id_is_number=False)
    migration.flag(django_apps, None)
    assert flagged() == FLAGGED
    assert number_ids() == {"sst2": 210}


def test_counts_per_chain_and_shots_and_on_the_study_form(official):
    counts = unproducible_training_counts()
    assert [(r["task"], r["chain"], r["shots"], r["n"]) for r in counts] == PER_CHAIN
    researcher = User.objects.create_user("rita-u")
    researcher.groups.add(Group.objects.get_or_create(name="researchers")[0])
    client = Client()
    client.force_login(researcher)
    page = client.get("/dashboard/studies/new/").content.decode()
    assert 'data-role="unproducible"' in page
    assert "CoNLL03 chain 2, 10 shots: 1" in page and "WikiANN chain 1, 30 shots: 2" in page


def test_left_out_of_the_training_s1_that_filters(official):
    """CoNLL03 chain 2, 10 shots holds "MOODY S": a worker right on every other item is not filtered."""
    study = make_study(tasks=["conll03"], shots=[10], chain=2, filter_floor=1.0, filter_fraction=None)
    enrollment = join(cohort(study, "conll03", 10), "perfect")
    while (state := services.current_item(enrollment_id=enrollment.pk)).step == "training" and state.item is not None:
        services.submit_answer(enrollment_id=enrollment.pk, item=state.item_handle, answer=gold_answer(state.item))
    enrollment.refresh_from_db()
    answers = Answer.objects.filter(enrollment=enrollment, step=Answer.Step.TRAINING).select_related("example")
    unreachable = [a for a in answers if a.example.gold_unproducible]
    assert len(unreachable) == 1 and unreachable[0].s1 < 1.0  # stored and scored as it is
    assert enrollment.training_s1 == 1.0
    assert enrollment.state == State.TESTING
    # The same worker's mean over every item (what counted before) is below the floor.
    assert sum(a.s1 for a in answers) / len(answers) < 1.0


def test_feedback_page_says_the_gold_cannot_be_marked_exactly(official):
    study = make_study(tasks=["conll03"], shots=[10], chain=2, filter_floor=None, filter_fraction=None)
    worker = WorkerClient(cohort(study, "conll03", 10), "fb")
    seen = {True: 0, False: 0}
    while (current := worker.current().json())["step"] == "training":
        item = worker.example(current["item"]["id"])
        assert worker.answer(worker.handle(item), gold_answer(item)).status_code == 201
        page = worker.client.get("/work/").content.decode()
        assert ("cannot be marked exactly" in page) is item.gold_unproducible
        seen[item.gold_unproducible] += 1
    assert seen[True] == 1 and seen[False] == 29
