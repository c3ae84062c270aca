"""A task of one's own, imported from a folder or zip (``manage.py import_task``): every kind works, every problem
is named with its file, line and field, nothing is stored half-way, and a re-import never changes items a study
or a run uses."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from annotation import services
from tasks_data import registry, selectors
from tasks_data.card_import import import_task
from tasks_data.importer import CluesImportError
from tasks_data.models import Example, Task, TrainingSet
from tests.tasks_data.own_tasks import read_jsonl, write_jsonl, write_task, zip_task

pytestmark = pytest.mark.django_db
REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "reviews"


def _import(path, owner) -> str:
    out = io.StringIO()
    call_command("import_task", str(path), "--owner", owner.username, stdout=out)
    return out.getvalue()


def _problems(path, owner) -> list[str]:
    with pytest.raises(CluesImportError) as caught:
        import_task(path, owner=owner)
    return caught.value.errors


def test_the_example_task_imports_with_its_card_read_from_the_files(researcher):
    out = _import(EXAMPLE, researcher)
    assert "Imported reviews" in out and "launch_study --name reviews-pilot --tasks reviews --shots 0 4 8" in out
    task = Task.objects.get(slug="reviews")
    assert task.owner == researcher and task.card is not None and not task.public
    spec = task.spec
    assert (spec.name, spec.answer_kind.name, spec.labels) == ("Product reviews", "label", ("positive", "negative"))
    assert (spec.shots, spec.splits, spec.nested) == ((4, 8), (1, 2), True)
    assert spec.category is registry.Category.SENTENCE_CLASSIFICATION
    assert "**pleased**" in spec.description  # the instructions, as written (Markdown)
    # No seconds_per_item on the card: the test items' words at 250 a minute plus a label's answer time.
    words = [len(r["context"].split()) + len(spec.default_question.split()) for r in read_jsonl(EXAMPLE / "test.jsonl")]
    assert spec.seconds_per_item == round(sum(words) / len(words) * 60 / 250 + spec.answer_kind.answer_seconds)
    tests = list(Example.objects.filter(task=task, role=Example.Role.TEST).order_by("position"))
    assert [e.clues_id for e in tests] == [f"r-t{n:02}" for n in range(1, 11)]
    assert {e.question for e in tests} == {"Is this review positive or negative?"}  # the card's one question
    chains = {(ts.shots, ts.split): ts.chain for ts in TrainingSet.objects.filter(task=task)}
    assert chains == {(4, 1): 1, (8, 1): 1, (4, 2): 2, (8, 2): 2}
    assert "Nothing changed" in _import(EXAMPLE, researcher)


def test_every_task_reader_sees_the_imported_task_through_the_one_registry(researcher):
    import_task(EXAMPLE, owner=researcher)
    registry.set_task_source(selectors.imported_specs)  # another process: nothing of it in memory
    assert registry.find_task("reviews").name == "Product reviews"
    registry.set_task_source(selectors.imported_specs)
    assert list(registry.tasks())[:6] == list(registry.CLUES_TASKS) and "reviews" in registry.tasks()
    assert registry.task_name("reviews") == "Product reviews"
    Task.objects.filter(slug="reviews").delete()
    assert "reviews" not in registry.tasks()  # a listing reads the source afresh


@pytest.mark.parametrize("kind", ["label", "spans", "span_or_none", "entity"])
def test_a_task_of_every_kind_imports_from_a_zip_and_takes_a_study(kind, tmp_path, researcher):
    folder = write_task(tmp_path, slug=f"toy-{kind.replace('_', '-')}", kind=kind, shots=(3, 6))
    for top in (True, False):
        archive = zip_task(folder, tmp_path / f"toy-{top}.zip", top=top)
        result = import_task(archive, owner=researcher)
        assert result.spec.answer_kind.name == kind
        assert result.changed is top  # the same task either way
    task = Task.objects.get(slug=folder.name)
    assert task.examples.filter(role=Example.Role.TEST).count() == 6
    study = services.create_study(name="pilot", tasks=[task.slug], created_by=researcher)
    assert sorted(study.shots) == [0, 3, 6]  # the task's own sizes
    assert sorted(c.shots for c in study.cohorts.all()) == [0, 3, 6]


def test_a_bad_card_names_each_field_and_nothing_is_stored(tmp_path, researcher):
    folder = write_task(tmp_path, kind="spans")
    (folder / "task.toml").write_text(
        'slug = "Toy Task"\nname = ""\nkind = "spans"\nlabels = ["a", "b"]\ninstructions = "../etc/passwd"\n'
        'test = "missing.jsonl"\ntrain = "train_{shots}.jsonl"\nnested = "yes"\ncolour = "red"\n',
        encoding="utf-8",
    )
    errors = _problems(folder, researcher)
    fields = [e.split("field ")[1].split(":")[0] for e in errors]
    assert fields == ["'colour'", "'slug'", "'name'", "'labels'", "'instructions'", "'test'", "'train'", "'nested'"]
    assert all(e.startswith(f"{folder}/task.toml, field ") for e in errors)
    assert "not a field of a task card" in errors[0] and "has no label set" in errors[3]
    assert not Task.objects.exists()


@pytest.mark.parametrize(
    ("card", "field", "message"),
    [
        ('kind = "label"\n', "labels", "needs its labels"),
        ('slug = "sst2"\n', "slug", "is a CLUES task's"),
        ('kind = "yesno"\n', "kind", "not an answer kind (kinds: label, spans, span_or_none, entity)"),
        ('category = "poetry"\n', "category", "one of 'sentence classification'"),
        ("seconds_per_item = 0\n", "seconds_per_item", "above 0"),
        ('train = "train_{split}_{shots}_{shots}.jsonl"\n', "train", "names {shots} and {split} once each"),
        ('train = "training_{shots}_{split}.jsonl"\n', "train", "no training file has a name of this pattern"),
    ],
)
def test_each_card_field_is_checked(card, field, message, tmp_path, researcher):
    folder = write_task(tmp_path, kind="spans")
    lines = (folder / "task.toml").read_text().splitlines()
    key = card.split(" = ")[0]
    kept = [line for line in lines if not line.startswith(f"{key} =")]
    (folder / "task.toml").write_text("\n".join(kept) + "\n" + card, encoding="utf-8")
    errors = _problems(folder, researcher)
    assert any(f"field {field!r}" in e and message in e for e in errors), errors


def test_every_bad_line_is_named_with_its_file_and_line_and_nothing_is_stored(tmp_path, researcher):
    folder = write_task(tmp_path, kind="label")
    test = read_jsonl(folder / "test.jsonl")
    test[1]["answer"] = ["maybe"]  # not a label
    test[3]["context"] = 7
    write_jsonl(folder / "test.jsonl", test)
    with (folder / "test.jsonl").open("a") as f:
        f.write("{not json\n")
    train = read_jsonl(folder / "train_4_2.jsonl")
    del train[2]["id"]
    write_jsonl(folder / "train_4_2.jsonl", train)
    errors = _problems(folder, researcher)
    assert errors == [
        f"{folder}/test.jsonl, line 2, field 'answer': 'maybe' is not a label of Toy task (yes, no)",
        f"{folder}/test.jsonl, line 4, field 'context': must be a non-empty string",
        f"{folder}/test.jsonl, line 7: not valid JSON (Expecting property name enclosed in double quotes at column 2)",
        f"{folder}/train_4_2.jsonl, line 3, field 'id': missing",
    ]
    assert not Task.objects.exists() and not Example.objects.exists()


def test_the_data_of_ones_own_task_is_held_to_what_the_release_only_warns_about(tmp_path, researcher):
    """An answer outside its context, a repeated id in a training file, files that do not nest where the card
    says they do, a training example in the test set: each refused by name."""
    folder = write_task(tmp_path, kind="spans")
    test = read_jsonl(folder / "test.jsonl")
    test[0]["answer"] = ["Zora"]  # no Zora in the text
    write_jsonl(folder / "test.jsonl", test)
    train = read_jsonl(folder / "train_4_1.jsonl")
    train[3]["id"] = train[0]["id"]
    write_jsonl(folder / "train_4_1.jsonl", train)
    errors = _problems(folder, researcher)
    assert errors == [
        f"{folder}/test.jsonl, line 1, field 'answer': 'Zora' is not in the context",
        f"{folder}/train_4_1.jsonl, line 4, field 'id': 's1x1' repeats the id of line 1",
    ]
    write_jsonl(folder / "train_4_1.jsonl", [*train[:3], {**train[3], "id": "fresh"}])
    small = read_jsonl(folder / "train_2_2.jsonl")
    small[0]["context"] += " Elsewhere."  # no longer in the 4-shot file of its split
    write_jsonl(folder / "train_2_2.jsonl", small)
    write_jsonl(folder / "test.jsonl", [*test[1:], train[1]])
    in_test = "the same example is line 6 of test.jsonl; a training example must not be in the test set"
    assert _problems(folder, researcher) == [
        f"{folder}/train_2_1.jsonl, line 2: {in_test}",
        f"{folder}/train_4_1.jsonl, line 2: {in_test}",
        f"{folder}/train_2_2.jsonl: its examples lie in no 4-shot file",
    ]
    write_jsonl(folder / "test.jsonl", test[1:])
    # The same files, declared as not nested: each split its own chain.
    card = (folder / "task.toml").read_text().replace("nested = true", "nested = false")
    (folder / "task.toml").write_text(card)
    assert import_task(folder, owner=researcher).data.chains == [{2: 1, 4: 1}, {2: 2, 4: 2}]


def test_a_reimport_that_would_change_items_a_study_uses_is_refused_naming_the_study(tmp_path, researcher):
    folder = write_task(tmp_path, kind="label", shots=(2, 4))
    task = import_task(folder, owner=researcher).task
    before = list(Example.objects.filter(task=task).values_list("pk", "context", "gold").order_by("pk"))
    # Nothing uses the task yet: new data replaces the old.
    write_task(tmp_path, kind="label", shots=(2, 4), tag="v2 ")
    assert import_task(folder, owner=researcher).changed
    assert (
        Example.objects.filter(task=task, context__startswith="v2 ").count()
        == Example.objects.filter(task=task).count()
    )
    study = services.create_study(name="pilot", tasks=[task.slug], shots=[0, 2], chain=1, created_by=researcher)
    kept = list(Example.objects.filter(task=task).values_list("pk", "context", "gold").order_by("pk"))
    assert kept != before
    # A changed test item, or a changed training file of the study's chain: refused, nothing written.
    test = read_jsonl(folder / "test.jsonl")
    write_jsonl(
        folder / "test.jsonl", [{**test[0], "answer": ["no" if test[0]["answer"] == ["yes"] else "yes"]}, *test[1:]]
    )
    errors = _problems(folder, researcher)
    assert errors == [
        f"toy: the new data changes items that study 'pilot' (id {study.pk}) uses, which stay as they were "
        "answered; nothing was imported. To use the new data, import it as a new task beside this one (another "
        "slug in task.toml, e.g. toy-2)"
    ]
    write_jsonl(folder / "test.jsonl", test)
    chain1 = read_jsonl(folder / "train_2_1.jsonl")
    write_jsonl(folder / "train_2_1.jsonl", list(reversed(chain1)))
    assert len(_problems(folder, researcher)) == 1
    assert list(Example.objects.filter(task=task).values_list("pk", "context", "gold").order_by("pk")) == kept
    # A training file no cohort uses (the 4-shot file of chain 2), and the card's name: both may change.
    write_jsonl(folder / "train_2_1.jsonl", chain1)
    chain2 = read_jsonl(folder / "train_4_2.jsonl")
    write_jsonl(folder / "train_4_2.jsonl", [*chain2[:2], *reversed(chain2[2:])])
    card = (folder / "task.toml").read_text().replace('name = "Toy task"', 'name = "Toy task, renamed"')
    (folder / "task.toml").write_text(card)
    assert import_task(folder, owner=researcher).changed
    assert Task.objects.get(pk=task.pk).spec.name == "Toy task, renamed" == registry.task_name("toy")
    # A change of the label set would read every answer otherwise.
    (folder / "task.toml").write_text(card.replace('["yes", "no"]', '["yes", "no", "unsure"]'))
    assert "study 'pilot'" in _problems(folder, researcher)[0]


def test_another_researchers_slug_is_refused_and_their_task_untouched(tmp_path, researcher, other_researcher):
    import_task(write_task(tmp_path / "rita", kind="label"), owner=researcher)
    theirs = write_task(tmp_path / "oscar", kind="spans")
    assert _problems(theirs, other_researcher) == [
        f"{theirs}/task.toml, field 'slug': 'toy' is taken by another task; choose another slug"
    ]
    task = Task.objects.get(slug="toy")
    assert task.owner == researcher and task.spec.answer_kind.name == "label"


def test_the_command_refuses_without_an_owner_and_lists_every_problem(tmp_path, researcher, plain_user):
    with pytest.raises(CommandError, match="--owner: 'paula' is not a researcher"):
        call_command("import_task", str(EXAMPLE), "--owner", "paula")
    with pytest.raises(CommandError, match="the local researcher 'researcher' does not exist"):
        call_command("import_task", str(EXAMPLE))
    folder = write_task(tmp_path, kind="label")
    (folder / "test.jsonl").write_text("", encoding="utf-8")
    with pytest.raises(
        CommandError, match=r"1 problem\(s\) in .*; nothing was imported:\n  .*test.jsonl: the file is empty"
    ):
        call_command("import_task", str(folder), "--owner", "rita")


def test_a_large_or_strange_upload_is_refused_before_anything_is_read(tmp_path, researcher, monkeypatch):
    from tasks_data import cards

    (tmp_path / "notazip.zip").write_bytes(b"PK but not really")
    assert "not a zip file" in _problems(tmp_path / "notazip.zip", researcher)[0]
    folder = write_task(tmp_path, kind="label")
    archive = zip_task(folder, tmp_path / "toy.zip")
    monkeypatch.setattr(cards, "MAX_FOLDER_BYTES", 1000)
    assert "more than 0 MiB of files once unzipped" in _problems(archive, researcher)[0]
    two = tmp_path / "two.zip"
    import zipfile

    with zipfile.ZipFile(two, "w") as z:
        z.writestr("a/task.toml", "")
        z.writestr("b/task.toml", "")
    assert _problems(two, researcher) == [f"{two}: a zip needs exactly one task.toml (found: a/task.toml, b/task.toml)"]
    assert json.dumps(Task.objects.count()) == "0"


def test_a_task_of_ones_own_is_no_release_for_import_clues_to_keep(researcher, demo_path):
    """import_clues --demo refuses to replace CLUES data already imported; a task of one's own is not that."""
    import_task(EXAMPLE, owner=researcher)
    out = io.StringIO()
    call_command("import_clues", "--demo", stdout=out, stderr=io.StringIO())
    assert "Loaded demo data" in out.getvalue()
    assert Task.objects.filter(card__isnull=True).count() == 6 and Task.objects.get(slug="reviews").card


