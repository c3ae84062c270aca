"""Places on Prolific: a place freed here (filtered, withdrawn, expired) that Prolific keeps taken, or taken there by a
submission of someone with no enrollment here, is given back at once, counted per part so that it is never given twice
(``ProlificCohort`` for part 1, ``ProlificPart`` for each later part).

The protocol tells the provider of a freed place (its ``on_filter``, ``on_expire`` and ``on_withdraw``
hooks, ``recruitment.provider``), which queues ``give_back_places`` on commit; the periodic sync gives
the same places back if that fails, and those its reconciliation found taken by strangers.
"""

from __future__ import annotations

from django.db import transaction

from annotation.models import Cohort, Enrollment
from annotation.protocol import HOLDS_SLOT, State

from . import client as prolific
from .audit import audit
from .models import ProlificCohort, ProlificPart, ProlificReview
from .tokens import client_for, token_for

# Statuses of a submission that keeps its place on Prolific once sent (returned, timed-out and rejected ones free it).
KEEPS_PLACE = (prolific.AWAITING_REVIEW, prolific.APPROVED, prolific.SCREENED_OUT, prolific.PARTIALLY_APPROVED)


def places_owed(cohort: Cohort, part: int = 1) -> int:
    """Places of the part's Prolific study taken there by submissions that hold no place here.

    A filtered worker leaves with the screen-out code, and a screened-out submission keeps its
    Prolific place; a withdrawn or expired one keeps it too once the submission was sent
    (awaiting review, approved, screened out). Returned, timed-out and rejected submissions free
    their place on Prolific already (the submission object's reference), so they are not counted:
    counting them would recruit too many. A submission of a participant with no enrollment here (a shared code: the
    sync asks them to return it) takes a place the cohort's workers need. A later part's study is taken only by those
    who reached it: a worker who stopped in it frees a place there that their replacement, starting at part 1, will
    need. An enrollment admitted unverified (or superseded by the genuine participant) never counts: Prolific never
    gave it a place, so none is owed for it.
    """
    freed = (
        Enrollment.objects.filter(cohort=cohort)
        .exclude(state__in=HOLDS_SLOT)
        .exclude(prolific_submissions__part=part, prolific_submissions__status__in=prolific.FREES_PROLIFIC_PLACE)
        .exclude(verification__in=(Enrollment.UNVERIFIED, Enrollment.SUPERSEDED))
    )
    kept_there = freed.filter(prolific_submissions__part=part, prolific_submissions__status__in=KEEPS_PLACE)
    if part == 1:
        kept_there = freed.filter(state=State.FILTERED) | kept_there
    strangers = ProlificReview.objects.filter(
        cohort=cohort, part=part, enrollment__isnull=True, status__in=KEEPS_PLACE
    ).count()
    return kept_there.distinct().count() + strangers


def places_for(cohort: Cohort, part: int = 1) -> int:
    """Prolific's places of a part's study: the target plus every place owed (``places_owed``)."""
    return cohort.target + places_owed(cohort, part)


def _records(cohort: Cohort) -> list[tuple[int, type, int, str]]:
    """(part, model, pk, Prolific study id) of each of the cohort's studies on Prolific."""
    rows: list[tuple[int, type, int, str]] = []
    first = ProlificCohort.objects.filter(cohort=cohort).exclude(prolific_study_id="").first()
    if first is None:
        return rows
    rows.append((1, ProlificCohort, first.pk, first.prolific_study_id))
    for later in ProlificPart.objects.filter(cohort=cohort, number__gt=1).exclude(prolific_study_id=""):
        rows.append((later.number, ProlificPart, later.pk, later.prolific_study_id))
    return rows


def give_back_places(cohort_id: int, *, actor: str = "system", retries: int | None = None) -> int | None:
    """Give each of the cohort's Prolific studies the places owed there, at once; idempotent from our side.

    The part's record is locked, the places owed counted, and Prolific is told the new absolute total only when more
    places are owed than were given back: a rerun, a concurrent call or a crash after Prolific answered sets the
    same total again, never one more. Returns the total part 1's study now has (None when the cohort is not on
    Prolific). Raises ProlificError. ``retries`` overrides PROLIFIC_RETRIES (the task queued on commit makes one
    attempt: the sync retries).
    """
    cohort = Cohort.objects.select_related("study", "task").get(pk=cohort_id)
    records = _records(cohort)
    if not records or not token_for(cohort.study):
        return None
    if cohort.closed_at is not None or cohort.study.closed_at is not None:
        return None  # more places would re-open a finished Prolific study
    first_total = None
    for part, model, pk, study_id in records:
        total = _give_back(cohort, part, model, pk, study_id, actor=actor, retries=retries)
        if total is None:
            return None  # the token was removed meanwhile
        if part == 1:
            first_total = total
    return first_total


def _give_back(cohort: Cohort, part: int, model, pk: int, study_id: str, *, actor: str, retries) -> int | None:
    with transaction.atomic():
        row = model.objects.select_for_update().get(pk=pk)
        owed = places_owed(cohort, part)
        if owed <= row.given_back:
            return row.total or cohort.target
        total = cohort.target + owed
        client = client_for(cohort.study)
        if client is None:
            return None
        if retries is not None:
            client.retries = retries
        with client:
            client.set_places(study_id, total)
        row.given_back, row.total = owed, total
        row.save(update_fields=["given_back", "total", *(["updated_at"] if model is ProlificCohort else [])])
        named = f" part {part}" if part > 1 else ""
        audit(
            cohort.study,
            "prolific places",
            f"{cohort.task.slug} {cohort.shots}-shot{named}: {total} places ({owed} given back)",
            actor=actor,
        )
        return total
