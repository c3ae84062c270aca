"""annotation.protocol holds every guard of the state machine, and numbers the rules the code cites."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from annotation import protocol
from annotation.protocol import CohortStatus, JoinRefusal, JoinRefused, State
from annotation.views import JOIN_STATUS

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


@pytest.mark.parametrize("state, test_answers, allowed", [
    (State.TRAINING, 0, True), (State.TESTING, 0, True), (State.TESTING, 1, False),
    (State.COMPLETED, 0, False), (State.FILTERED, 0, False), (State.WITHDRAWN, 0, False),
])
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
        "training", "test", "done", "filtered"]
    assert protocol.first_state(0) == State.TESTING and protocol.first_state(10) == State.TRAINING


def test_every_join_refusal_has_an_http_status():
    assert set(JOIN_STATUS) == set(JoinRefusal)
    assert JoinRefused(JoinRefusal.FULL, "full").reason is JoinRefusal.FULL
