"""This app's records of a study on Prolific, read and written in one place: a cohort's Prolific study, an
enrollment's submission status, the study's settings (``models``)."""

from __future__ import annotations

from django.db.models import QuerySet

from annotation.models import Cohort, Enrollment, Study

from .models import ProlificCohort, ProlificPart, ProlificStudy, ProlificSubmission


def study_id_of(cohort: Cohort | int) -> str:
    """The cohort's study on Prolific ("" when it is not published there) (1 query)."""
    cohort_id = cohort if isinstance(cohort, int) else cohort.pk
    return ProlificCohort.objects.filter(cohort_id=cohort_id).values_list("prolific_study_id", flat=True).first() or ""


def part_studies(cohort: Cohort) -> dict[str, int]:
    """{Prolific study id: part} of the cohort's parts published on Prolific (part 1 is the cohort's study); one
    query for a cohort not on Prolific."""
    first = study_id_of(cohort)
    if not first:
        return {}
    rows = ProlificPart.objects.filter(cohort=cohort).values_list("prolific_study_id", "number")
    return {**{sid: number for sid, number in rows if sid}, first: 1}


def published_parts(cohort: Cohort | int) -> dict[int, ProlificPart]:
    """{part: its record} of the cohort's parts created on Prolific, with what each was published with (1 query)."""
    cohort_id = cohort if isinstance(cohort, int) else cohort.pk
    return {p.number: p for p in ProlificPart.objects.filter(cohort_id=cohort_id).exclude(prolific_study_id="")}


def published_cohorts(study: Study) -> QuerySet[Cohort]:
    """The study's cohorts published on Prolific, with their record (``cohort.prolific``)."""
    return study.cohorts.filter(prolific__prolific_study_id__gt="").select_related("task", "prolific")


def status_of(enrollment: Enrollment, part: int | None = None) -> str:
    """The last status seen on Prolific of the enrollment's submission to ``part``'s study (default: the part the
    worker is in), "" when none was seen; no query when the enrollment was read with
    ``prefetch_related("prolific_submissions")``."""
    part = part or enrollment.part or 1
    cached = getattr(enrollment, "_prefetched_objects_cache", {}).get("prolific_submissions")
    if cached is not None:
        return next((s.status for s in cached if s.part == part), "")
    rows = ProlificSubmission.objects.filter(enrollment_id=enrollment.pk, part=part)
    return rows.values_list("status", flat=True).first() or ""


def set_status(enrollment: Enrollment, status: str, part: int | None = None) -> None:
    """Record the status Prolific reports for the enrollment's submission to ``part``'s study."""
    ProlificSubmission.objects.update_or_create(
        enrollment_id=enrollment.pk, part=part or enrollment.part or 1, defaults={"status": status[:20]}
    )


def manual_review(study: Study) -> bool:
    """Whether the researcher reviews every submission by hand (the study's Prolific setting)."""
    return bool(ProlificStudy.objects.filter(study_id=study.pk).values_list("manual_review", flat=True).first())
