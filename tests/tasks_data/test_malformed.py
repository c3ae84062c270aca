"""Malformed releases are refused with an error naming file, line and field, and NOTHING is imported.

Each case breaks one thing in an otherwise valid six-task release written by ``synthetic`` (no
official data involved), and is run on an empty database and on one that already holds data.
"""

import io
import json
import re

import pytest
from django.core.management import CommandError, call_command

from tasks_data import importer
from tasks_data.importer import import_release
from tasks_data.models import Example, Task, TrainingSet, TrainingSetItem
from tasks_data.registry import CLUES_TASKS
from tests.tasks_data import synthetic
from tests.tasks_data.synthetic import read_rows, replace_line, write_rows


def snapshot():
    return {
        model.__name__: list(model.objects.order_by("pk").values())
        for model in (Task, Example, TrainingSet, TrainingSetItem)
    }


def set_field(name, number, **fields):
    def edit(release):
        rows = read_rows(release, name)
        rows[number - 1].update(fields)
        write_rows(release, name, rows)

    return edit


def drop_field(name, number, field):
    def edit(release):
        rows = read_rows(release, name)
        del rows[number - 1][field]
        write_rows(release, name, rows)

    return edit


def raw_line(name, number, text):
    return lambda release: replace_line(release, name, number, text)


def insert_blank_line(name, after):
    def edit(release):
        lines = (release / name).read_text(encoding="utf-8").splitlines()
        lines.insert(after, "")
        (release / name).write_text("\n".join(lines) + "\n", encoding="utf-8")

    return edit


def drop_row(name, number):
    def edit(release):
        rows = read_rows(release, name)
        del rows[number - 1]
        write_rows(release, name, rows)

    return edit


def replace_ten_shot_row(release):
    """A 10-shot row swapped for an example that no 20-shot file holds."""
    rows = read_rows(release, "SST-2/sst_train_10_1.jsonl")
    rows[4] = {**rows[4], "context": "an example that is in no other file "}
    write_rows(release, "SST-2/sst_train_10_1.jsonl", rows)


def leak_training_example(release):
    """Test line 2 becomes a copy (content, not id) of a training example."""
    train = read_rows(release, "MNLI/mnli_train_30_2.jsonl")[7]
    test = read_rows(release, "MNLI/mnli_test.jsonl")
    test[1] = {**train, "id": test[1]["id"]}
    write_rows(release, "MNLI/mnli_test.jsonl", test)


def extra_file(name, rows_from):
    def edit(release):
        (release / name).write_text((release / rows_from).read_text(encoding="utf-8"), encoding="utf-8")

    return edit


def record_entity_out_of_range(release):
    rows = read_rows(release, "ReCoRD/record_test.jsonl")
    rows[2]["entities"][1]["end"] = len(rows[2]["context"]) + 5
    write_rows(release, "ReCoRD/record_test.jsonl", rows)


def record_answer_not_a_candidate(release):
    rows = read_rows(release, "ReCoRD/record_train_20_1.jsonl")
    context = rows[5]["context"]
    word = "Monday"  # in the context, but not one of the entities
    rows[5]["answer"] = [{"text": word, "answer_start": context.index(word)}]
    write_rows(release, "ReCoRD/record_train_20_1.jsonl", rows)


def squad_answer_item(release, *, drop):
    rows = read_rows(release, "SQuAD-v2/squad-v2_test.jsonl")
    answerable = next(i for i, r in enumerate(rows) if r["answer"])
    del rows[answerable]["answer"][0][drop]
    write_rows(release, "SQuAD-v2/squad-v2_test.jsonl", rows)
    return answerable + 1


def squad_impossible(release, *, answerable):
    rows = read_rows(release, "SQuAD-v2/squad-v2_test.jsonl")
    i = next(i for i, r in enumerate(rows) if bool(r["answer"]) == answerable)
    rows[i]["is_impossible"] = answerable  # inconsistent with the answers
    write_rows(release, "SQuAD-v2/squad-v2_test.jsonl", rows)
    return i + 1


