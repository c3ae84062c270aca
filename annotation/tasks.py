"""Celery tasks: free expired places, sync Prolific (beat, settings.CELERY_BEAT_SCHEDULE), give places back."""

import logging

from celery import shared_task

logger = logging.getLogger(__name__)


@shared_task(name="annotation.tasks.expire_enrollments")
def expire_enrollments() -> int:
    from . import services

    return services.expire_stale()


@shared_task(name="annotation.tasks.give_back_places")
def give_back_places(cohort_id: int) -> int | None:
    """Queued on commit when a place is freed here (``recruitment.place_freed``); idempotent.

    A failure is logged and left to the periodic sync, which gives the same places back: a task
    that raised here would also break the request whose commit queued it when running eagerly.
    """
    from . import prolific, recruitment
    from .models import Cohort

    try:
        # One attempt: run eagerly (no broker) this is inside a worker's request, and the sync retries.
        return recruitment.give_back_places(cohort_id, retries=0)
    except (prolific.ProlificError, Cohort.DoesNotExist) as exc:
        logger.warning("Giving places back to Prolific for cohort %s failed (the sync will retry): %s",
                       cohort_id, exc)
        return None


@shared_task(name="annotation.tasks.sync_prolific")
def sync_prolific() -> int:
    """Sync every open study with published Prolific cohorts; one study's failure does not stop the others."""
    from . import prolific, recruitment
    from .models import Study

    count = 0
    studies = Study.objects.filter(closed_at__isnull=True, platform=Study.Platform.PROLIFIC,
                                   cohorts__prolific_study_id__gt="").distinct()
    for study in studies:
        try:
            recruitment.sync(study)
            count += 1
        except prolific.ProlificError as exc:
            logger.warning("Prolific sync of study %s failed: %s", study.pk, exc)
    return count
