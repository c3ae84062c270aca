"""The enrollment state machine (paper section 4), in one place.

    (join, k > 0 shots) -> training -> testing -> completed
    (join, 0 shots)     ->             testing -> completed
    training -> filtered            (training S1 below the study's rule, or by a researcher)
    testing  -> filtered            (by a researcher, only before the first test answer)
    filtered -> testing | training  (a researcher reinstates)
    training | testing -> withdrawn | expired

Every transition goes through ``transition`` and is written to the audit log.
"""

from __future__ import annotations

from .models import AuditEvent, Enrollment

State = Enrollment.State

ALLOWED: dict[str | None, set[str]] = {
    None: {State.TRAINING, State.TESTING},
    State.TRAINING: {State.TESTING, State.FILTERED, State.WITHDRAWN, State.EXPIRED},
    State.TESTING: {State.COMPLETED, State.FILTERED, State.WITHDRAWN, State.EXPIRED},
    State.FILTERED: {State.TESTING, State.TRAINING},
    State.COMPLETED: set(),
    State.WITHDRAWN: set(),
    State.EXPIRED: set(),
}

ACTIVE = frozenset({State.TRAINING, State.TESTING})
# Enrollments that hold one of the cohort's slots (rule 2); the others freed theirs.
HOLDS_SLOT = frozenset({State.TRAINING, State.TESTING, State.COMPLETED})


class TransitionNotAllowed(Exception):
    pass


def transition(enrollment: Enrollment, to_state: str, *, actor: str, action: str, reason: str = "",
               update_fields: tuple[str, ...] = ()) -> AuditEvent:
    """Move ``enrollment`` to ``to_state`` (saving it) and record the event."""
    from_state = enrollment.state if enrollment.pk else None
    if to_state not in ALLOWED[from_state]:
        raise TransitionNotAllowed(f"an enrollment cannot go from {from_state or 'nothing'} to {to_state}")
    enrollment.state = to_state
    if enrollment.pk:
        enrollment.save(update_fields=["state", *update_fields])
    else:
        enrollment.save()
    return AuditEvent.objects.create(
        study_id=enrollment.cohort.study_id, enrollment=enrollment, actor=actor, action=action,
        from_state=from_state or "", to_state=to_state, reason=reason,
    )
