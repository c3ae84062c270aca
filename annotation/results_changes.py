"""Telling the results that what they read of a cohort changed: one call, from every place that changes it.

The results keep each cohort's scores in the database (``results.scores``), so that no request scores a
study's answers again; a kept row must never be stale. What they read of a cohort: the test answers of its
enrollments ``in_results`` (completed, verified or not checked, not left out) and, for the planner's
measured pace (``estimates``), the kept timings of its parts (``PartTiming``) of enrollments not left
unverified. So the cohort's kept scores are stale after:

- an enrollment entering or leaving one of those states (``protocol.transition``: completing, finishing a
  part, starting the next, withdrawn or expired between parts, an unverified one expired);
- a part's timing kept (``timing_kept``: a part finished, or cut off by its time limit in any state);
- its verification changing, in any state (the crowd platform vouched for it, or it was superseded: its
  timings count or stop counting);
- a researcher leaving it out of the results or counting it in again.

An answer is stored or revised only while its enrollment is in a step (training, or the test step), a state
no result reads: it counts from the moment its enrollment completes, which the transition tells. A revision
calls ``results_changed`` all the same, so that a rule allowing later changes cannot forget it. A new import
of a task's data (a corrected gold) the results see themselves: they compare the task's data fingerprint with
the one their scores were computed on.

``results_changed`` runs in the changing transaction, so the results see the change and the mark together
or neither. The results app is above this one and listens (``results.apps``); this app never imports it.
"""

from __future__ import annotations

from django.dispatch import Signal

from .estimates import MEASURED_STATES
from .models import Enrollment

# The states that count (``selectors.RESULT_STATES``) and those measured.
READ_BY_RESULTS = frozenset({Enrollment.State.COMPLETED, *MEASURED_STATES})

# Sent with ``cohort_id``: what the results read of that cohort changed, in the transaction now open.
cohort_changed = Signal()


def results_changed(*, enrollment: Enrollment, from_state: str | None = None, always: bool = False) -> None:
    """Mark the enrollment's cohort's kept results stale if the results read the enrollment, now or before
    ``from_state`` (a transition's), or ``always`` (a change they read in any state: a verification). Call it
    after any change to an enrollment's state, verification, ``left_out`` or answers, in the same transaction."""
    if always or enrollment.state in READ_BY_RESULTS or from_state in READ_BY_RESULTS:
        cohort_changed.send(sender=Enrollment, cohort_id=enrollment.cohort_id)


def timing_kept(*, enrollment: Enrollment) -> None:
    """A part's timing was kept for the enrollment (``PartTiming``): the measured pace of its cohort may move."""
    results_changed(enrollment=enrollment, always=True)