def repeated_test_id(release):
    rows = read_rows(release, "MNLI/mnli_test.jsonl")
    rows[3]["id"] = rows[0]["id"]
    write_rows(release, "MNLI/mnli_test.jsonl", rows)


# (case id, edit, expected error fragments: file, line, field, message)
CASES = [
    (
        "invalid JSON",
        raw_line("SST-2/sst_test.jsonl", 3, '{"id": 3, "question": '),
        ["SST-2/sst_test.jsonl, line 3:", "not valid JSON"],
    ),
    (
        "not an object",
        raw_line("CoNLL2003/conll_test.jsonl", 4, '["a", "b"]'),
        ["CoNLL2003/conll_test.jsonl, line 4:", "expected a JSON object, got list"],
    ),
    *[
        (
            f"missing {field}",
            drop_field("WikiANN_EN/wikiann_train_10_2.jsonl", 6, field),
            [f"WikiANN_EN/wikiann_train_10_2.jsonl, line 6, field '{field}': missing"],
        )
        for field in ("id", "question", "context", "answer")
    ],
    (
        "MNLI context not a pair",
        set_field("MNLI/mnli_test.jsonl", 2, context="only a premise"),
        ["MNLI/mnli_test.jsonl, line 2, field 'context':", "[premise, hypothesis]"],
    ),
    (
        "MNLI context of three",
        set_field("MNLI/mnli_train_20_1.jsonl", 9, context=["a", "b", "c"]),
        ["MNLI/mnli_train_20_1.jsonl, line 9, field 'context':"],
    ),
    (
        "label not in the label set",
        set_field("SST-2/sst_train_30_2.jsonl", 11, answer=["neutral"]),
        ["SST-2/sst_train_30_2.jsonl, line 11, field 'answer':", "'neutral' is not a label of SST-2"],
    ),
    (
        "MNLI label misspelt as in the question",
        set_field("MNLI/mnli_test.jsonl", 5, answer=["contraction"]),
        ["MNLI/mnli_test.jsonl, line 5, field 'answer':", "'contraction' is not a label of MNLI"],
    ),
    (
        "NER answer not a list",
        set_field("CoNLL2003/conll_test.jsonl", 7, answer="Rome"),
        ["CoNLL2003/conll_test.jsonl, line 7, field 'answer':", "must be a list"],
    ),
    (
        "NER answer not strings",
        set_field("CoNLL2003/conll_test.jsonl", 8, answer=["Rome", 3]),
        ["CoNLL2003/conll_test.jsonl, line 8, field 'answer':", "list of strings"],
    ),
    (
        'NER "" mixed with names',
        set_field("WikiANN_EN/wikiann_test.jsonl", 1, answer=["", "Ann"]),
        ["WikiANN_EN/wikiann_test.jsonl, line 1, field 'answer':", 'only allowed alone, as [""]'],
    ),
    (
        "SQuAD item without text",
        lambda r: squad_answer_item(r, drop="text"),
        ["SQuAD-v2/squad-v2_test.jsonl, line 1, field 'answer':", "item 0 must be"],
    ),
    (
        "SQuAD item without answer_start",
        lambda r: squad_answer_item(r, drop="answer_start"),
        ["SQuAD-v2/squad-v2_test.jsonl, line 1, field 'answer':", "item 0 must be"],
    ),
    (
        "is_impossible true with answers",
        lambda r: squad_impossible(r, answerable=True),
        ["SQuAD-v2/squad-v2_test.jsonl, line 1, field 'answer':", "is_impossible is true but answers are given"],
    ),
    (
        "is_impossible false without answers",
        lambda r: squad_impossible(r, answerable=False),
        ["SQuAD-v2/squad-v2_test.jsonl, line 3, field 'answer':", "is_impossible is false but no answer"],
    ),
    (
        "is_impossible missing",
        drop_field("SQuAD-v2/squad-v2_train_30_1.jsonl", 2, "is_impossible"),
        ["SQuAD-v2/squad-v2_train_30_1.jsonl, line 2, field 'is_impossible':"],
    ),
    (
        "ReCoRD entity out of range",
        record_entity_out_of_range,
        ["ReCoRD/record_test.jsonl, line 3, field 'entities':", "lies outside the context"],
    ),
    (
        "ReCoRD answer not a candidate",
        record_answer_not_a_candidate,
        ["ReCoRD/record_train_20_1.jsonl, line 6, field 'answer':", "'Monday' is not one of the candidate entities"],
    ),
    (
        "blank line",
        insert_blank_line("SST-2/sst_train_20_2.jsonl", 4),
        ["SST-2/sst_train_20_2.jsonl, line 5:", "blank line"],
    ),
    (
        "blank last line",
        lambda r: (r / "SST-2/sst_test.jsonl").write_text((r / "SST-2/sst_test.jsonl").read_text() + "\n"),
        [f"SST-2/sst_test.jsonl, line {synthetic.test_rows('sst2') + 1}:", "blank line"],
    ),
    (
        "wrong row count",
        drop_row("SST-2/sst_train_20_1.jsonl", 13),
        ["SST-2/sst_train_20_1.jsonl: 19 rows, expected 20"],
    ),
    (
        "wrong NER row count",
        drop_row("CoNLL2003/conll_train_10_2.jsonl", 1),
        ["CoNLL2003/conll_train_10_2.jsonl: 29 rows, expected 30 (10 shots x 3 questions)"],
    ),
    (
        "10-shot file in no 20-shot file",
        replace_ten_shot_row,
        ["SST-2/sst_train_10_1.jsonl: its examples lie in no 20-shot file"],
    ),
    (
        "training example leaked into the test file",
        leak_training_example,
        ["MNLI/mnli_train_30_2.jsonl, line 8: the same example is line 2 of mnli_test.jsonl"],
    ),
    (
        "unexpected file name",
        extra_file("SST-2/sst_dev.jsonl", "SST-2/sst_test.jsonl"),
        ["SST-2/sst_dev.jsonl: unexpected file"],
    ),
    (
        "unexpected shots",
        extra_file("SST-2/sst_train_15_1.jsonl", "SST-2/sst_train_10_1.jsonl"),
        ["SST-2/sst_train_15_1.jsonl: 15 shots is not one of (10, 20, 30)"],
    ),
    (
        "unexpected folder",
        lambda r: ((r / "QNLI").mkdir(), extra_file("QNLI/qnli_test.jsonl", "SST-2/sst_test.jsonl")(r)),
        ["QNLI/: no CLUES task uses this folder (a task of your own: manage.py import_task)"],
    ),
    ("repeated test id", repeated_test_id, ["MNLI/mnli_test.jsonl, line 4, field 'id':", "repeats the id of line 1"]),
]


