"""Celery tasks: give places back to Prolific, and the periodic sync (beat, settings.CELERY_BEAT_SCHEDULE)."""

import logging

from celery import shared_task

from annotation.models import Cohort, Study
from crowd.prolific import Prolific

from . import client as prolific
from .places import give_back_places as give_back
from .sync import sync

logger = logging.getLogger(__name__)


@shared_task(name="recruitment.tasks.give_back_places")
def give_back_places(cohort_id: int) -> int | None:
    """Queued on commit when a place is freed here (``provider.ProlificProvider``'s hooks); idempotent.

    A failure is logged and left to the periodic sync, which gives the same places back: a task
    that raised here would also break the request whose commit queued it when running eagerly.
    """
    try:
        # One attempt: run eagerly (no broker) this is inside a worker's request, and the sync retries.
        return give_back(cohort_id, retries=0)
    except (prolific.ProlificError, Cohort.DoesNotExist) as exc:
        logger.warning("Giving places back to Prolific for cohort %s failed (the sync will retry): %s", cohort_id, exc)
        return None


@shared_task(name="recruitment.tasks.sync_prolific")
def sync_prolific() -> int:
    """Sync every open study with published Prolific cohorts; one study's failure does not stop the others."""
    count = 0
    studies = Study.objects.filter(
        closed_at__isnull=True, platform=Prolific.slug, cohorts__prolific__prolific_study_id__gt=""
    ).distinct()
    for study in studies:
        try:
            sync(study)
            count += 1
        except prolific.ProlificError as exc:
            logger.warning("Prolific sync of study %s failed: %s", study.pk, exc)
    return count
