"""What this app does when the protocol announces something (``annotation.events``; connected in apps.py)."""

from __future__ import annotations

from django.db import transaction

from . import sync, tasks
from .tokens import on_prolific


def verify_join(sender, *, cohort, identity, returning: bool = False, **kwargs) -> str:
    """A join to a cohort published on Prolific is checked against Prolific (``sync.verify_join``)."""
    return sync.verify_join(cohort, identity.external_id, identity.data, returning=returning)


def give_back_place(sender, *, enrollment, **kwargs) -> None:
    """A place freed here goes back to the cohort's Prolific study, queued once the transaction commits.

    Without a broker the task runs eagerly (inside the request that freed the place); the periodic
    sync gives the same places back if the task cannot.
    """
    cohort = enrollment.cohort
    if not cohort.platform_study_id or not on_prolific(cohort.study):
        return
    cohort_id = cohort.pk
    transaction.on_commit(lambda: tasks.give_back_places.delay(cohort_id), robust=True)
