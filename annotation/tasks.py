"""Periodic tasks (Celery beat, settings.CELERY_BEAT_SCHEDULE): free expired places, sync Prolific."""

import logging

from celery import shared_task

logger = logging.getLogger(__name__)


@shared_task(name="annotation.tasks.expire_enrollments")
def expire_enrollments() -> int:
    from . import services

    return services.expire_stale()


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
