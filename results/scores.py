"""Per-cohort scores that every result of a study reads, computed once and kept until they change.

A cohort's ``CohortScores`` hold what the table, the agreement export, the planner and the item
view need: each annotator's per-item S1 under both MRC readings, the majority answer's per-item
S1, agreement (pairwise S1, Fleiss' kappa, Krippendorff's alpha) and the annotators' active time.
Reading a study's stored answers (their JSON texts) and scoring them costs about a second at paper
size; so each cohort's scores are kept (``results.cache``) under a fingerprint of what they are
computed from: the cohort's join token (192 random bits drawn when the cohort is created: a cohort
deleted and another created with the same row id, as SQLite allows, never shares a key) and its
answers that count (``in_results``: per annotator, the enrollment's random order seed and time, and
the answers' number, largest id and S1 sum). An annotator completing, filtered, reinstated or
verified changes the fingerprint; answers are never changed once given (``annotation.models.Answer``),
so a new result shows at once, and only its cohort is computed again.

``study_scores(study)`` -> {cohort id: CohortScores}: 1 query when every cohort is cached (the
fingerprint), 6 more when one is not (its cohorts, their test answers, the items' chance level, the
annotators' rows); the annotators' prediction files are kept apart (``prediction_files``: only the zip reads them).
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
from django.db.models import Count, Max, Sum

from annotation import selectors
from annotation.estimates import Estimate, cohort_estimates
from annotation.models import Answer, Cohort, Study
from annotation.selectors import in_results
from tasks_data.models import Example
from tasks_data.registry import find_task
from tasks_data.s1 import MRC_GOLD, item_s1

from . import measures
from .cache import VERSION, cached_many, keep_many
from .majority import majority_predictions


@dataclass(frozen=True)
class EnrollmentRef:
    """What the results read of an enrollment row's Enrollment: its id (a model instance is slow to unpickle)."""

    pk: int
    cohort_id: int


@dataclass
class CohortScores:
    cohort_id: int
    task: str
    shots: int
    fingerprint: str = ""  # what the scores were computed from (``_fingerprints``)
    annotators: list[int] = field(default_factory=list)  # enrollment ids, ascending
    example_ids: list[int] = field(default_factory=list)  # test items, in test-file order
    clues_ids: list[str] = field(default_factory=list)
    s1: dict[str, np.ndarray] = field(default_factory=dict)  # MRC reading -> annotators x items (0-1; NaN: no answer)
    majority_s1: dict[str, np.ndarray] = field(default_factory=dict)  # reading -> per item, the majority answer's S1
    majority: dict[str, list[str]] = field(default_factory=dict)  # CLUES id -> the majority answer
    active_seconds: dict[int, float] = field(default_factory=dict)  # enrollment id -> active time
    # selectors.study_enrollments' rows, in its order, "enrollment" an EnrollmentRef (cheap to keep and read back)
    enrollment_rows: list[dict] = field(default_factory=list)
    chance_s1: float | None = None  # 0-1: the S1 a worker who learned nothing expects on these items
    mean_pairwise_s1: float | None = None  # 0-1
    fleiss_kappa: float | None = None
    krippendorff_alpha: float | None = None
    alpha_distance: str | None = None
    # The cohort's estimate (``annotation.estimates``) as of these scores: the planner's time and price.
    estimate: Estimate | None = None

    @property
    def n(self) -> int:
        return len(self.annotators)

    def matrix(self, mrc_gold: str = MRC_GOLD[0]) -> np.ndarray:
        return self.s1.get(mrc_gold, np.zeros((0, 0)))

    def annotator_s1(self, mrc_gold: str = MRC_GOLD[0]) -> dict[int, float]:
        """{enrollment id: test S1 0-1}: the mean of the annotator's per-item S1."""
        m = self.matrix(mrc_gold)
        return {e: float(np.nanmean(row)) for e, row in zip(self.annotators, m, strict=True) if np.isfinite(row).any()}

    @property
    def complete(self) -> bool:
        """Every annotator answered every item (what the intervals need)."""
        return self.n > 0 and bool(np.isfinite(self.matrix()).all())


def _fingerprints(study: Study) -> dict[int, str]:
    """{cohort id: what its scores are computed from, hashed} for cohorts with answers in results (1 query)."""
    per_cohort: dict[int, list] = defaultdict(list)
    tokens: dict[int, str] = {}
    for cohort_id, token, *row in (
        Answer.objects.filter(in_results("enrollment__"), enrollment__cohort__study=study, step=Answer.Step.TEST)
        .order_by()
        .values(
            "enrollment__cohort_id",
            "enrollment__cohort__join_token",
            "enrollment_id",
            "enrollment__order_seed",
            "enrollment__enrolled_at",
        )
        .annotate(n=Count("id"), last=Max("id"), total=Sum("s1"))
        .values_list(
            "enrollment__cohort_id",
            "enrollment__cohort__join_token",
            "enrollment_id",
            "enrollment__order_seed",
            "enrollment__enrolled_at",
            "n",
            "last",
            "total",
        )
    ):
        tokens[cohort_id] = token
        per_cohort[cohort_id].append(tuple(row))
    return {
        cohort_id: hashlib.sha1(repr((tokens[cohort_id], sorted(rows))).encode()).hexdigest()
        for cohort_id, rows in per_cohort.items()
    }


