"""How long a paper-sized study's results take, cold and warm, and in how many SQL queries.

A full study is the paper's: 6 tasks x 4 cohorts (0/10/20/30 shots) x 3 annotators over every
CLUES test item, about 24k test answers, with model rows (one method, 5 splits of each task and
k > 0 shots). The script builds one with bulk_create (committed: new processes read it; everything it
made is deleted at the end, the database is left as it was; it must be migrated), then:

1. cold and warm, as a researcher meets them: the results page, the API's results and the table's CSV,
   each first requested in a new process that loads the application as gunicorn does
   (``clues_platform.wsgi``) with the cache flushed (cold), then ``--repeats`` times more (warm: the
   median); ``--cold-runs`` runs of each, every run printed, then the medians. Before them, one new
   process reads the page of the study just built (nothing stored yet: every cohort scored).
2. in this process, each results selector (time, queries: django.test.utils.CaptureQueriesContext),
   then every results request (the page, the API's results, every download and export) through
   Django's test client: the first request (cache flushed) and the median of the next ``--repeats``,
   and the page and API after one more annotator completed a cohort (that cohort is scored again).

    make bench BENCH=aggregate_study     (PostgreSQL with DATABASE_URL=postgres://..., else the SQLite default)
    .venv/bin/python benchmarks/aggregate_study.py [--data CLUES-JSON.zip]
        [--tasks sst2 mnli ...] [--shots 0 10 20 30] [--workers 3] [--repeats 7] [--cold-runs 5]

The CLUES data is imported first when the database lacks it (from --data, $CLUES_DATA,
../shared/clues/CLUES-JSON.zip or the bundled demo data), and deleted at the end with the rest.
With ``CACHE_URL`` (Redis) the cold runs flush that cache. ``build_study`` is reused by
tests/annotation/test_performance.py.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def build_study(
    tasks=None,
    shots=(0, 10, 20, 30),
    workers: int = 3,
    *,
    seed: int = 0,
    quality: float = 0.8,
    name: str = "aggregation benchmark",
):
    """A launched study whose every cohort has ``workers`` completed annotators (bulk_create).

    Each annotator answers every training and test item, the gold with probability ``quality``
    (else a wrong answer); each answer's S1 is computed with tasks_data.s1 as the service does.
    """
    from datetime import timedelta

    from django.utils import timezone

    from annotation import services
    from annotation.models import Answer, Enrollment, Worker
    from tasks_data.models import Example, Task, TrainingSetItem
    from tasks_data.registry import CLUES_TASKS
    from tasks_data.s1 import item_s1

    tasks = list(tasks or [slug for slug in CLUES_TASKS if Task.objects.filter(slug=slug).exists()])
    study = services.create_study(name=name, tasks=tasks, shots=list(shots), workers_per_cohort=workers, launch=True)
    rng = random.Random(seed)
    start = timezone.now()

    def answer_texts(example, spec, right: bool) -> list[str]:
        return spec.answer_kind.simulated_texts(spec, example, example.gold, right=right)

    for cohort in study.cohorts.select_related("task").order_by("pk"):
        spec = cohort.task.spec
        alternatives = spec.answer_kind.gold_is_alternatives
        training = (
            [
                item.example
                for item in TrainingSetItem.objects.filter(training_set_id=cohort.training_set_id)
                .select_related("example")
                .order_by("position")
            ]
            if cohort.training_set_id
            else []
        )
        test = list(Example.objects.filter(task=cohort.task, role=Example.Role.TEST).order_by("position"))
        people = Worker.objects.bulk_create(
            [Worker(platform=study.platform, external_id=f"bench-{study.pk}-{cohort.pk}-{i}") for i in range(workers)]
        )
        plans = []
        for _ in people:
            plan = []
            for step, items in ((Answer.Step.TRAINING, training), (Answer.Step.TEST, test)):
                for position, example in enumerate(items):
                    texts = answer_texts(example, spec, rng.random() < quality)
                    score = item_s1(texts, example.gold, alternatives=alternatives)
                    plan.append((step, position, example, texts, score))
            plans.append(plan)
        enrollments = Enrollment.objects.bulk_create(
            [
                Enrollment(
                    cohort=cohort,
                    worker=worker,
                    task=cohort.task,
                    state=Enrollment.State.COMPLETED,
                    order_seed=rng.getrandbits(62),
                    completed_at=start,
                    training_finished_at=start if training else None,
                    training_s1=(
                        sum(p[4] for p in plan if p[0] == Answer.Step.TRAINING) / len(training) if training else None
                    ),
                )
                for worker, plan in zip(people, plans, strict=True)
            ]
        )
        Answer.objects.bulk_create(
            [
                Answer(
                    enrollment=enrollment,
                    example=example,
                    step=step,
                    position=position,
                    texts=texts,
                    spans=None,
                    s1=s1,
                    served_at=start + timedelta(seconds=position),
                )
                for enrollment, plan in zip(enrollments, plans, strict=True)
                for step, position, example, texts, s1 in plan
            ],
            batch_size=5000,
        )
    return study


def add_model_runs(study, *, splits: int = 5, quality: float = 0.6, seed: int = 1) -> int:
    """Completed baseline runs beside the study (one method, every task and k > 0 shots, ``splits`` each),
    each predicting the gold with probability ``quality``; returns how many."""
    from baselines.models import BaselineRun
    from tasks_data.models import Example, Task
    from tasks_data.s1 import item_s1

    rng = random.Random(seed)
    runs = []
    for task in Task.objects.filter(slug__in=study.tasks):
        alternatives = task.spec.answer_kind.gold_is_alternatives
        test = list(Example.objects.filter(task=task, role=Example.Role.TEST).order_by("position"))
        for shots in [k for k in study.shots if k]:
            for split in range(1, splits + 1):
                predictions = [
                    {"id": e.clues_id, "prediction": list(e.gold[:1]) if rng.random() < quality else ["xyz"]}
                    for e in test
                ]
                scores = [
                    item_s1(p["prediction"], e.gold, alternatives=alternatives)
                    for p, e in zip(predictions, test, strict=True)
                ]
                runs.append(
                    BaselineRun(
                        task=task,
                        method="bench",
                        model="bench-model",
                        shots=shots,
                        split=split,
                        seed=0,
                        status=BaselineRun.Status.COMPLETED,
                        s1=sum(scores) / len(scores),
                        predictions=predictions,
                        item_scores=scores,
                    )
                )
    BaselineRun.objects.bulk_create(runs)
    return len(runs)


def request_urls(study) -> list[tuple[str, str]]:
    """(name, URL) of every results request: the page, the API's results, every download and export."""
    from results import exports, formats

    pk = study.pk
    urls = [
        ("results page", f"/dashboard/studies/{pk}/results/"),
        ("API results", f"/api/studies/{pk}/results/"),
        ("items page", f"/dashboard/studies/{pk}/results/items/"),
    ]
    for fmt in formats.TABLE_FORMATS:
        urls.append((f"table .{fmt}", f"/dashboard/studies/{pk}/results/download.{fmt}"))
        urls.append((f"table .{fmt} + models", f"/dashboard/studies/{pk}/results/download.{fmt}?models=1"))
    for kind in exports.EXPORT_KINDS:
        if kind in ("table", "predictions"):
            continue
        for fmt in formats.ROW_FORMATS:
            urls.append((f"API {kind} .{fmt}", f"/api/studies/{pk}/export/{kind}/?fmt={fmt}"))
    urls.append(("pay .csv", f"/dashboard/studies/{pk}/results/pay.csv"))
    urls.append(("API table json + models", f"/api/studies/{pk}/export/table/?fmt=json&with_baselines=1"))
    urls.append(("predictions .zip", f"/dashboard/studies/{pk}/results/predictions.zip"))
    return urls


