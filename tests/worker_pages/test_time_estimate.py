"""The description page says how long the study takes and what that pays: the items times the task's typical
seconds per item (task registry), at the study's rate; and how breaks count (the idle cap)."""

from __future__ import annotations

import pytest
from django.test import Client

from tasks_data.registry import CLUES_TASKS
from tests.worker_pages.factories import bind, cohort_of, enroll, make_study
from worker_pages.views import _duration


@pytest.mark.parametrize(
    ("seconds", "shown"), [(10, "1 min"), (301, "6 min"), (3600, "1 h"), (9250, "2 h 35 min"), (9300, "2 h 35 min")]
)
def test_durations_round_up_to_the_minute_as_the_listing(seconds, shown):
    assert _duration(seconds) == shown


def test_every_clues_task_has_a_plausible_time_per_item():
    for spec in CLUES_TASKS.values():
        assert spec.min_answer_seconds < spec.seconds_per_item <= 120, spec.slug


def test_the_description_gives_time_and_pay_from_the_registry_and_the_rate(demo_data):
    study = make_study(tasks=("conll03",), shots=(10,), pay_rate=10, idle_cap_seconds=240)
    enrollment = enroll(cohort_of(study, "conll03", 10))
    html = bind(Client(), enrollment, started=False).get("/work/").content.decode()
    per_item = CLUES_TASKS["conll03"].seconds_per_item  # 30 training rows and the demo's 12 test items
    assert per_item == 15
    assert "Test: 12 items.</strong>" in html
    # 42 x 15 s = 10.5 min: 11, as the platform lists it and pays for it.
    assert "Time: about 11 min in all</strong> (about 15 seconds an item)" in html
    # 630 s, listed as 11 minutes (rounded up, as the platform's listing) at 10/h, rounded up to the cent.
    assert "pays about 1.84 USD at 10.00 USD an hour" in html
    assert "counts up to 4 minutes" in html
