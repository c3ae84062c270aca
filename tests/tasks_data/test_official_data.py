"""The official CLUES release imported into PostgreSQL: Table 3 counts, chains, scores, idempotence.

Expectations are the facts measured on the release (shared/clues/README.md), not values read
back from the importer.
"""

import io
import re

import pytest
from django.core.management import call_command

from tasks_data.models import Example, Task, TrainingSet, TrainingSetItem
from tasks_data.registry import CLUES_TASKS
from tasks_data.s1 import percent
from tasks_data.scoring import example_s1, item_scores, score_mapping
from tasks_data.selectors import test_examples

pytestmark = pytest.mark.official_data

# Table 3 of the paper / the data README.
TEST_ITEMS = {"sst2": 210, "mnli": 210, "conll03": 600, "wikiann": 600, "squad2": 200, "record": 200}
ROWS_PER_SHOT = {"sst2": 1, "mnli": 1, "conll03": 3, "wikiann": 3, "squad2": 1, "record": 1}
SAME_SPLIT = {c: {10: c, 20: c, 30: c} for c in range(1, 6)}
CHAINS = {
    "sst2": SAME_SPLIT,
    "mnli": SAME_SPLIT,
    "conll03": SAME_SPLIT,
    "wikiann": SAME_SPLIT,
    # 10 -> 20 -> 30 split numbers
    "squad2": {
        1: {10: 1, 20: 5, 30: 5},
        2: {10: 2, 20: 3, 30: 1},
        3: {10: 3, 20: 1, 30: 2},
        4: {10: 4, 20: 4, 30: 4},
        5: {10: 5, 20: 2, 30: 3},
    },
    "record": {
        1: {10: 1, 20: 2, 30: 1},
        2: {10: 2, 20: 5, 30: 2},
        3: {10: 3, 20: 3, 30: 4},
        4: {10: 4, 20: 1, 30: 3},
        5: {10: 5, 20: 4, 30: 5},
    },
}
ALL_EMPTY_S1 = {"conll03": 51.3, "wikiann": 62.8, "squad2": 49.5}
GOLD_NOT_IN_CONTEXT = {"wikiann": (9, 5), "conll03": (0, 4)}  # (test rows, training examples)


def snapshot():
    """Every row of the data tables, pks included."""
    return {
        model.__name__: list(model.objects.order_by("pk").values())
        for model in (Task, Example, TrainingSet, TrainingSetItem)
    }


def gold_prediction(example: Example) -> list[str]:
    """A perfect answer: the gold set, or for MRC one alternative (none when unanswerable)."""
    if example.task.spec.answer_kind.gold_is_alternatives:
        return example.gold[:1]
    return list(example.gold)


def test_counts_match_table_3(clues_data):
    tasks = {t.slug: t for t in Task.objects.all()}
    assert sorted(tasks) == sorted(CLUES_TASKS)
    test_counts = {slug: test_examples(task).count() for slug, task in tasks.items()}
    assert test_counts == TEST_ITEMS
    rows = {(ts.task.slug, ts.shots, ts.split): ts.items.count() for ts in TrainingSet.objects.select_related("task")}
    expected = {
        (slug, k, s): k * ROWS_PER_SHOT[slug] for slug in CLUES_TASKS for k in (10, 20, 30) for s in range(1, 6)
    }
    assert rows == expected


def test_chains_read_back_from_training_sets(clues_data):
    found = {}
    for ts in TrainingSet.objects.select_related("task"):
        found.setdefault(ts.task.slug, {}).setdefault(ts.chain, {})[ts.shots] = ts.split
    assert found == CHAINS


def test_chains_really_nest(clues_data):
    """Each chain's 10-shot examples lie in its 20-shot file, those in its 30-shot file; 30s are disjoint."""
    for task in Task.objects.all():
        members = {}
        for ts in TrainingSet.objects.filter(task=task):
            members[(ts.chain, ts.shots)] = set(ts.items.values_list("example_id", flat=True))
        for chain in range(1, 6):
            assert members[(chain, 10)] < members[(chain, 20)] < members[(chain, 30)], (task.slug, chain)
        thirties = [members[(chain, 30)] for chain in range(1, 6)]
        assert len(set().union(*thirties)) == sum(len(m) for m in thirties), task.slug


def test_training_examples_stored_once(clues_data):
    """An example in several training files is one Example row: 30 x 5 per task (NER: 90 x 5)."""
    distinct = {t.slug: Example.objects.filter(task=t, role=Example.Role.TRAIN).count() for t in Task.objects.all()}
    assert distinct == {slug: 30 * ROWS_PER_SHOT[slug] * 5 for slug in CLUES_TASKS}
    # Every training example is used, and by more than one file (10 in 20 in 30).
    used = TrainingSetItem.objects.values_list("example_id", flat=True)
    train_ids = set(Example.objects.filter(role=Example.Role.TRAIN).values_list("pk", flat=True))
    assert set(used) == train_ids
    assert TrainingSetItem.objects.count() == sum(60 * ROWS_PER_SHOT[s] * 5 for s in CLUES_TASKS)


