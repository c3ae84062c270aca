"""How long aggregating a full study takes, and in how many SQL queries.

A full study is the paper's: 6 tasks x 4 cohorts (0/10/20/30 shots) x 3 annotators over every
CLUES test item, about 24k test answers. The script builds one with bulk_create inside a
transaction that it rolls back (the database is left as it was; it must be migrated), then
times each results selector and counts its queries (django.test.utils.CaptureQueriesContext).

    make bench BENCH=aggregate_study     (PostgreSQL with DATABASE_URL=postgres://..., else the SQLite default)
    .venv/bin/python benchmarks/aggregate_study.py [--data CLUES-JSON.zip]
        [--tasks sst2 mnli ...] [--shots 0 10 20 30] [--workers 3]

The CLUES data is imported inside the same transaction when the database lacks it (from
--data, $CLUES_DATA, ../shared/clues/CLUES-JSON.zip or the bundled demo data).
``build_study`` is reused by tests/annotation/test_performance.py.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def build_study(tasks=None, shots=(0, 10, 20, 30), workers: int = 3, *, seed: int = 0, quality: float = 0.8,
                name: str = "aggregation benchmark"):
    """A launched study whose every cohort has ``workers`` completed annotators (bulk_create).

    Each annotator answers every training and test item, the gold with probability ``quality``
    (else a wrong answer); each answer's S1 is computed with tasks_data.s1 as the service does.
    """
    from datetime import timedelta

    from django.utils import timezone

    from annotation import services
    from annotation.models import Answer, Enrollment, Worker
    from tasks_data.models import Example, Task, TrainingSetItem
    from tasks_data.registry import TASKS, AnswerKind
    from tasks_data.s1 import item_s1

    tasks = list(tasks or [slug for slug in TASKS if Task.objects.filter(slug=slug).exists()])
    study = services.create_study(name=name, tasks=tasks, shots=list(shots), workers_per_cohort=workers, launch=True)
    rng = random.Random(seed)
    start = timezone.now()

    def answer_texts(example, spec, right: bool) -> list[str]:
        kind = spec.answer_kind
        if kind is AnswerKind.LABEL:
            return [example.gold[0] if right else next(label for label in spec.labels if label != example.gold[0])]
        if kind is AnswerKind.SPANS:
            return list(example.gold) if right else ([] if example.gold else ["xyz"])
        if kind is AnswerKind.ENTITY and not right:
            others = [example.context[s:e] for s, e in example.candidates if example.context[s:e] not in example.gold]
            return others[:1] or ["xyz"]
        return list(example.gold[:1]) if right else ([] if example.gold else ["xyz"])

    for cohort in study.cohorts.select_related("task").order_by("pk"):
        spec = cohort.task.spec
        alternatives = spec.answer_kind.gold_is_alternatives
        training = [item.example for item in TrainingSetItem.objects.filter(training_set_id=cohort.training_set_id)
                    .select_related("example").order_by("position")] if cohort.training_set_id else []
        test = list(Example.objects.filter(task=cohort.task, role=Example.Role.TEST).order_by("position"))
        people = Worker.objects.bulk_create([
            Worker(platform=study.platform, external_id=f"bench-{study.pk}-{cohort.pk}-{i}") for i in range(workers)])
        plans = []
        for _ in people:
            plan = []
            for step, items in ((Answer.Step.TRAINING, training), (Answer.Step.TEST, test)):
                for position, example in enumerate(items):
                    texts = answer_texts(example, spec, rng.random() < quality)
                    score = item_s1(texts, example.gold, alternatives=alternatives)
                    plan.append((step, position, example, texts, score))
            plans.append(plan)
        enrollments = Enrollment.objects.bulk_create([
            Enrollment(cohort=cohort, worker=worker, task=cohort.task, state=Enrollment.State.COMPLETED,
                       order_seed=rng.getrandbits(62), completed_at=start,
                       training_finished_at=start if training else None,
                       training_s1=(sum(p[4] for p in plan if p[0] == Answer.Step.TRAINING) / len(training)
                                    if training else None))
            for worker, plan in zip(people, plans, strict=True)])
        Answer.objects.bulk_create([
            Answer(enrollment=enrollment, example=example, step=step, position=position, texts=texts, spans=None,
                   s1=s1, served_at=start + timedelta(seconds=position))
            for enrollment, plan in zip(enrollments, plans, strict=True)
            for step, position, example, texts, s1 in plan
        ], batch_size=5000)
    return study


def measure(study) -> list[tuple[str, float, float, int]]:
    """(name, first-call seconds, second-call seconds, queries) of each results selector on ``study``.

    The first call includes one-off costs (lazy imports in pandas, cold caches); the second is
    the steady state.
    """
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from annotation import selectors
    from results import agreement, formats
    from results.cells import human_cells
    from results.table import build_table

    steps = [
        ("human_cells", lambda: human_cells(study)),
        ("table render (md)", lambda: formats.render(build_table(human_cells(study)), "md")),
        ("study_grid", lambda: selectors.study_grid(study)),
        ("annotator_rows", lambda: selectors.annotator_rows(study)),
        ("learning_curves", lambda: agreement.learning_curves(study)),
        ("cohort_agreement", lambda: agreement.cohort_agreement(study)),
    ]
    results = []
    for name, run in steps:
        timings = []
        for _ in range(2):
            with CaptureQueriesContext(connection) as queries:
                began = time.perf_counter()
                run()
                timings.append(time.perf_counter() - began)
        results.append((name, *timings, len(queries)))
    return results


class _Rollback(Exception):
    pass


def _data_path(given: str | None) -> Path:
    candidates = [Path(given)] if given else []
    if os.environ.get("CLUES_DATA"):
        candidates.append(Path(os.environ["CLUES_DATA"]))
    candidates += [ROOT.parent / "shared" / "clues" / "CLUES-JSON.zip", ROOT / "tasks_data" / "demo" / "CLUES-JSON"]
    for path in candidates:
        if path.exists():
            return path
    raise SystemExit("no CLUES data found: pass --data CLUES-JSON.zip")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", help="CLUES-JSON.zip or folder, imported (and rolled back) if the DB lacks it")
    parser.add_argument("--tasks", nargs="+", default=None, help="task slugs (default: all six)")
    parser.add_argument("--shots", nargs="+", type=int, default=[0, 10, 20, 30])
    parser.add_argument("--workers", type=int, default=3)
    args = parser.parse_args(argv)

    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "clues_platform.settings")
    import django

    django.setup()
    from django.db import connection, transaction

    from annotation.models import Answer
    from tasks_data.importer import import_release
    from tasks_data.models import Task
    from tasks_data.registry import TASKS

    if "annotation_answer" not in connection.introspection.table_names():
        print(f"the database ({connection.vendor}: {connection.settings_dict['NAME']}) is not migrated: run "
              "`make run` once, or `make manage ARGS=migrate`", file=sys.stderr)
        return 2
    print(f"database: {connection.vendor}")
    try:
        with transaction.atomic():
            wanted = args.tasks or list(TASKS)
            if Task.objects.filter(slug__in=wanted).count() < len(wanted):
                began = time.perf_counter()
                import_release(_data_path(args.data))
                print(f"imported the CLUES data in {time.perf_counter() - began:.1f} s (rolled back at the end)")
            began = time.perf_counter()
            study = build_study(wanted, args.shots, args.workers)
            answers = Answer.objects.filter(enrollment__cohort__study=study)
            print(f"built study {study.pk}: {study.cohorts.count()} cohorts, "
                  f"{answers.filter(step='test').count()} test answers, {answers.count()} answers in all, "
                  f"in {time.perf_counter() - began:.1f} s")
            with connection.cursor() as cursor:
                # Fresh planner statistics, as a live database has them (autovacuum) but a just-filled one lacks.
                # One statement per call: SQLite's driver runs only one at a time.
                for table in ("annotation_answer", "annotation_enrollment", "annotation_cohort"):
                    cursor.execute(f"ANALYZE {table}")
            print(f"{'':20s} {'first':>11s} {'again':>11s}")
            for name, first, again, queries in measure(study):
                print(f"{name:20s} {first * 1000:8.1f} ms {again * 1000:8.1f} ms {queries:3d} queries")
            raise _Rollback
    except _Rollback:
        print("rolled back: the database is as it was")
    return 0


if __name__ == "__main__":
    sys.exit(main())
