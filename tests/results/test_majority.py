"""Majority vote per cohort on hand-made cohorts, ties included."""

import itertools

import pytest

from results.majority import majority_answer, majority_predictions, majority_s1, majority_spans, most_frequent
from tasks_data.kinds import KINDS


def test_label_most_frequent_and_ties_alphabetical():
    assert most_frequent([["positive"], ["negative"], ["positive"]]) == ["positive"]
    assert most_frequent([["positive"], ["negative"]]) == ["negative"]  # tie: alphabetical
    assert most_frequent([["neutral"], ["entailment"], ["contradiction"]]) == ["contradiction"]
    two_ties = [["neutral"], ["entailment"], ["neutral"], ["entailment"], ["contradiction"]]
    assert most_frequent(two_ties) == ["entailment"]


def test_ties_do_not_depend_on_the_annotators_order():
    answers = [["neutral"], ["entailment"], ["neutral"], ["entailment"], ["contradiction"]]
    assert {tuple(most_frequent(list(p))) for p in itertools.permutations(answers)} == {("entailment",)}
    spans = [["Paris", "Rome"], ["Paris"], [], ["Rome", "Oslo"]]
    assert {tuple(majority_spans(list(p))) for p in itertools.permutations(spans)} == {()}


def test_spans_need_a_strict_majority_of_annotators():
    three = [["Paris", "Rome"], ["Paris"], ["Rome", "Oslo"]]
    assert majority_spans(three) == ["Paris", "Rome"]  # 2 of 3 each; Oslo 1 of 3
    four = [["Paris", "Rome"], ["Paris"], ["Rome", "Oslo"], ["Paris"]]
    assert majority_spans(four) == ["Paris"]  # Paris 3 of 4; Rome 2 of 4 is not a majority
    assert majority_spans([["Paris"], [], []]) == []  # the majority says "no name"
    assert majority_spans([[""], [" Paris "], ["Paris"]]) == ["Paris"]  # compared as S1 compares them
    assert majority_spans([["Paris", "Paris"], ["Rome"], ["Oslo"]]) == []  # one annotator, one vote


def test_mrc_most_frequent_span_no_answer_counts_and_wins_ties():
    kind = KINDS["span_or_none"]
    assert majority_answer([["1066"], ["in 1066"], ["1066"]], kind) == ["1066"]
    assert majority_answer([[], [], ["1066"]], kind) == []
    assert majority_answer([["1066"], []], kind) == []  # tie: "no answer" sorts first
    assert majority_answer([["in 1066"], ["1066"]], kind) == ["1066"]  # tie: alphabetical
    assert majority_answer([["Lago"], ["Trump"], ["Lago"], ["Trump"], ["Mar"]], KINDS["entity"]) == ["Lago"]


def test_cohort_majority_s1_beats_or_matches_its_annotators_here():
    """SST-2-like cohort of 3: each annotator wrong on a different item; the majority is right everywhere."""
    gold = {1: ["positive"], 2: ["negative"], 3: ["positive"], 4: ["negative"]}
    flip = {"positive": "negative", "negative": "positive"}
    answers = {
        name: {i: [flip[g[0]]] if i == wrong else g for i, g in gold.items()}
        for name, wrong in (("A", 1), ("B", 2), ("C", 3))
    }
    assert majority_predictions(answers, KINDS["label"]) == gold
    assert majority_s1(answers, gold, KINDS["label"]) == 1.0


def test_cohort_majority_s1_ner_and_mrc_by_hand():
    ner_gold = {"s1": ["Paris", "Rome"], "s2": [], "s3": ["Oslo"]}
    ner = {
        "A": {"s1": ["Paris"], "s2": [], "s3": ["Oslo"]},
        "B": {"s1": ["Paris", "Rome"], "s2": ["May"], "s3": []},
        "C": {"s1": ["Rome"], "s2": [], "s3": ["Oslo", "Bergen"]},
    }
    # majority: s1 {Paris, Rome} -> 1; s2 {} -> 1; s3 {Oslo} -> 1
    assert majority_s1(ner, ner_gold, KINDS["spans"]) == 1.0
    ner["C"]["s1"] = ["Lyon"]  # s1 majority: {Paris} -> 2/3
    assert majority_s1(ner, ner_gold, KINDS["spans"]) == pytest.approx((2 / 3 + 1 + 1) / 3)

    mrc_gold = {"q1": ["1066", "in 1066"], "q2": []}
    mrc = {
        "A": {"q1": ["in 1066"], "q2": []},
        "B": {"q1": ["in 1066"], "q2": ["Hastings"]},
        "C": {"q1": ["1066"], "q2": ["Hastings"]},
    }
    # q1 majority "in 1066": best alternative 1, as one gold set 2/3; q2 majority "Hastings": 0
    assert majority_s1(mrc, mrc_gold, KINDS["span_or_none"]) == pytest.approx(0.5)
    assert majority_s1(mrc, mrc_gold, KINDS["span_or_none"], mrc_gold="set") == pytest.approx((2 / 3) / 2)


def test_refusals():
    with pytest.raises(ValueError, match="no answers"):
        most_frequent([])
    with pytest.raises(ValueError, match="no answers"):
        majority_spans([])
    with pytest.raises(ValueError, match="1 item\\(s\\) have no answer"):
        majority_s1({"A": {1: ["positive"]}}, {1: ["positive"], 2: ["negative"]}, KINDS["label"])