def test_quirks_normalised(clues_data):
    ner = Example.objects.filter(task__slug="conll03", role=Example.Role.TEST)
    assert ner.filter(gold=[]).exists(), 'NER [""] must become the empty set'
    assert not any("" in e.gold for e in ner)
    squad = Example.objects.filter(task__slug="squad2", role=Example.Role.TEST)
    assert squad.filter(gold=[]).count() == 99
    assert all(len(set(e.gold)) == len(e.gold) for e in squad)
    assert all(1 <= len(e.gold) <= 5 for e in squad.exclude(gold=[]))
    mnli = Example.objects.filter(task__slug="mnli", role=Example.Role.TEST)
    assert all(e.hypothesis and e.context for e in mnli)
    assert {e.gold[0] for e in mnli} == {"entailment", "neutral", "contradiction"}
    record = Example.objects.filter(task__slug="record", role=Example.Role.TEST)
    for e in record:  # every answer is one of the candidates, stored end-exclusive
        assert len(e.gold) == 1
        assert e.gold[0] in {e.context[s:t] for s, t in e.candidates}


@pytest.mark.parametrize("empty", [[], [""]], ids=["[]", '[""]'])
def test_all_empty_predictor(clues_data, empty):
    """Footnote 6 of the paper: predicting nothing scores 51.3 / 62.8 on the NER tasks."""
    scores = {}
    for slug in ALL_EMPTY_S1:
        task = Task.objects.get(slug=slug)
        result = score_mapping(task, {e.clues_id: empty for e in test_examples(task)})
        assert result.n == TEST_ITEMS[slug]
        scores[slug] = percent(result.s1)
    assert scores == ALL_EMPTY_S1


def test_gold_scores_100_on_every_clues_task(clues_data):
    scores = {}
    for task in Task.objects.all():
        examples = list(test_examples(task).select_related("task"))
        result = score_mapping(task, {e.clues_id: gold_prediction(e) for e in examples})
        scores[task.slug] = percent(result.s1)
        assert item_scores(task, examples, [gold_prediction(e) for e in examples]) == [1.0] * len(examples)
    assert scores == dict.fromkeys(CLUES_TASKS, 100.0)


def test_example_s1_uses_the_task_rule(clues_data):
    answerable = Example.objects.filter(task__slug="squad2", role=Example.Role.TEST).exclude(gold=[])
    several = next(e for e in answerable if len(e.gold) > 1)
    assert example_s1(several, [several.gold[-1]]) == 1.0  # any alternative is right
    ner = next(e for e in Example.objects.filter(task__slug="conll03", role=Example.Role.TEST) if len(e.gold) > 1)
    assert example_s1(ner, ner.gold[:1]) == pytest.approx(2 / (len(ner.gold) + 1))  # a set: partial credit


def test_gold_not_in_context_counts(clues_data):
    found = {t.spec.slug: t.gold_not_in_context for t in clues_data.tasks}
    assert {slug: found[slug] for slug in GOLD_NOT_IN_CONTEXT} == GOLD_NOT_IN_CONTEXT
    assert all(found[slug] == (0, 0) for slug in ("sst2", "mnli", "squad2", "record"))


def test_import_twice_changes_nothing(clues_data, clues_zip):
    from tasks_data.importer import import_release

    assert all(t.changed for t in clues_data.tasks)
    before = snapshot()
    second = import_release(clues_zip, source=clues_data.source)
    assert not second.changed
    assert [t.changed for t in second.tasks] == [False] * 6
    assert snapshot() == before


def test_import_command_table_and_second_run(db, clues_zip):
    out, err = io.StringIO(), io.StringIO()
    call_command("import_clues", str(clues_zip), stdout=out, stderr=err)
    lines = out.getvalue().rstrip("\n").splitlines()
    assert lines[0] == f"Loaded CLUES release {clues_zip.name}."
    assert lines[-1] == "Imported 6 task(s)."
    table = {}
    for line in lines[3:-1]:  # after the header and its rule
        name = line.split()[0]
        match = re.search(r"(\d+)/(\d+)/(\d+): (\d+)/(\d+)/(\d+)\s+(\d+)\s", line)
        assert match, line
        table[name] = tuple(int(g) for g in match.groups())
    assert table == {
        CLUES_TASKS[slug].name: (10, 20, 30, *(k * ROWS_PER_SHOT[slug] for k in (10, 20, 30)), TEST_ITEMS[slug])
        for slug in CLUES_TASKS
    }
    assert "1->5->5 2->3->1 3->1->2 4->4->4 5->2->3" in out.getvalue()
    assert "1->2->1 2->5->2 3->3->4 4->1->3 5->4->5" in out.getvalue()
    assert (
        "WikiANN: gold answers not found in their context in 9 test row(s) and 5 training example(s)" in err.getvalue()
    )
    assert (
        "CoNLL03: gold answers not found in their context in 0 test row(s) and 4 training example(s)" in err.getvalue()
    )

    before = snapshot()
    out2 = io.StringIO()
    call_command("import_clues", str(clues_zip), stdout=out2, stderr=io.StringIO())
    assert out2.getvalue().rstrip("\n").splitlines()[-1] == "Nothing changed: the data was already imported."
    assert out2.getvalue().count("unchanged") == 6
    assert snapshot() == before


def test_import_from_settings_clues_data(db, clues_zip, settings):
    """Without PATH, import_clues takes $CLUES_DATA (settings.CLUES_DATA)."""
    settings.CLUES_DATA = str(clues_zip)
    out = io.StringIO()
    call_command("import_clues", stdout=out, stderr=io.StringIO())
    assert f"Loaded CLUES release {clues_zip.name}." in out.getvalue()
    assert Example.objects.filter(role=Example.Role.TEST).count() == sum(TEST_ITEMS.values())
