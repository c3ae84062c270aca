"""Completion codes, active time and pay (rule 7)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from urllib.parse import quote

from .. import identity
from ..models import Enrollment, Study
from ..protocol import State

PROLIFIC_COMPLETE_URL = "https://app.prolific.com/submissions/complete?cc={code}"


@dataclass
class Completion:
    code: str
    redirect_url: str | None = None  # Prolific
    post_url: str | None = None  # MTurk externalSubmit
    post_fields: dict = field(default_factory=dict)


def completion(enrollment: Enrollment) -> Completion | None:
    """The code (and where to send it) for a completed or filtered worker; None otherwise."""
    study = enrollment.cohort.study
    if enrollment.state == State.COMPLETED:
        code = study.completion_code
    elif enrollment.state == State.FILTERED:
        code = study.screenout_code  # paid for the training time
    else:
        return None
    if study.platform == Study.Platform.PROLIFIC:
        return Completion(code, redirect_url=PROLIFIC_COMPLETE_URL.format(code=quote(code, safe="")))
    submit_to = enrollment.platform_data.get("turkSubmitTo") if study.platform == Study.Platform.MTURK else ""
    try:
        base = identity.check_turk_submit_to(submit_to) if submit_to else ""
    except identity.InvalidIdentity:
        base = ""  # stored before the allow-list: show the code instead of posting it anywhere
    if base:
        return Completion(code, post_url=f"{base}/mturk/externalSubmit",
                          post_fields={"assignmentId": enrollment.platform_data.get("assignmentId", ""),
                                       "completion_code": code})
    return Completion(code)


def active_seconds(enrolled_at: datetime, answered_at: Sequence[datetime], idle_cap_seconds: int) -> float:
    """Time on the study: the gaps between joining and each answer, each capped (rule 7)."""
    times = [enrolled_at, *sorted(answered_at)]
    return sum(min((b - a).total_seconds(), idle_cap_seconds) for a, b in zip(times, times[1:], strict=False))


def pay(seconds: float, rate_per_hour: Decimal) -> Decimal:
    return (Decimal(str(seconds)) / Decimal(3600) * Decimal(rate_per_hour)).quantize(Decimal("0.01"))