def test_a_card_imported_again_with_another_pace_sets_the_time_limits_where_the_old_one_is_remembered(
    tmp_path, researcher
):
    """Estimates and time limits follow the card as stored, not a process's memory of it: after another process
    imports the card again with a slower pace, a worker joining here gets the longer limit and the listing the new
    figures, though this process still holds the old card in its registry."""
    from annotation import estimates
    from tests.annotation.factories import cohort, join, make_study

    folder = write_task(tmp_path, slug="toy-pace", kind="label", shots=(3,))
    import_task(folder, owner=researcher)
    study = make_study(tasks=("toy-pace",), shots=(3,), created_by=researcher)
    before = estimates.cohort_estimate(cohort(study, "toy-pace", 3))
    first = join(cohort(study, "toy-pace", 3), "ann")
    assert first.timer_minutes == before.part(1).time_limit
    # What another process's import writes: the card with 5 minutes an item (the 9 items then need 45).
    card = Task.objects.get(slug="toy-pace").card
    Task.objects.filter(slug="toy-pace").update(card={**card, "seconds_per_item": 300})
    assert registry.find_task("toy-pace").seconds_per_item == card["seconds_per_item"] < 300  # the old card
    after = estimates.cohort_estimate(cohort(study, "toy-pace", 3))
    assert (after.task_seconds_per_item, after.part(1).listed_minutes) == (300, 45)
    assert after.part(1).time_limit > max(45, before.part(1).time_limit)
    assert join(cohort(study, "toy-pace", 3), "bob").timer_minutes == after.part(1).time_limit
