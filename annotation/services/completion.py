"""What a worker who finished the study, or was filtered after training, gets: a code, and where it goes."""

from __future__ import annotations

import crowd

from ..attention import worker_estimate
from ..models import Enrollment
from ..protocol import State, code_for


def completion(*, enrollment: Enrollment) -> crowd.Completion | None:
    """The code for a completed or filtered worker, one between parts (the part's code) or one who stopped in the
    middle of a part (paid for the time worked), and where the crowd platform wants it; None otherwise."""
    study = enrollment.cohort.study
    # Only a part's code needs the parts: the last part's is the study's completion code.
    parts = len(worker_estimate(enrollment).parts) if enrollment.state == State.BETWEEN else 1
    code = code_for(study, enrollment.state, part=enrollment.part, parts=parts, stopped=bool(enrollment.stopped_at))
    if not code:
        return None
    return study.provider.completion(code, data=enrollment.platform_data)
