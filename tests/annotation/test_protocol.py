"""annotation.protocol holds every guard of the state machine, and numbers the rules the code cites."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from annotation import protocol
from annotation.protocol import CohortStatus, JoinRefusal, JoinRefused, State
from worker_pages.join import JOIN_STATUS

ROOT = Path(__file__).resolve().parents[2]


def test_every_rule_the_code_and_tests_cite_is_listed_in_the_protocol():
    listed = {int(n) for n in re.findall(r"^(\d)\. ", protocol.__doc__, flags=re.M)}
    assert listed == set(range(1, 8))
    cited = set()
    for folder in ("annotation", "results", "tests", "benchmarks"):
        for path in (ROOT / folder).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            for match in re.finditer(r"\b[Rr]ules? ((?:\d(?:, | and | ?- ?)?)+)", text):
                cited |= {int(n) for n in re.findall(r"\d", match.group(1))}
    assert cited and cited <= listed, cited - listed


def test_filtering_decision_floor_then_fraction_of_the_others():
    assert protocol.filtering_decision(0.4, [], floor=0.5, fraction=None).startswith("training S1 0.400 is below")
    assert protocol.filtering_decision(0.6, [], floor=0.5, fraction=None) == ""
    assert protocol.filtering_decision(0.3, [0.9], floor=None, fraction=0.5) == ""  # needs two others
    assert "below 0.5 x the mean 0.800 of 2" in protocol.filtering_decision(0.3, [0.7, 0.9], floor=None, fraction=0.5)
    assert protocol.filtering_decision(0.41, [0.8, 0.8], floor=None, fraction=0.5) == ""


@pytest.mark.parametrize(
    "state, test_answers, allowed",
    [
        (State.TRAINING, 0, True),
        (State.TESTING, 0, True),
        (State.TESTING, 1, False),
        (State.COMPLETED, 0, False),
        (State.FILTERED, 0, False),
        (State.WITHDRAWN, 0, False),
    ],
)
def test_can_filter_until_the_first_test_answer(state, test_answers, allowed):
    assert protocol.can_filter(state, test_answers) is allowed


def test_can_reinstate_only_a_filtered_worker_while_there_is_room():
    assert protocol.can_reinstate(State.FILTERED) and not protocol.can_reinstate(State.TESTING)
    assert "full" in protocol.reinstate_refusal(State.FILTERED, taken=3, target=3)
    assert protocol.reinstate_refusal(State.FILTERED, taken=2, target=3) is None


def test_cohort_status():
    def cohort(launched=True, closed=False, target=3):
        return SimpleNamespace(launched_at=1 if launched else None, closed_at=1 if closed else None, target=target)

    assert protocol.cohort_status(cohort(launched=False), enrolled=0, completed=0) is CohortStatus.NOT_LAUNCHED
    assert protocol.cohort_status(cohort(), enrolled=1, completed=0) is CohortStatus.OPEN
    assert protocol.cohort_status(cohort(), enrolled=3, completed=1) is CohortStatus.FULL
    assert protocol.cohort_status(cohort(), enrolled=3, completed=3) is CohortStatus.DONE
    assert protocol.cohort_status(cohort(closed=True), enrolled=0, completed=0) is CohortStatus.CLOSED
    assert protocol.cohort_status(cohort(), enrolled=0, completed=0, study_open=False) is CohortStatus.CLOSED


def test_step_names_and_first_state():
    assert [protocol.step_name(s) for s in (State.TRAINING, State.TESTING, State.COMPLETED, State.FILTERED)] == [
        "training",
        "test",
        "done",
        "filtered",
    ]
    assert protocol.first_state(0) == State.TESTING and protocol.first_state(10) == State.TRAINING


def test_every_join_refusal_has_an_http_status():
    assert set(JOIN_STATUS) == set(JoinRefusal)
    assert JoinRefused(JoinRefusal.FULL, "full").reason is JoinRefusal.FULL


# ---------------------------------------------------------------- the worker's pages (protocol.worker_page)


def _page(state, *, shots=10, started=False, answered=False, last=None, seen=None, calls=None):
    calls = [] if calls is None else calls

    def has_answers():
        calls.append("answers")
        return answered

    def last_training_answer():
        calls.append("last")
        return last

    return protocol.worker_page(
        state,
        shots=shots,
        started=started,
        has_answers=has_answers,
        last_training_answer=last_training_answer,
        feedback_seen=seen,
    )


def test_the_description_until_the_worker_starts_or_has_answered():
    Page = protocol.WorkerPage
    assert _page(State.TRAINING) is Page.DESCRIPTION
    assert _page(State.TESTING, shots=0) is Page.DESCRIPTION
    assert _page(State.TRAINING, started=True) is Page.ITEM
    # An answer stored from another tab (or before the session's Start was remembered) counts as started.
    assert _page(State.TRAINING, answered=True) is Page.ITEM
    # Past the steps the description is never shown again, whatever the session remembers.
    assert _page(State.COMPLETED) is Page.DONE
    assert _page(State.FILTERED) is Page.FILTERED
    assert _page(State.WITHDRAWN) is Page.ENDED and _page(State.EXPIRED) is Page.ENDED


def test_the_feedback_of_the_last_training_answer_until_the_worker_moves_on():
    Page = protocol.WorkerPage
    assert _page(State.TRAINING, started=True, last=7) is Page.FEEDBACK
    assert _page(State.TRAINING, started=True, last=7, seen=7) is Page.ITEM
    # Acknowledging an older answer does not skip the newest one's feedback.
    assert _page(State.TRAINING, started=True, last=8, seen=7) is Page.FEEDBACK
    # The last training answer moved the worker to the test step, or had them filtered: its feedback first.
    assert _page(State.TESTING, started=True, last=9) is Page.FEEDBACK
    assert _page(State.FILTERED, last=9) is Page.FEEDBACK
    assert _page(State.FILTERED, last=9, seen=9) is Page.FILTERED
    # No training step (0 shots), or the test step answered (last is None): no feedback.
    assert _page(State.TESTING, shots=0, started=True, last=9) is Page.ITEM
    assert _page(State.TESTING, started=True, last=None) is Page.ITEM
    assert _page(State.COMPLETED, last=9) is Page.DONE


def test_the_page_reads_the_stored_answers_only_when_the_decision_needs_them():
    calls = []
    _page(State.TRAINING, started=True, seen=3, calls=calls)
    assert calls == ["last"]  # started: no need to look for answers
    calls.clear()
    _page(State.TRAINING, calls=calls)
    assert calls == ["answers"]  # the description: the feedback is not looked at
    calls.clear()
    _page(State.COMPLETED, calls=calls)
    _page(State.TESTING, shots=0, started=True, calls=calls)
    assert calls == []


def test_every_step_has_its_page():
    Page = protocol.WorkerPage
    assert {
        step: protocol.page_of_step(protocol.step_name(s)) for step, s in (("t", State.TRAINING), ("x", State.TESTING))
    } == {"t": Page.ITEM, "x": Page.ITEM}
    assert protocol.page_of_step("done") is Page.DONE and protocol.page_of_step("filtered") is Page.FILTERED
    assert protocol.page_of_step("expired") is Page.ENDED and protocol.page_of_step("withdrawn") is Page.ENDED