def measure_requests(study, client, repeats: int = 7) -> list[tuple[str, float, float, int, int | None]]:
    """(name, first seconds, median seconds of ``repeats`` more, queries of the last, status) per request."""
    import statistics

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    out = []
    for name, url in request_urls(study):
        timings, status, queries = [], None, 0
        for _ in range(1 + repeats):
            with CaptureQueriesContext(connection) as captured:
                began = time.perf_counter()
                response = client.get(url)
                if getattr(response, "streaming", False):
                    b"".join(response.streaming_content)
                timings.append(time.perf_counter() - began)
            status, queries = response.status_code, len(captured)
        out.append((name, timings[0], statistics.median(timings[1:] or timings), queries, status))
    return out


def build_study_extra_annotator(study) -> int:
    """One more completed annotator in the study's first cohort (bulk_create, as ``build_study``); its id."""
    from django.utils import timezone

    from annotation.models import Answer, Enrollment, Worker
    from annotation.results_changes import results_changed
    from tasks_data.models import Example

    cohort = study.cohorts.select_related("task").order_by("pk").first()
    worker = Worker.objects.create(platform=study.platform, external_id=f"bench-{study.pk}-extra")
    enrollment = Enrollment.objects.create(
        cohort=cohort,
        worker=worker,
        task=cohort.task,
        state=Enrollment.State.COMPLETED,
        order_seed=1,
        completed_at=timezone.now(),
    )
    test = Example.objects.filter(task=cohort.task, role=Example.Role.TEST).order_by("position")
    Answer.objects.bulk_create(
        [
            Answer(enrollment=enrollment, example=e, step=Answer.Step.TEST, position=i, texts=list(e.gold[:1]), s1=1.0)
            for i, e in enumerate(test)
        ]
    )
    results_changed(enrollment=enrollment)  # what the completing transition calls (bulk_create bypasses it)
    return cohort.pk


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
        results.append((name, timings[0], timings[1], len(queries)))
    return results


