"""What a worker who finished the study, or was filtered after training, gets: a code, and where it goes."""

from __future__ import annotations

import crowd

from ..models import Enrollment
from ..protocol import code_for


def completion(*, enrollment: Enrollment) -> crowd.Completion | None:
    """The code for a completed or filtered worker, and where the crowd platform wants it; None otherwise."""
    study = enrollment.cohort.study
    code = code_for(study, enrollment.state)
    if not code:
        return None
    return study.provider.completion(code, data=enrollment.platform_data)
