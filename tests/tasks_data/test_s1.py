"""The S1 metric (tasks_data.s1): the paper's worked example and its defining properties."""

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from tasks_data.s1 import as_set, corpus_s1, eval_s1, instance_s1, item_s1, percent

# Short answers drawn from a small alphabet, so predictions and gold often overlap.
span = st.text(alphabet="abc xy", min_size=0, max_size=4)
spans = st.lists(span, max_size=6)
nonblank = st.text(alphabet="abcxy", min_size=1, max_size=4)
whitespace = st.text(alphabet=" \t\n", max_size=3)


def test_official_example():
    """The example of the official eval/S1.py (and the paper, section 3.3)."""
    predictions = [["a", "b"], [], ["c"], ["d", "e"]]
    gold = [["b", "c", "d"], [], [], ["f", "g"]]
    assert eval_s1(predictions, gold) == pytest.approx(0.35)
    assert [instance_s1(p, g) for p, g in zip(predictions, gold, strict=True)] == pytest.approx([0.4, 1, 0, 0])


def test_partial_overlap_is_f1():
    # p = 1/3, r = 1/2 -> F1 = 2pr/(p+r) = 0.4
    assert instance_s1(["a", "b", "c"], ["a", "d"]) == pytest.approx(0.4)


def test_percent_one_decimal():
    assert percent(0.35) == 35.0
    assert percent(0.51333) == 51.3
    assert percent(1.0) == 100.0


def test_length_mismatch_and_empty_corpus_refused():
    with pytest.raises(ValueError, match="2 predictions for 1 gold"):
        eval_s1([["a"], ["b"]], [["a"]])
    with pytest.raises(ValueError, match="undefined"):
        corpus_s1([])


@given(spans, spans)
def test_between_zero_and_one(prediction, gold):
    assert 0.0 <= instance_s1(prediction, gold) <= 1.0
    assert 0.0 <= item_s1(prediction, gold, alternatives=True) <= 1.0


@given(spans)
def test_identical_sets_score_one(answer):
    assert instance_s1(answer, answer) == 1.0
    assert instance_s1(answer, list(reversed(answer))) == 1.0


@given(spans, spans)
def test_symmetric(prediction, gold):
    assert instance_s1(prediction, gold) == instance_s1(gold, prediction)


def test_both_empty_is_one():
    assert instance_s1([], []) == 1.0
    assert instance_s1([""], []) == 1.0
    assert instance_s1([], [""]) == 1.0
    assert instance_s1([" "], ["", "  "]) == 1.0


@given(st.lists(nonblank, min_size=1, max_size=5))
def test_exactly_one_empty_is_zero(answer):
    assert instance_s1(answer, []) == 0.0
    assert instance_s1([], answer) == 0.0
    assert instance_s1([""], answer) == 0.0
    assert instance_s1(answer, [""]) == 0.0


@given(st.lists(nonblank, min_size=1, max_size=4), st.lists(nonblank, min_size=1, max_size=4))
def test_disjoint_sets_score_zero(prediction, gold):
    assume(not set(prediction) & set(gold))
    assert instance_s1(prediction, gold) == 0.0


@given(spans, spans, st.randoms())
def test_order_and_duplicates_do_not_matter(prediction, gold, rnd):
    reference = instance_s1(prediction, gold)
    shuffled = prediction + prediction[: rnd.randint(0, len(prediction))]
    rnd.shuffle(shuffled)
    assert instance_s1(shuffled, gold) == reference
    assert instance_s1(prediction, gold + gold) == reference


@given(spans, spans, st.lists(st.tuples(whitespace, whitespace), min_size=6, max_size=6))
def test_surrounding_whitespace_stripped(prediction, gold, pads):
    padded = [left + s + right for s, (left, right) in zip(prediction, pads, strict=False)]
    assert instance_s1(padded, gold) == instance_s1(prediction, gold)


def test_inner_text_is_not_normalised():
    assert instance_s1(["New  York"], ["New York"]) == 0.0
    assert instance_s1(["the Beatles"], ["Beatles"]) == 0.0
    assert instance_s1(["paris"], ["Paris"]) == 0.0


@given(spans)
def test_empty_string_is_the_empty_set(answer):
    assert as_set(answer + [""]) == as_set(answer)
    assert instance_s1([""], answer) == instance_s1([], answer)
    assert instance_s1(answer, [""]) == instance_s1(answer, [])


@given(st.lists(nonblank, min_size=1, max_size=5, unique=True), spans)
def test_mrc_scores_the_best_alternative(alternatives, prediction):
    expected = max(instance_s1(prediction, [a]) for a in alternatives)
    assert item_s1(prediction, alternatives, alternatives=True) == expected


@given(st.lists(nonblank, min_size=2, max_size=5, unique=True))
def test_mrc_any_one_alternative_is_right(alternatives):
    for answer in alternatives:
        assert item_s1([answer], alternatives, alternatives=True) == 1.0
        # ...whereas as one answer SET the same gold would give partial credit only.
        assert instance_s1([answer], alternatives) < 1.0
    # Predicting every alternative at once is not one answer: precision drops.
    assert item_s1(alternatives, alternatives, alternatives=True) == pytest.approx(2 / (len(alternatives) + 1))


def test_mrc_unanswerable():
    assert item_s1([], [], alternatives=True) == 1.0
    assert item_s1([""], [], alternatives=True) == 1.0
    assert item_s1(["Paris"], [], alternatives=True) == 0.0
    assert item_s1([], ["Paris", "the city of Paris"], alternatives=True) == 0.0


def test_eval_s1_with_alternatives():
    predictions = [["William the Conqueror"], [], ["1066"]]
    gold = [["William the Conqueror", "William"], [], ["in 1066", "1067"]]
    assert eval_s1(predictions, gold, alternatives=True) == pytest.approx(2 / 3)
    assert eval_s1(predictions, gold) == pytest.approx((2 / 3 + 1 + 0) / 3)