def _key(study: Study, cohort_id: int, fingerprint: str) -> str:
    return f"results:scores:v{VERSION}:{study.pk}:{cohort_id}:{fingerprint}"


def _compute(study: Study, cohorts: list) -> tuple[dict[int, CohortScores], dict[int, dict[int, str]]]:
    """Scores of ``cohorts`` from their stored answers, and their annotators' prediction files (9 queries)."""
    files: dict[int, dict[int, str]] = {}
    by_cohort = {c.pk: c for c in cohorts}
    answers: dict[int, dict[int, dict[int, tuple]]] = defaultdict(lambda: defaultdict(dict))
    items: dict[int, dict[int, tuple]] = defaultdict(dict)
    numbers: dict[int, bool] = {}
    for cohort_id, enrollment_id, example_id, position, clues_id, number, gold, texts, s1 in (
        Answer.objects.filter(in_results("enrollment__"), enrollment__cohort_id__in=by_cohort, step=Answer.Step.TEST)
        .order_by()
        .values_list(
            "enrollment__cohort_id",
            "enrollment_id",
            "example_id",
            "example__position",
            "example__clues_id",
            "example__clues_id_is_number",
            "example__gold",
            "texts",
            "s1",
        )
    ):
        answers[cohort_id][enrollment_id][example_id] = (texts, s1)
        items[cohort_id][example_id] = (position, clues_id, gold)
        numbers[example_id] = number
    chance: dict[int, float] = {}
    for example_id, slug, gold, context, candidates in Example.objects.filter(
        pk__in={x for per_cohort in items.values() for x in per_cohort}
    ).values_list("pk", "task__slug", "gold", "context", "candidates"):
        spec = find_task(slug)
        if spec is not None:
            chance[example_id] = spec.chance_item_s1(gold, [context[a:b] for a, b in candidates or ()])
    rows: dict[int, list[dict]] = defaultdict(list)
    for row in selectors.study_enrollments(study, cohorts=by_cohort, results=True):
        rows[row["enrollment"].cohort_id].append(row)
    out = {}
    estimates = cohort_estimates(by_cohort.values(), study=study)
    for cohort_id, cohort in by_cohort.items():
        kind = cohort.task.spec.answer_kind
        scores = CohortScores(cohort_id, cohort.task.slug, cohort.shots)
        scores.estimate = estimates[cohort_id]
        by_annotator = answers.get(cohort_id, {})
        order = sorted(items.get(cohort_id, {}).items(), key=lambda kv: (kv[1][0], kv[0]))
        scores.annotators = sorted(by_annotator)
        scores.example_ids = [example_id for example_id, _ in order]
        scores.clues_ids = [str(clues_id) for _, (_pos, clues_id, _gold) in order]
        golds = [gold for _, (_pos, _clues_id, gold) in order]
        if order and all(x in chance for x in scores.example_ids):
            scores.chance_s1 = float(np.mean([chance[x] for x in scores.example_ids]))
        readings = MRC_GOLD if kind.gold_is_alternatives else MRC_GOLD[:1]
        for reading in readings:
            m = np.full((len(scores.annotators), len(order)), np.nan)
            for a, e in enumerate(scores.annotators):
                given = by_annotator[e]
                for i, example_id in enumerate(scores.example_ids):
                    if example_id in given:
                        texts, stored = given[example_id]
                        m[a, i] = (
                            stored
                            if reading == MRC_GOLD[0]
                            else item_s1(texts, golds[i], alternatives=True, mrc_gold=reading)
                        )
            scores.s1[reading] = m
        if not kind.gold_is_alternatives:  # the "set" reading of a single gold is the stored S1
            scores.s1[MRC_GOLD[1]] = scores.s1[MRC_GOLD[0]]
        texts_by = {e: {x: t for x, (t, _s) in given.items()} for e, given in by_annotator.items()}
        majority = majority_predictions(texts_by, kind) if texts_by else {}
        scores.majority = {scores.clues_ids[i]: majority[x] for i, x in enumerate(scores.example_ids) if x in majority}
        for reading in MRC_GOLD:
            scores.majority_s1[reading] = np.array(
                [
                    item_s1(majority[x], golds[i], alternatives=kind.gold_is_alternatives, mrc_gold=reading)
                    if x in majority
                    else np.nan
                    for i, x in enumerate(scores.example_ids)
                ]
            )
        scores.enrollment_rows = [
            {**r, "enrollment": EnrollmentRef(r["enrollment"].pk, cohort_id)} for r in rows.get(cohort_id, [])
        ]
        scores.active_seconds = {r["enrollment"].pk: r["active_seconds"] for r in scores.enrollment_rows}
        files[cohort_id] = {
            e: "".join(
                json.dumps(
                    selectors.prediction_row(kind, scores.clues_ids[i], numbers[x], given[x][0]), ensure_ascii=False
                )
                + "\n"
                for i, x in enumerate(scores.example_ids)
                if x in given
            )
            for e, given in by_annotator.items()
        }
        _agreement(scores, cohort.task.spec, texts_by)
        out[cohort_id] = scores
    return out, files


