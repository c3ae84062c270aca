"""What a worker is paid for: the time worked in each part of their test step (rule 7, ``protocol.part_seconds``).

A part's time runs from its start (joining, for part 1; pressing "Start part k" for a later one: ``Enrollment.
part_starts``) through each answer given in it (an attention check's too), and on to the moment the worker stopped in
it (they ended it, or its time limit passed: the limit itself, ``Enrollment.stopped_at``), each gap capped at the
study's idle cap. The wait between parts belongs to no part, and a part without an answer earns nothing. The
researcher's pages, the exports and the crowd platform's bonuses (``recruitment.bonuses``) all read these figures.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime

from .models import Answer, AttentionAnswer, Enrollment
from .protocol import part_seconds


def part_starts(enrollment: Enrollment) -> dict[int, datetime]:
    """{part: when it started} of the parts the worker started (no query)."""
    starts = {1: enrollment.enrolled_at}
    for number, at in (enrollment.part_starts or {}).items():
        starts[int(number)] = at if isinstance(at, datetime) else datetime.fromisoformat(at)
    return starts


def part_at(starts: dict[int, datetime], at: datetime) -> int:
    """The part an answer given at ``at`` belongs to: the last one started before it (a part starts after the answer
    that ended the one before)."""
    return max((number for number, start in starts.items() if start < at), default=1)


def seconds_per_part(enrollment: Enrollment, answered_at: Sequence[datetime]) -> dict[int, float]:
    """{part: active seconds} of every part the worker started, from their answers' times (no query)."""
    starts = part_starts(enrollment)
    times: dict[int, list[datetime]] = {number: [] for number in starts}
    for at in answered_at:
        times[part_at(starts, at)].append(at)
    cap = enrollment.cohort.study.idle_cap_seconds
    return {
        number: part_seconds(
            start=starts[number],
            answered_at=times[number],
            # Only the part the worker stopped in runs on past its last answer (to when they stopped).
            end=enrollment.stopped_at if number == enrollment.part else None,
            idle_cap_seconds=cap,
        )
        for number in sorted(starts)
    }


def check_answer_times(enrollment_ids: Iterable[int]) -> dict[int, list[datetime]]:
    """{enrollment: when each of its attention checks was answered} (1 query). Answering a check is work like
    answering an item (the worker cannot tell them apart): its time counts in the part as an answer's does."""
    times: dict[int, list[datetime]] = defaultdict(list)
    for enrollment_id, at in AttentionAnswer.objects.filter(enrollment_id__in=list(enrollment_ids)).values_list(
        "enrollment_id", "answered_at"
    ):
        times[enrollment_id].append(at)
    return times


def worked_seconds(enrollment: Enrollment) -> dict[int, float]:
    """``seconds_per_part`` of an enrollment, reading its answers, attention checks' included (1 query; 2 in a
    study with attention checks)."""
    answered = list(Answer.objects.filter(enrollment=enrollment).values_list("answered_at", flat=True))
    if enrollment.cohort.study.has_attention_checks:
        answered += check_answer_times([enrollment.pk])[enrollment.pk]
    return seconds_per_part(enrollment, answered)
