"""The two readings of MRC gold and strict mode, against the official function.

``best``: the SQuAD convention (best single alternative); ``set``: the published answer list
as one gold set, the literal reading of eval/S1.py. Hand-made items with 1 to 5 alternatives.
"""

import json
import zipfile

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tasks_data.s1 import MRC_GOLD_NOTE, eval_s1, instance_s1, item_s1, percent
from tests.tasks_data.official_s1 import _s1_entry, eval_S1

# (published answers, prediction, best, set)
CASES = [
    (["Paris"], ["Paris"], 1.0, 1.0),
    (["Paris"], [], 0.0, 0.0),
    (["Paris"], ["France"], 0.0, 0.0),
    (["Paris", "the city of Paris"], ["Paris"], 1.0, 2 / 3),
    (["Paris", "the city of Paris"], ["the city"], 0.0, 0.0),
    (["a", "b", "c"], ["b"], 1.0, 0.5),
    (["a", "a", "b"], ["a"], 1.0, 2 / 3),  # SQuADv2 repeats alternatives: a set counts them once
    (["a", "b", "c", "d"], ["a", "b"], 2 / 3, 2 / 3),
    (["a", "b", "c", "d"], ["x"], 0.0, 0.0),
    (["a", "b", "c", "d", "e"], ["e"], 1.0, 1 / 3),
    (["a", "b", "c", "d", "e"], ["a", "b", "c", "d", "e"], 1 / 3, 1.0),
    ([], [], 1.0, 1.0),  # unanswerable, no answer
    ([], ["a"], 0.0, 0.0),
]


@pytest.mark.parametrize("gold,prediction,best,as_set", CASES)
def test_both_readings_by_hand(gold, prediction, best, as_set):
    assert item_s1(prediction, gold, alternatives=True) == pytest.approx(best)
    assert item_s1(prediction, gold, alternatives=True, mrc_gold="best") == pytest.approx(best)
    assert item_s1(prediction, gold, alternatives=True, mrc_gold="set") == pytest.approx(as_set)
    # The set reading is the official function applied to the published list.
    assert _s1_entry(prediction, gold) == pytest.approx(as_set)
    # The best reading is the official function applied to each alternative.
    assert max((_s1_entry(prediction, [g]) for g in gold), default=_s1_entry(prediction, [])) == pytest.approx(best)
    for strict in (False, True):
        assert item_s1(prediction, gold, alternatives=True, mrc_gold="set", strict=strict) == pytest.approx(as_set)
        assert item_s1(prediction, gold, alternatives=True, mrc_gold="best", strict=strict) == pytest.approx(best)


def test_corpus_readings_and_unknown_reading_refused():
    golds, predictions = [c[0] for c in CASES], [c[1] for c in CASES]
    assert eval_s1(predictions, golds, alternatives=True, mrc_gold="set") == pytest.approx(eval_S1(predictions, golds))
    assert eval_s1(predictions, golds, alternatives=True) == pytest.approx(sum(c[2] for c in CASES) / len(CASES))
    with pytest.raises(ValueError, match="mrc_gold must be one of best, set"):
        item_s1(["a"], ["a"], alternatives=True, mrc_gold="any")
    assert set(MRC_GOLD_NOTE) == {"best", "set"}


strings = st.lists(st.text(alphabet="ab \t", max_size=3), max_size=5)


@given(strings, strings)
def test_strict_is_the_official_entry_exactly(prediction, gold):
    assert instance_s1(prediction, gold, strict=True) == _s1_entry(prediction, gold)
    assert item_s1(prediction, gold, alternatives=False, strict=True) == _s1_entry(prediction, gold)
    assert item_s1(prediction, gold, alternatives=True, mrc_gold="set", strict=True) == _s1_entry(prediction, gold)


def test_strict_differs_where_the_default_normalises():
    assert instance_s1([" Paris"], ["Paris"]) == 1.0
    assert instance_s1([" Paris"], ["Paris"], strict=True) == 0.0
    assert instance_s1([], [""]) == 1.0
    assert instance_s1([], [""], strict=True) == 0.0
    assert instance_s1([""], [""], strict=True) == 1.0


@pytest.mark.official_data
def test_perfect_one_span_predictor_on_squad2_test(clues_zip):
    """The issue's figures, from the published file alone: 100.0 (best) vs 88.8 (set, = official eval_S1)."""
    with zipfile.ZipFile(clues_zip) as archive:
        text = archive.read("CLUES-JSON/SQuAD-v2/squad-v2_test.jsonl").decode("utf-8")
    rows = [json.loads(x) for x in text.split("\n") if x]
    golds = [[a["text"] for a in r["answer"]] for r in rows]
    predictions = [g[:1] for g in golds]
    assert sum(len(set(g)) > 1 for g in golds) == 55
    assert percent(eval_s1(predictions, golds, alternatives=True)) == 100.0
    assert percent(eval_s1(predictions, golds, alternatives=True, mrc_gold="set")) == 88.8
    assert eval_s1(predictions, golds, alternatives=True, mrc_gold="set") == pytest.approx(eval_S1(predictions, golds))