def _agreement(scores: CohortScores, spec, texts_by: dict[int, dict[int, list[str]]]) -> None:
    if len(texts_by) < 2:
        return
    ids = sorted(texts_by)
    each = (measures.pairwise_s1(texts_by[x], texts_by[y]) for i, x in enumerate(ids) for y in ids[i + 1 :])
    pairs = [p for p in each if p is not None]
    scores.mean_pairwise_s1 = sum(pairs) / len(pairs) if pairs else None
    if spec.answer_kind.from_labels:  # Fleiss' kappa needs one category per answer
        scores.fleiss_kappa = measures.label_kappa(spec, texts_by)
    scores.alpha_distance = spec.answer_kind.alpha_distance
    units: list[list] = [[texts_by[e][x] for e in ids if x in texts_by[e]] for x in scores.example_ids]
    if scores.alpha_distance == "nominal":  # one label per answer
        units = [[answer[0] if answer else "" for answer in unit] for unit in units]
    scores.krippendorff_alpha = measures.krippendorff_alpha(units, distance=scores.alpha_distance)


def _memo(study: Study) -> dict:
    """Scores already read in this process for this Study object (a request reads them once, however many
    results it builds), keyed by cohort id and fingerprint."""
    memo = getattr(study, "_results_scores", None)
    if memo is None:
        memo = {}
        study._results_scores = memo  # type: ignore[attr-defined]  # a memo on this instance, not a field
    return memo


def study_scores(study: Study) -> dict[int, CohortScores]:
    """{cohort id: CohortScores} of the study's cohorts that have annotators in results."""
    fingerprints = _fingerprints(study)
    memo = _memo(study)
    out = {c: memo[(c, fp)] for c, fp in fingerprints.items() if (c, fp) in memo}
    keys = {c: _key(study, c, fp) for c, fp in fingerprints.items() if c not in out}
    found = cached_many(list(keys.values()))
    out.update({c: found[key] for c, key in keys.items() if key in found})
    stale = [c for c in fingerprints if c not in out]
    if stale:
        fresh, files = _compute(study, list(Cohort.objects.filter(pk__in=stale).select_related("task")))
        for cohort_id, scores in fresh.items():
            scores.fingerprint = fingerprints[cohort_id]
        out.update(fresh)
        keep_many({**{keys[c]: s for c, s in fresh.items()}, **{keys[c] + ":predictions": f for c, f in files.items()}})
    for c, scores in out.items():
        memo[(c, scores.fingerprint)] = scores
    return out


def prediction_files(study: Study) -> dict[int, str]:
    """{enrollment id: its CLUES prediction file (JSONL)} of the annotators in results."""
    scores = study_scores(study)
    keys = [_key(study, c, s.fingerprint) + ":predictions" for c, s in scores.items()]
    found = cached_many(keys)
    if len(found) < len(keys):  # evicted, or the cache is unreachable: compute them again
        _files = _compute(study, list(Cohort.objects.filter(pk__in=scores).select_related("task")))[1]
        found = {_key(study, c, scores[c].fingerprint) + ":predictions": f for c, f in _files.items()}
        keep_many(found)
    return {e: text for files in found.values() for e, text in files.items()}


def study_token(study: Study) -> str:
    """What sets this study apart from any other that had, or will have, the same row id: its creation time
    and its cohorts' join tokens (random, drawn when each cohort is created). 1 query, once per Study object."""
    token = getattr(study, "_results_token", None)
    if token is None:
        tokens = sorted(Cohort.objects.filter(study=study).values_list("join_token", flat=True))
        token = hashlib.sha1(repr((study.pk, study.created_at, tokens)).encode()).hexdigest()
        study._results_token = token  # type: ignore[attr-defined]  # a memo on this instance, not a field
    return token


def study_key(study: Study, *parts, runs: str = "") -> str:
    """A cache key for something built from the study's results (and, with ``runs``, the completed runs):
    it changes whenever a cohort's results change, and never answers for another study."""
    basis = repr((parts, study_token(study), sorted((c, s.fingerprint) for c, s in study_scores(study).items()), runs))
    return f"results:built:v{VERSION}:{study.pk}:{hashlib.sha1(basis.encode()).hexdigest()}"
