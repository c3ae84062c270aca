"""The progress line names the part ("Part 1 of 3") on every page of a study in parts: the item, the training
feedback between two items, and a test answer being changed, as the item pages around them do."""

from __future__ import annotations

import re

from django.test import Client

from tests.worker_pages.factories import answer_current, bind, cohort_of, enroll, make_study


def _part_of(html: str) -> str | None:
    found = re.search(r'data-role="part-of">([^<]*)<', html)
    return found.group(1) if found else None


def test_every_page_of_a_part_names_the_part(demo_data):
    # ReCoRD's items at a minute each in short sittings (15 minutes: part 1 holds the 10-minute training step):
    # a test step in parts.
    study = make_study(tasks=("record",), shots=(10,), sitting_minutes=15, filter_fraction=None)
    enrollment = enroll(cohort_of(study, "record", 10))
    client = bind(Client(), enrollment)
    item = _part_of(client.get("/work/").content.decode())
    assert item is not None and re.fullmatch(r"Part 1 of [2-9][0-9]?", item), item
    answer_current(enrollment)
    feedback = client.get("/work/").content.decode()
    assert 'class="feedback' in feedback and _part_of(feedback) == item

    study = make_study(tasks=("record",), shots=(0,), sitting_minutes=10, filter_fraction=None)
    enrollment = enroll(cohort_of(study, "record", 0))
    client = bind(Client(), enrollment)
    item = _part_of(client.get("/work/").content.decode())
    assert item is not None and item.startswith("Part 1 of ")
    answer_current(enrollment)  # the first test answer, then the page that changes it
    revising = client.get("/work/revise/").content.decode()
    assert "Changing your answer to test item 1" in revising and _part_of(revising) == item
