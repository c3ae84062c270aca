"""The cohort page's audit rows read as sentences: a changed test answer is not shown as its stored JSON."""

from __future__ import annotations

import json

from dashboard.presentation import audit_reason


def test_a_changed_test_answer_reads_as_before_and_after():
    stored = json.dumps(
        {
            "example_id": 7,
            "position": 11,
            "before": {"texts": ["Paris"], "spans": [[0, 5]]},
            "after": {"texts": ["Lyon", "Nice"], "spans": [[9, 13], [20, 24]]},
        }
    )
    assert audit_reason(stored) == "Test item 12: \u201cParis\u201d \u2192 \u201cLyon\u201d, \u201cNice\u201d"
    empty = json.dumps({"position": 0, "before": {"texts": [""]}, "after": {"texts": ["entailment"]}})
    assert audit_reason(empty) == "Test item 1: no answer \u2192 \u201centailment\u201d"


def test_other_reasons_are_shown_as_written():
    assert audit_reason("answered everything in 2 s") == "answered everything in 2 s"
    assert audit_reason("{not json") == "{not json"
    assert audit_reason(json.dumps({"note": "x"})) == json.dumps({"note": "x"})