COLD_URLS = ("results page", "API results", "table .csv")


def serve(study_pk: int, name: str, username: str, repeats: int) -> dict:
    """In a new process: load the application as gunicorn does, flush the cache, request ``name`` once
    (cold), then ``repeats`` times more (warm)."""
    import statistics

    began = time.perf_counter()
    import clues_platform.wsgi  # noqa: F401 - the application as gunicorn loads it, with what it imports at start

    started = time.perf_counter() - began
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.cache import cache
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from annotation.models import Study

    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    url = dict(request_urls(Study.objects.get(pk=study_pk)))[name]
    cache.clear()
    client = Client()
    client.force_login(get_user_model().objects.get(username=username))
    timings, cpu, queries, status = [], [], [], 0
    for _ in range(1 + repeats):
        with CaptureQueriesContext(connection) as captured:
            began, began_cpu = time.perf_counter(), time.process_time()
            response = client.get(url)
            if getattr(response, "streaming", False):
                b"".join(response.streaming_content)  # type: ignore[attr-defined]  # a streaming response has it
            timings.append(time.perf_counter() - began)
            cpu.append(time.process_time() - began_cpu)
        queries.append(len(captured))
        status = response.status_code
    return {
        "start": started,
        "cold": timings[0],
        "cold_cpu": cpu[0],
        "warm": statistics.median(timings[1:] or timings),
        "queries": queries[0],
        "status": status,
    }


