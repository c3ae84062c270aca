"""What a worker who finished the study, or was filtered after training, gets: a code, and where it goes."""

from __future__ import annotations

import crowd

from ..models import Enrollment
from ..protocol import code_for


def completion(*, enrollment: Enrollment) -> crowd.Completion | None:
    """The code for a completed or filtered worker, one between parts (the part's code) or one who stopped in the
    middle of a part (paid for the time worked), and where the crowd platform wants it; None otherwise."""
    code = code_for(enrollment.cohort, enrollment.state, part=enrollment.part, stopped=bool(enrollment.stopped_at))
    if not code:
        return None
    return enrollment.cohort.study.provider.completion(code, data=enrollment.platform_data)
