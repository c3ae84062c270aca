"""This app's records of a study on Prolific, read and written in one place: a cohort's Prolific study, an
enrollment's submission status, the study's settings (``models``)."""

from __future__ import annotations

from django.db.models import QuerySet

from annotation.models import Cohort, Enrollment, Study

from .models import ProlificCohort, ProlificStudy, ProlificSubmission


def study_id_of(cohort: Cohort | int) -> str:
    """The cohort's study on Prolific ("" when it is not published there) (1 query)."""
    cohort_id = cohort if isinstance(cohort, int) else cohort.pk
    return ProlificCohort.objects.filter(cohort_id=cohort_id).values_list("prolific_study_id", flat=True).first() or ""


def published_cohorts(study: Study) -> QuerySet[Cohort]:
    """The study's cohorts published on Prolific, with their record (``cohort.prolific``)."""
    return study.cohorts.filter(prolific__prolific_study_id__gt="").select_related("task", "prolific")


def status_of(enrollment: Enrollment) -> str:
    """The last status of the enrollment's submission seen on Prolific ("" when none was seen); no query when
    the enrollment was read with ``select_related("prolific_submission")``."""
    try:
        return enrollment.prolific_submission.status
    except ProlificSubmission.DoesNotExist:
        return ""


def set_status(enrollment: Enrollment, status: str) -> None:
    """Record the status Prolific reports for the enrollment's submission (when it changed)."""
    ProlificSubmission.objects.update_or_create(enrollment_id=enrollment.pk, defaults={"status": status[:20]})


def manual_review(study: Study) -> bool:
    """Whether the researcher reviews every submission by hand (the study's Prolific setting)."""
    return bool(ProlificStudy.objects.filter(study_id=study.pk).values_list("manual_review", flat=True).first())
