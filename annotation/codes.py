"""The codes a worker is given: one completion code and one screen-out code per part of each cohort (``PartCode``).

Each is the study's prefix (``Study.completion_code`` / ``Study.screenout_code``) followed by random characters drawn
once, when the part's codes are first needed: a code says nothing about the codes of another part or cohort, so a
worker who was given one code (or a code shared among workers) cannot work out another.
"""

from __future__ import annotations

import re
import secrets

from .estimates import cohort_estimates
from .models import Cohort, PartCode, Study

ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O or 1/I to misread
RANDOM_CHARS = 10  # 50 random bits: a code cannot be guessed
PREFIX_CHARS = 40  # a code is at most 50 characters


def _code(prefix: str) -> str:
    # Letters and digits only, whatever was stored: a code goes into the crowd platform's URLs and forms.
    clean = re.sub(r"[^A-Za-z0-9]", "", prefix or "")[:PREFIX_CHARS]
    return clean + "".join(secrets.choice(ALPHABET) for _ in range(RANDOM_CHARS))


def part_codes(cohort: Cohort, part: int) -> PartCode:
    """The codes of ``part`` (1-based) of the cohort, drawn on first use (a concurrent first use gets the same)."""
    study = cohort.study
    codes, _ = PartCode.objects.get_or_create(
        cohort=cohort,
        part=max(1, part),
        defaults={"completion_code": _code(study.completion_code), "screenout_code": _code(study.screenout_code)},
    )
    return codes


def cohort_codes(cohort: Cohort, parts: int) -> list[PartCode]:
    """The codes of every part of the cohort (1..``parts``), in order."""
    known = {c.part: c for c in PartCode.objects.filter(cohort=cohort, part__lte=parts)}
    return [known.get(number) or part_codes(cohort, number) for number in range(1, parts + 1)]


def study_codes(study: Study) -> list[dict]:
    """Every code of the study's cohorts, per cohort and part (drawn where not yet), for the researcher's page: a
    platform that checks codes itself (a generic link) needs to know them."""
    cohorts = list(study.cohorts.select_related("task", "study").order_by("task__slug", "shots"))
    estimates = cohort_estimates(cohorts)
    rows = []
    for cohort in cohorts:
        parts = len(estimates[cohort.pk].parts)
        for codes in cohort_codes(cohort, parts):
            rows.append(
                {
                    "cohort": cohort,
                    "task_name": cohort.task.spec.name,
                    "shots": cohort.shots,
                    "part": codes.part,
                    "parts": parts,
                    "completion_code": codes.completion_code,
                    "screenout_code": codes.screenout_code,
                }
            )
    return rows
