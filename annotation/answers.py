"""Validating a worker's answer against the task's answer kind (protocol rule 6).

The API's answer is a list: ``["positive"]`` for a label; ``[{"start": s, "end": e}, ...]``
for spans (character offsets into the context, end exclusive; an optional ``"text"`` must
equal the slice); ``[]`` for "none". A valid answer becomes the set of strings S1 scores,
plus the offsets where there are any. Anything else is an ``InvalidAnswer`` naming the
problem, and nothing is stored. The rules are the answer kind's (``tasks_data.kinds``).
"""

from __future__ import annotations

from tasks_data.kinds import InvalidAnswer, ValidatedAnswer
from tasks_data.models import Example
from tasks_data.registry import TaskSpec

__all__ = ["InvalidAnswer", "ValidatedAnswer", "validate_answer"]


def validate_answer(spec: TaskSpec, example: Example, answer) -> ValidatedAnswer:
    return spec.answer_kind.validate(spec, example, answer)