def serve_in_new_process(study_pk: int, name: str, username: str, repeats: int) -> dict:
    import json
    import subprocess

    argv = [sys.executable, __file__, "--serve", str(study_pk), name, username, "--repeats", str(repeats)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode:
        raise RuntimeError(f"{name}: the new process failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def cold_and_warm(study, username: str, *, runs: int, repeats: int) -> None:
    """Print each cold run of the page, the API and the CSV (a new process each), then the medians. "cpu" is the
    request's CPU time in this process (the database's aside): on a busy machine, what the wall time would be
    on a quiet one, give or take the queries."""
    import statistics

    def line(label: str, got: dict) -> str:
        warm = f"{got['warm'] * 1000:5.0f} ms" if "warm" in got else ""
        return (
            f"{label:34s} {got['start'] * 1000:5.0f} ms {got['cold'] * 1000:5.0f} ms {got['cold_cpu'] * 1000:5.0f} ms "
            f"{warm:>8s} {got['queries']:8d} {got['status']}"
        )

    print(f"\n{'cold and warm, a new process each':34s} {'start':>8s} {'cold':>8s} {'cpu':>8s} {'warm':>8s} queries")
    first = serve_in_new_process(study.pk, COLD_URLS[0], username, 0)
    del first["warm"]
    print(line("results page, nothing stored yet", first))
    found: dict[str, list[dict]] = {name: [] for name in COLD_URLS}
    for run in range(1, runs + 1):
        for name in COLD_URLS:
            got = serve_in_new_process(study.pk, name, username, repeats)
            found[name].append(got)
            print(line(f"{name}, run {run}", got))
    print(f"\n{'median of ' + str(runs) + ' runs':34s} {'':8s} {'cold':>8s} {'cpu':>8s} {'warm':>8s}")
    for name, each in found.items():
        cold, cpu, warm = (statistics.median(g[k] for g in each) for k in ("cold", "cold_cpu", "warm"))
        print(f"{name:34s} {'':8s} {cold * 1000:5.0f} ms {cpu * 1000:5.0f} ms {warm * 1000:5.0f} ms")
    slowest = max(statistics.median(g["cold"] for g in each) for each in found.values())
    print(f"slowest cold median: {slowest * 1000:.0f} ms (target: under 1 s)")


def remove(made: dict) -> None:
    """Delete what the run made, children first (answers are final for the platform, not for this script)."""
    from django.contrib.auth import get_user_model

    from annotation.models import Answer, AuditEvent, Enrollment, Study, Worker
    from baselines.models import BaselineRun
    from tasks_data.models import Task

    studies = Study.objects.filter(pk__in=made["studies"])
    BaselineRun.objects.filter(pk__in=made["runs"]).delete()
    Answer.objects.filter(enrollment__cohort__study__in=studies).delete()
    AuditEvent.objects.filter(study__in=studies).delete()
    workers = list(Enrollment.objects.filter(cohort__study__in=studies).values_list("worker_id", flat=True))
    Enrollment.objects.filter(cohort__study__in=studies).delete()
    Worker.objects.filter(pk__in=workers).delete()
    studies.delete()  # its cohorts, their stored scores and fits
    get_user_model().objects.filter(pk__in=made["users"]).delete()
    Task.objects.filter(pk__in=made["tasks"]).delete()


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
    parser.add_argument("--data", help="CLUES-JSON.zip or folder, imported (and deleted after) if the DB lacks it")
    parser.add_argument("--tasks", nargs="+", default=None, help="task slugs (default: all six)")
    parser.add_argument("--shots", nargs="+", type=int, default=[0, 10, 20, 30])
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=7, help="requests timed after the first (median)")
    parser.add_argument("--cold-runs", type=int, default=5, help="new processes for each cold request")
    parser.add_argument(
        "--fit", action="store_true", help="run fit_results first (ability scale, Dawid-Skene; needs the model set)"
    )
    parser.add_argument("--serve", nargs=3, metavar=("STUDY", "REQUEST", "USER"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "clues_platform.settings")
    if args.serve:  # a new process of the cold runs
        import json

        study_pk, name, username = args.serve
        print(json.dumps(serve(int(study_pk), name, username, args.repeats)))
        return 0
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.cache import cache
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor
    from django.test import Client

    from annotation.models import Answer
    from baselines.models import BaselineRun
    from results.apps import import_for_requests
    from tasks_data.importer import import_release
    from tasks_data.models import Task
    from tasks_data.registry import CLUES_TASKS

    executor = MigrationExecutor(connection)
    if executor.migration_plan(executor.loader.graph.leaf_nodes()):
        print(
            f"the database ({connection.vendor}: {connection.settings_dict['NAME']}) is not migrated: run "
            "`make run` once, or `make manage ARGS=migrate`",
            file=sys.stderr,
        )
        return 2
    print(f"database: {connection.vendor}")
    made: dict[str, list[int]] = {"studies": [], "runs": [], "users": [], "tasks": []}
    try:
        wanted = args.tasks or list(CLUES_TASKS)
        if Task.objects.filter(slug__in=wanted).count() < len(wanted):
            before = set(Task.objects.values_list("pk", flat=True))
            began = time.perf_counter()
            import_release(_data_path(args.data))
            made["tasks"] = list(Task.objects.exclude(pk__in=before).values_list("pk", flat=True))
            print(f"imported the CLUES data in {time.perf_counter() - began:.1f} s (deleted at the end)")
        began = time.perf_counter()
        study = build_study(wanted, args.shots, args.workers)
        made["studies"].append(study.pk)
        answers = Answer.objects.filter(enrollment__cohort__study=study)
        print(
            f"built study {study.pk}: {study.cohorts.count()} cohorts, "
            f"{answers.filter(step='test').count()} test answers, {answers.count()} answers in all, "
            f"in {time.perf_counter() - began:.1f} s"
        )
        with connection.cursor() as cursor:
            # Fresh planner statistics, as a live database has them (autovacuum) but a just-filled one lacks.
            # One statement per call: SQLite's driver runs only one at a time.
            for table in ("annotation_answer", "annotation_enrollment", "annotation_cohort"):
                cursor.execute(f"ANALYZE {table}")
        began = time.perf_counter()
        before = set(BaselineRun.objects.values_list("pk", flat=True))
        runs = add_model_runs(study)
        made["runs"] = list(BaselineRun.objects.exclude(pk__in=before).values_list("pk", flat=True))
        print(f"added {runs} completed model runs in {time.perf_counter() - began:.1f} s")
        if args.fit:
            from results.fits import fit_study

            began = time.perf_counter()
            stored = fit_study(study)
            print(f"fit_results: {len(stored)} fits stored in {time.perf_counter() - began:.1f} s")
        researcher = get_user_model().objects.create_superuser(f"bench-researcher-{study.pk}", password=None)
        made["users"].append(researcher.pk)
        print(f"cache: {settings.CACHES['default']['BACKEND'].rsplit('.', 1)[-1]}")
        if args.cold_runs:
            cold_and_warm(study, researcher.username, runs=args.cold_runs, repeats=args.repeats)

        import_for_requests()  # as the WSGI application does as it starts
        cache.clear()
        print(f"\nin this process, the cache flushed first\n{'':20s} {'first':>11s} {'again':>11s}")
        for name, first, again, queries in measure(study):
            print(f"{name:20s} {first * 1000:8.1f} ms {again * 1000:8.1f} ms {queries:3d} queries")
        # The test client's host, without setup_test_environment (its instrumented template rendering
        # would be timed too).
        settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
        client = Client()
        client.force_login(researcher)
        print(f"\n{'request':28s} {'first':>10s} {'median':>10s} {'queries':>8s} status")
        slowest = 0.0
        for name, first, median, queries, status in measure_requests(study, client, args.repeats):
            slowest = max(slowest, median)
            print(f"{name:28s} {first * 1000:7.0f} ms {median * 1000:7.0f} ms {queries:8d} {status}")
        print(f"slowest median: {slowest * 1000:.0f} ms (target: under 300 ms)")
        began = time.perf_counter()
        extra = build_study_extra_annotator(study)
        print(
            f"\none more annotator completed cohort {extra} ({time.perf_counter() - began:.1f} s to build); "
            "the next requests:"
        )
        for name, first, _median, queries, status in measure_requests(study, client, 0)[:2]:
            print(f"{name:28s} {first * 1000:7.0f} ms {'':10s} {queries:8d} {status}")
    finally:
        remove(made)
        print("deleted what it made: the database is as it was")
    return 0


if __name__ == "__main__":
    sys.exit(main())
