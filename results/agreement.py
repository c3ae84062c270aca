"""Agreement between a cohort's annotators (mean pairwise S1, Fleiss' kappa, Krippendorff's alpha:
measured by ``results.measures``) and learning curves."""

from __future__ import annotations

from annotation.models import Study
from annotation.selectors import study_cohorts

from .measures import fleiss_kappa, krippendorff_alpha, pairwise_s1
from .scores import study_scores

__all__ = ["cohort_agreement", "fleiss_kappa", "krippendorff_alpha", "learning_curves", "pairwise_s1"]


def cohort_agreement(study: Study) -> list[dict]:
    """Agreement between the annotators of each cohort in results, in table order (``results.scores``).

    Keys: ``cohort`` (id), ``task`` (slug), ``shots``, ``n`` (annotators), ``mean_pairwise_s1_percent``
    (mean of ``pairwise_s1`` over every pair, percent; None when n < 2), ``fleiss_kappa`` (label tasks,
    SST-2 and MNLI, over the items every annotator answered; None for span tasks or when undefined),
    ``krippendorff_alpha`` (every task, None when undefined) and ``alpha_distance`` (its distance:
    "nominal" for labels, "jaccard" for answer sets; see the module's note).
    """
    scores = study_scores(study)
    rows = []
    for cohort in study_cohorts(study):
        cell = scores.get(cohort.pk)
        pairwise = cell.mean_pairwise_s1 if cell else None
        rows.append(
            {
                "cohort": cohort.pk,
                "task": cohort.task.slug,
                "shots": cohort.shots,
                "n": cell.n if cell else 0,
                "mean_pairwise_s1_percent": None if pairwise is None else 100 * pairwise,
                "fleiss_kappa": cell.fleiss_kappa if cell else None,
                "krippendorff_alpha": cell.krippendorff_alpha if cell else None,
                "alpha_distance": cell.alpha_distance if cell and cell.n >= 2 else None,
            }
        )
    return rows


def learning_curves(study: Study) -> list[dict]:
    """Each annotator's S1 (percent) on each training item, in training order; the annotators every
    result counts (``in_results``: completed, not awaiting verification), from ``results.scores``.

    One row per training answer: ``enrollment_id``, ``worker``, ``task``, ``shots``,
    ``position`` (0-based), ``s1_percent``, ``running_s1_percent`` (mean S1 so far) and ``gold_unproducible``
    (the item's gold cannot be marked exactly, a quirk of the data: its point is marked, and it
    is left out of the training S1 that filters workers, though not out of ``running_s1_percent``).
    """
    scores = study_scores(study)
    rows = []
    for cohort in study_cohorts(study):
        for r in scores[cohort.pk].enrollment_rows if cohort.pk in scores else ():
            total = 0.0
            for position, (s1, quirk) in enumerate(
                zip(r["learning_curve"], r["learning_curve_unproducible"], strict=True)
            ):
                total += s1
                rows.append(
                    {
                        "enrollment_id": r["enrollment"].pk,
                        "worker": r["worker"],
                        "task": r["task"],
                        "shots": r["shots"],
                        "position": position,
                        "s1_percent": 100 * s1,
                        "running_s1_percent": 100 * total / (position + 1),
                        "gold_unproducible": quirk,
                    }
                )
    return rows