@pytest.fixture(params=["empty db", "db with data"])
def existing(request, db, tmp_path):
    """The database before the import: empty, or holding a different valid release."""
    if request.param == "db with data":
        report = import_release(synthetic.write_release(tmp_path / "old", tag="old"), source="old")
        assert Task.objects.count() == 6 and all(t.changed for t in report.tasks)
    return snapshot()


@pytest.mark.parametrize("edit,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_malformed_release_refused(existing, tmp_path, edit, expected):
    release = synthetic.write_release(tmp_path / "new", tag="new")
    edit(release)
    with pytest.raises(importer.CluesImportError) as caught:
        import_release(release, source="new")
    errors = caught.value.errors
    assert len(errors) == 1, errors
    for fragment in expected:
        assert fragment in errors[0]
    assert snapshot() == existing


def test_several_problems_reported_together(db, tmp_path):
    release = synthetic.write_release(tmp_path, tag="x")
    raw_line("SST-2/sst_test.jsonl", 2, "nope")(release)
    set_field("MNLI/mnli_test.jsonl", 1, answer=["maybe"])(release)
    drop_row("ReCoRD/record_train_30_2.jsonl", 1)(release)
    with pytest.raises(importer.CluesImportError) as caught:
        import_release(release)
    assert [e.split(":")[0].split(",")[0] for e in caught.value.errors] == [
        "SST-2/sst_test.jsonl",
        "MNLI/mnli_test.jsonl",
        "ReCoRD/record_train_30_2.jsonl",
    ]
    assert snapshot() == {"Task": [], "Example": [], "TrainingSet": [], "TrainingSetItem": []}


def test_import_command_refuses_with_every_problem(db, tmp_path):
    release = synthetic.write_release(tmp_path, tag="x")
    set_field("SST-2/sst_test.jsonl", 2, answer=["neutral"])(release)
    with pytest.raises(CommandError) as caught:
        call_command("import_clues", str(release), stdout=io.StringIO(), stderr=io.StringIO())
    message = str(caught.value)
    assert message.startswith(f"1 problem(s) in {release}; nothing was imported:")
    assert "SST-2/sst_test.jsonl, line 2, field 'answer': 'neutral' is not a label of SST-2" in message
    assert not Task.objects.exists()


def test_not_a_release(db, tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    for path, fragment in [
        (tmp_path / "missing.zip", "no such file or folder"),
        (tmp_path / "notes.txt", "not a zip file"),
        (tmp_path, "no .jsonl files found"),
    ]:
        with pytest.raises(importer.CluesImportError, match=fragment):
            import_release(path)
    assert not Task.objects.exists()


@pytest.mark.parametrize("state", ["empty db", "db with data"])
def test_failure_during_the_write_leaves_nothing_half_written(db, tmp_path, monkeypatch, state):
    if state == "db with data":
        import_release(synthetic.write_release(tmp_path / "old", tag="old"), source="old")
    before = snapshot()
    real_write, calls = importer._write_task, []

    def failing_write(data, source):
        calls.append(data.spec.slug)
        if len(calls) == 3:
            raise RuntimeError("disk full")
        real_write(data, source)

    monkeypatch.setattr(importer, "_write_task", failing_write)
    with pytest.raises(RuntimeError, match="disk full"):
        import_release(synthetic.write_release(tmp_path / "new", tag="new"), source="new")
    assert calls == list(CLUES_TASKS)[:3]
    assert snapshot() == before


def test_synthetic_release_is_valid_and_reimport_replaces_it(db, tmp_path):
    """The base of the cases above imports cleanly; a changed release replaces the old rows."""
    report = import_release(synthetic.write_release(tmp_path / "a", tag="a"), source="a")
    assert {t.spec.slug: t.test for t in report.tasks} == {s: synthetic.test_rows(s) for s in CLUES_TASKS}
    chains = {}
    for ts in TrainingSet.objects.select_related("task"):
        chains.setdefault(ts.task.slug, {}).setdefault(ts.chain, {})[ts.shots] = ts.split
    assert chains == synthetic.CHAINS
    task_pks = dict(Task.objects.values_list("slug", "pk"))
    set_pks = set(TrainingSet.objects.values_list("pk", flat=True))

    second = import_release(synthetic.write_release(tmp_path / "b", tag="b"), source="b")
    assert all(t.changed for t in second.tasks)
    assert dict(Task.objects.values_list("slug", "pk")) == task_pks
    assert set(TrainingSet.objects.values_list("pk", flat=True)) == set_pks
    assert set(Task.objects.values_list("source", flat=True)) == {"b"}
    texts = [json.dumps(row) for row in Example.objects.values_list("context", "hypothesis", "question")]
    uid = r"{}(t|c[12]x)[0-9]+"  # synthetic's example ids: <tag><role><n>
    assert not [t for t in texts if re.search(uid.format("a"), t)]
    assert all(re.search(uid.format("b"), t) for t in texts)
    assert Example.objects.count() == sum(
        synthetic.test_rows(s) + 2 * 30 * CLUES_TASKS[s].train_rows_per_shot for s in CLUES_TASKS
    )
    assert TrainingSetItem.objects.count() == sum(2 * 60 * CLUES_TASKS[s].train_rows_per_shot for s in CLUES_TASKS)
