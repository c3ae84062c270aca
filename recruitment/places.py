"""Places on Prolific: a place freed here (filtered, withdrawn, expired) that Prolific keeps taken is
given back at once, counted per cohort so that it is never given twice (``ProlificCohort``).

The protocol tells the provider of a freed place (its ``on_filter``, ``on_expire`` and ``on_withdraw``
hooks, ``recruitment.provider``), which queues ``give_back_places`` on commit; the periodic sync gives
the same places back if that fails.
"""

from __future__ import annotations

from django.db import transaction

from annotation.models import Cohort, Enrollment
from annotation.protocol import HOLDS_SLOT, State

from . import client as prolific
from .audit import audit
from .models import ProlificCohort
from .tokens import client_for, token_for


def places_owed(cohort: Cohort) -> int:
    """Places freed here that Prolific will not give back by itself.

    A filtered worker leaves with the screen-out code, and a screened-out submission keeps its
    Prolific place; a withdrawn or expired one keeps it too once the submission was sent
    (awaiting review, approved, screened out). Returned, timed-out and rejected submissions free
    their place on Prolific already (the submission object's reference), so they are not counted:
    counting them would recruit too many. Places are the first part's (a worker who did not come back for a
    later part frees one there: a new worker starts at part 1). An enrollment admitted unverified (or superseded by the
    genuine participant) never counts: Prolific never gave it a place, so none is owed for it.
    """
    kept = [prolific.AWAITING_REVIEW, prolific.APPROVED, prolific.SCREENED_OUT, prolific.PARTIALLY_APPROVED]
    freed = (
        Enrollment.objects.filter(cohort=cohort)
        .exclude(state__in=HOLDS_SLOT)
        .exclude(prolific_submissions__part=1, prolific_submissions__status__in=prolific.FREES_PROLIFIC_PLACE)
        .exclude(verification__in=(Enrollment.UNVERIFIED, Enrollment.SUPERSEDED))
    )
    kept_there = freed.filter(prolific_submissions__part=1, prolific_submissions__status__in=kept)
    return (freed.filter(state=State.FILTERED) | kept_there).distinct().count()


def places_for(cohort: Cohort) -> int:
    """Prolific's places: the target plus every place owed (``places_owed``)."""
    return cohort.target + places_owed(cohort)


def give_back_places(cohort_id: int, *, actor: str = "system", retries: int | None = None) -> int | None:
    """Give the cohort's Prolific study the places freed here, at once; idempotent from our side.

    The cohort's ``ProlificCohort`` row is locked, the places owed counted, and Prolific is told the new
    absolute total only when more places are owed than were given back: a rerun, a concurrent
    call or a crash after Prolific answered sets the same total again, never one more.
    Returns the total Prolific now has (None when the cohort is not on Prolific). Raises ProlificError.
    ``retries`` overrides PROLIFIC_RETRIES (the task queued on commit makes one attempt: the sync retries).
    """
    cohort = Cohort.objects.select_related("study", "task").get(pk=cohort_id)
    record = ProlificCohort.objects.filter(cohort=cohort).exclude(prolific_study_id="").first()
    if record is None or not token_for(cohort.study):
        return None
    if cohort.closed_at is not None or cohort.study.closed_at is not None:
        return None  # more places would re-open a finished Prolific study
    with transaction.atomic():
        row = ProlificCohort.objects.select_for_update().get(pk=record.pk)
        owed = places_owed(cohort)
        if owed <= row.given_back:
            return row.total
        total = cohort.target + owed
        client = client_for(cohort.study)
        if client is None:  # the token was removed meanwhile
            return None
        if retries is not None:
            client.retries = retries
        with client:
            client.set_places(row.prolific_study_id, total)
        row.given_back, row.total = owed, total
        row.save(update_fields=["given_back", "total", "updated_at"])
        audit(
            cohort.study,
            "prolific places",
            f"{cohort.task.slug} {cohort.shots}-shot: {total} places ({owed} given back)",
            actor=actor,
        )
        return total
