"""Planning and executing baseline runs; Django only orchestrates, ``fewshot_models`` adapts.

A run is claimed, executed and stored under a row lock, by one process at a time (``runners``), and completed
runs are never run or stored again: a re-run of ``run_baselines`` skips them and retries every other one (however
many attempts it took before: each is counted), a second process leaves a running run to its runner, and a Celery
message delivered again (a worker died, acks_late) finds the run done, running, or retries it a bounded number of
times.
"""

from __future__ import annotations

import contextlib
import json
import statistics
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from fewshot_models import METHODS
from fewshot_models.backends import BACKENDS, backends_for
from fewshot_models.base import AdapterConfig, AdapterExample
from tasks_data import registry
from tasks_data.models import Example, Task, TrainingSet
from tasks_data.s1 import corpus_s1
from tasks_data.scoring import item_scores
from tasks_data.selectors import test_examples

from . import runners
from .models import BaselineRun
from .store import RunStore

MAX_ATTEMPTS = 3  # deliveries of one queued message whose worker died each time, before the run is marked failed
DEFAULT_METHODS = ("ft",)
NOT_IMPORTED = "no data imported (manage.py import_clues; a task of one's own: manage.py import_task)"


@dataclass
class Skipped:
    task: str
    method: str
    reason: str


def backend_of(method: str, backend: str | None, server: str) -> str | None:
    """The backend a method's runs use: ``backend`` where it can run there (None: it cannot); else, with a
    server given, the first of its backends that is served, else its first (its default); "" for no model."""
    names = backends_for(METHODS[method].needs)
    if not names:
        return ""
    if backend:
        return backend if backend in names else None
    remote = [b for b in names if BACKENDS[b].remote]
    return remote[0] if server and remote else names[0]


def models_by_method(
    methods: Sequence[str], models: Sequence[str] | Mapping[str, Sequence[str]] | None
) -> dict[str, list[str] | None]:
    """Which models each method runs: every model for every method (a list), or per method (a mapping:
    ``{"ft": [PATH], "icl": [NAME]}``; a method the mapping leaves out runs its default model)."""
    if models is None or not isinstance(models, Mapping):
        return {m: (list(models) if models else None) for m in methods}
    stray = [m for m in models if m not in methods]
    if stray:
        raise ValueError(f"--models names a model for {', '.join(stray)}, not among --methods {' '.join(methods)}")
    return {m: (list(models[m]) if models.get(m) else None) for m in methods}


def method_settings(
    methods: Sequence[str], settings: Sequence[tuple[str, object]]
) -> tuple[dict[str, dict], list[str]]:
    """A sweep's ``--set`` settings per method: ``METHOD.KEY=VALUE`` for that method, ``KEY=VALUE`` for each method
    that takes the key (its ``defaults``) and ignored by the others. -> (each method's settings, one line per method
    saying what it took and what it ignored). A setting no method takes, a method's own setting it does not take,
    or one for a method not in the sweep, is a ``ValueError`` naming what the methods take: nothing runs."""
    takes = {m: set(METHODS[m].defaults) for m in methods}
    per_method: dict[str, dict] = {m: {} for m in methods}
    ignored: dict[str, list[str]] = {m: [] for m in methods}
    for key, value in settings:
        method, dot, name = key.partition(".")
        if dot and method in METHODS:
            if method not in takes:
                raise ValueError(f"--set {key}: {method} is not among --methods {' '.join(methods)}")
            if name not in takes[method]:
                raise ValueError(
                    f"--set {key}: {method} has no setting {name!r}; {method} takes {_known(takes[method])}"
                )
            per_method[method][name] = value
            continue
        if not any(key in keys for keys in takes.values()):
            known = "; ".join(f"{m} takes {_known(keys)}" for m, keys in takes.items())
            raise ValueError(f"--set {key}: no method of this sweep takes {key!r} ({known})")
        for m, keys in takes.items():
            if key in keys:
                per_method[m][key] = value
            else:
                ignored[m].append(f"{key}={json.dumps(value)}")
    lines = []
    for m in methods:
        took = ", ".join(f"{k}={json.dumps(v)}" for k, v in per_method[m].items()) or "nothing"
        lines.append(f"settings: {m} took {took}" + (f"; ignored {', '.join(ignored[m])}" if ignored[m] else ""))
    return per_method, lines


def _known(keys) -> str:
    return ", ".join(sorted(keys)) if keys else "no settings"


def plan_runs(
    *,
    tasks: Sequence[str] | None = None,
    methods: Sequence[str] = DEFAULT_METHODS,
    models: Sequence[str] | Mapping[str, Sequence[str]] | None = None,
    shots: Sequence[int] | None = None,
    splits: Sequence[int] | None = None,
    seed: int = 42,
    config: dict | None = None,
    server: str = "",
    seeds: Sequence[int] | None = None,
    backend: str | None = None,
    settings: Mapping[str, dict] | None = None,
) -> tuple[list[BaselineRun], list[Skipped]]:
    """Create (or find) the BaselineRun rows of a sweep; methods that do not apply are skipped.

    ``backend``: where the methods' models run (a name of ``BACKENDS``; a method that cannot run there is
    skipped); None: each method's default, or, with a ``server`` given, a backend that reaches it.
    ``server``: the base URL of the server of the remote backends. ``seeds``: several seeds (sampling).
    ``tasks``: None, every task of the registry with data imported (the others skipped, named); ``shots`` and
    ``splits``: None, each task's own training-file sizes and splits. ``settings``: each method's own settings
    (``method_settings``), over ``config["extra"]``."""
    tasks, skipped = _tasks_of_sweep(tasks)
    per_method, server = _checked_sweep(tasks, methods, models, server, backend)
    seeds = list(seeds or [seed])
    task_rows = {t.slug: t for t in Task.objects.filter(slug__in=tasks)}
    missing = [t for t in tasks if t not in task_rows]
    if missing:
        raise ValueError(f"no data imported for: {', '.join(missing)} (run manage.py import_clues)")
    files = set(TrainingSet.objects.filter(task__slug__in=tasks).values_list("task__slug", "shots", "split"))
    runs = []
    for slug in tasks:
        spec = registry.get_task(slug)
        for method in methods:
            adapter = METHODS[method]()
            reason = adapter.applies_to(spec)
            if reason:
                skipped.append(Skipped(slug, method, reason))
                continue
            runs_on = backend_of(method, backend, server)
            if runs_on is None:
                skipped.append(
                    Skipped(slug, method, f"runs on {' or '.join(backends_for(adapter.needs))}, not {backend}")
                )
                continue
            over_server = bool(runs_on) and BACKENDS[runs_on].remote
            names = list(per_method[method] or [adapter.default_model]) if adapter.needs_model else [""]
            if adapter.needs_model and not all(names):
                raise ValueError(
                    f"method {method!r} has no default model here: name one with --models "
                    + ("(the model's name as the server lists it)" if over_server else "(a local checkpoint folder)")
                )
            run_config = dict(config or {})
            if settings and settings.get(method):
                run_config["extra"] = {**run_config.get("extra", {}), **settings[method]}
            for name in names:
                for k in spec.shots if shots is None else shots:
                    if k == 0 and not adapter.zero_shot:
                        skipped.append(Skipped(slug, method, "needs training examples (0 shots)"))
                        continue
                    task_splits = sorted(spec.splits if splits is None else splits)
                    for s in task_splits[:1] if k == 0 else task_splits:  # no training file: one split
                        if k and (slug, k, s) not in files:
                            skipped.append(Skipped(slug, method, f"no training file {k}-shot split {s}"))
                            continue
                        where = (runs_on, server if over_server else "")
                        runs += [
                            _run_row(task_rows[slug], method, name, where, k, s, one_seed, run_config)
                            for one_seed in seeds
                        ]
    return runs, skipped


def _tasks_of_sweep(tasks: Sequence[str] | None) -> tuple[list[str], list[Skipped]]:
    """The sweep's tasks: those given, or every task of the registry with data imported (the others skipped)."""
    if tasks is not None:
        return list(tasks), []
    imported = set(Task.objects.values_list("slug", flat=True))
    every = registry.tasks()
    return [s for s in every if s in imported], [Skipped(s, "", NOT_IMPORTED) for s in every if s not in imported]


def _checked_sweep(tasks, methods, models, server: str, backend: str | None) -> tuple[dict, str]:
    """The sweep's names checked: -> (models per method, the server's normalised base URL or "")."""
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise ValueError(f"unknown method(s): {', '.join(unknown)}; known: {', '.join(METHODS)}")
    bad_tasks = [t for t in tasks if registry.find_task(t) is None]
    if bad_tasks:
        raise ValueError(registry.unknown_tasks(bad_tasks, known=registry.tasks()))
    if backend and backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; known: {', '.join(BACKENDS)}")
    if server:
        from fewshot_models.backends.http import normalise_base_url

        server = normalise_base_url(server)
    remote = {m: backend_of(m, backend, server) for m in methods}
    needs_server = [m for m, b in remote.items() if b and BACKENDS[b].remote]
    if needs_server and not server:
        raise ValueError(
            f"--methods {' '.join(needs_server)} run on an OpenAI-compatible server: give its base URL "
            "with --api-base (or OPENAI_BASE_URL), e.g. http://127.0.0.1:8000/v1"
        )
    return models_by_method(methods, models), server


def _run_row(
    task: Task, method: str, model: str, where: tuple[str, str], shots: int, split: int, seed: int, config: dict
) -> BaselineRun:
    run, created = BaselineRun.objects.get_or_create(
        task=task,
        method=method,
        model=model,
        backend=where[0],
        server=where[1],
        shots=shots,
        split=split,
        seed=seed,
        defaults={"config": config},
    )
    if not created and run.status != BaselineRun.Status.COMPLETED and run.config != config:
        # a run to retry takes this sweep's settings (concurrency, timeout, --set); its identity is unchanged
        BaselineRun.objects.filter(pk=run.pk).exclude(status=BaselineRun.Status.COMPLETED).update(config=config)
        run.config = config
    return run


def to_adapter_example(example: Example) -> AdapterExample:
    return AdapterExample(
        uid=example.clues_id,  # what a run's notes name it by
        context=example.context,
        question=example.question,
        answers=tuple(example.gold),
        hypothesis=example.hypothesis,
        candidates=tuple(tuple(c) for c in example.candidates),
        answer_starts=tuple(example.answer_starts or ()),
        gold_unproducible=example.gold_unproducible,
    )


def _claim(run_id: int, *, queued_at: int | None) -> BaselineRun | None:
    """Mark a run as running by this process (one more attempt); None when there is nothing to do here: it is
    completed, another live process runs it (the run is left as it is), or the Celery message that asked for it
    was delivered ``MAX_ATTEMPTS`` times, its worker dying each time (``queued_at``: the run's attempts when the
    message was sent; None: asked for here and now, which is always tried)."""
    with transaction.atomic():
        run = BaselineRun.objects.select_for_update().select_related("task").get(pk=run_id)
        if run.status == BaselineRun.Status.COMPLETED:
            return None
        if run.status == BaselineRun.Status.RUNNING and runners.held_by_another(run.runner):
            return None
        if queued_at is not None and run.attempts - queued_at >= MAX_ATTEMPTS:
            if run.status != BaselineRun.Status.FAILED:
                run.status = BaselineRun.Status.FAILED
                run.error = run.error or (
                    f"gave up after {run.attempts - queued_at} attempts of one queued message (the worker died each "
                    "time); run the command again to retry it"
                )
                run.finished_at = timezone.now()
                run.save(update_fields=["status", "error", "finished_at"])
            return None
        run.status, run.attempts, run.started_at = BaselineRun.Status.RUNNING, run.attempts + 1, timezone.now()
        run.error, run.runner = "", runners.this_process()
        run.usage = _killed_attempts(run.usage)
        run.save(update_fields=["status", "attempts", "started_at", "error", "usage", "runner"])
        return run


def _killed_attempts(usage: dict | None) -> dict | None:
    """A new attempt's usage: the requests of the attempts before it that did not complete (their tallies, as
    they last recorded them), counted apart from its own."""
    if not usage:
        return None
    killed = int(usage.get("killed_attempt_requests") or 0) + int(usage.get("requests") or 0)
    return {"killed_attempt_requests": killed}


def execute_run(
    run_id: int,
    *,
    device: str = "auto",
    progress: Callable[[str, int, int], None] | None = None,
    queued_at: int | None = None,
) -> BaselineRun:
    """Adapt and predict for one run, score it with S1, store it once. Failures are recorded. A run another
    process is running is left to it: the run comes back still running, naming its runner (``runners``).
    ``queued_at``: the run's attempts when a Celery message asked for it (see ``_claim``)."""
    with runners.hold(run_id) as held:
        run = _claim(run_id, queued_at=queued_at) if held else None
        if run is None:
            return BaselineRun.objects.select_related("task").get(pk=run_id)
        return _execute(run, device, progress)


def _execute(run: BaselineRun, device: str, progress) -> BaselineRun:
    try:
        spec = run.task.spec
        train = []
        if run.shots:  # zero shots: no training file, the description alone
            training_set = TrainingSet.objects.get(task=run.task, shots=run.shots, split=run.split)
            train = [
                to_adapter_example(item.example)
                for item in training_set.items.select_related("example").order_by("position")
            ]
        tests = list(test_examples(run.task))
        adapter = METHODS[run.method]()
        settings = {k: v for k, v in run.config.items() if k not in ("extra", "server", "store", "backend")}
        config = AdapterConfig(
            model=adapter.model_path(run.model),
            seed=run.seed,
            device=device,
            **settings,
            extra=dict(run.config.get("extra", {})),
            backend=run.backend,
            server=run.server,
            store=RunStore(run) if run.server else None,
        )
        result = adapter.run(spec, train, [to_adapter_example(e) for e in tests], config, progress=progress)
        if len(result.predictions) != len(tests):
            raise RuntimeError(f"{len(result.predictions)} predictions for {len(tests)} test items")
        scores = item_scores(run.task, tests, result.predictions)
    except Exception as exc:  # noqa: BLE001 - any failure is this run's, and the sweep goes on
        _fail(run, f"{type(exc).__name__}: {exc}\n\n{traceback.format_exc(limit=8)}")
        return BaselineRun.objects.select_related("task").get(pk=run.pk)
    except BaseException as exc:  # Ctrl-C (or the process told to stop): recorded, then let through
        _fail(run, f"interrupted ({type(exc).__name__}); run the command again to retry it")
        raise
    # Stored only if this attempt still owns the run: a duplicate delivery cannot store twice.
    BaselineRun.objects.filter(pk=run.pk, status=BaselineRun.Status.RUNNING, attempts=run.attempts).update(
        status=BaselineRun.Status.COMPLETED,
        finished_at=timezone.now(),
        device=result.device,
        train_seconds=result.train_seconds,
        predict_seconds=result.predict_seconds,
        examples_per_second=result.train_examples_per_second,
        peak_gpu_memory_bytes=result.peak_gpu_memory_bytes,
        s1=corpus_s1(scores),
        predictions=[{"id": e.clues_id, "prediction": list(p)} for e, p in zip(tests, result.predictions, strict=True)],
        item_scores=scores,
        notes=result.notes,
        usage=None if result.usage is None else {**result.usage, **(run.usage or {})},
        demonstrations=demonstrations_held(result.demonstrations, len(train)),
        scoring=result.scoring,
    )
    return BaselineRun.objects.select_related("task").get(pk=run.pk)


def demonstrations_held(used: Sequence[int] | None, of: int) -> dict | None:
    """How many training examples the run's prompts held per test item: ``{"min", "median", "max", "of"}`` (``of``:
    the training file's examples); None for a method whose prompts hold none (one that trains)."""
    if used is None or not used:
        return None
    return {"min": min(used), "median": statistics.median(used), "max": max(used), "of": of}


def _fail(run: BaselineRun, error: str) -> None:
    # only this attempt's: a run another attempt has taken since is not this one's to mark
    BaselineRun.objects.filter(pk=run.pk, status=BaselineRun.Status.RUNNING, attempts=run.attempts).update(
        status=BaselineRun.Status.FAILED, finished_at=timezone.now(), error=error
    )


def pending(runs: Iterable[BaselineRun]) -> list[BaselineRun]:
    return [r for r in runs if r.status != BaselineRun.Status.COMPLETED]


RUNS_FORMAT = "clues-baseline-runs/1"  # benchmarks/gpu_sweep.py writes it
_RUN_NUMBERS = ("train_seconds", "predict_seconds", "examples_per_second", "peak_gpu_memory_bytes")


def _imported_run(raw, where: str) -> dict:
    """One run of an exported file, checked: its task, test items, predictions and figures."""
    try:
        slug, method, model = raw["task"], str(raw["method"]), str(raw.get("model") or "")
        shots, split, seed = int(raw["shots"]), int(raw["split"]), int(raw["seed"])
        predictions = raw["predictions"]
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{where}: missing or bad field {exc}") from None
    spec = registry.find_task(slug)
    if spec is None or method not in METHODS or shots not in (0, *spec.shots) or split not in spec.splits:
        raise ValueError(f"{where}: unknown task/method/shots/split {slug!r} {method!r} {shots} {split}")
    task = Task.objects.filter(slug=slug).first()
    if task is None:
        raise ValueError(f"{where}: task {slug!r} is not imported here (run import_clues first)")
    tests = list(test_examples(task))
    if not isinstance(predictions, list) or len(predictions) != len(tests):
        raise ValueError(
            f"{where}: {len(predictions) if isinstance(predictions, list) else 'no'} "
            f"predictions for {len(tests)} test items"
        )
    preds = []
    for example, item in zip(tests, predictions, strict=True):
        if (
            not isinstance(item, dict)
            or str(item.get("id")) != example.clues_id
            or not isinstance(item.get("prediction"), list)
            or not all(isinstance(p, str) for p in item["prediction"])
        ):
            raise ValueError(
                f'{where}: predictions must be {{"id", "prediction": [str]}} in '
                f"test-file order; expected id {example.clues_id!r}, got {item!r:.80}"
            )
        preds.append(item["prediction"])
    numbers = {}
    for key in _RUN_NUMBERS:
        value = raw.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0):
            raise ValueError(f"{where}: {key} must be a non-negative number")
        numbers[key] = value
    return {
        "task": task,
        "method": method,
        "model": model,
        "shots": shots,
        "split": split,
        "seed": seed,
        "tests": tests,
        "preds": preds,
        "numbers": numbers,
    }


def _default_backend(method: str, raw: dict) -> str:
    """The backend of an exported run that does not name one: the one its config names, else the method's."""
    return str((raw.get("config") or {}).get("backend") or backend_of(method, None, str(raw.get("server") or "")))


@dataclass(frozen=True)
class Imported:
    """What ``import_runs`` did with a file's runs."""

    created: int  # stored as completed
    kept: int  # already completed here: left alone
    running: tuple[str, ...] = ()  # run here now by a live process (``runners.describe``): left to it


def import_runs(payload: dict) -> Imported:
    """Store runs exported by ``benchmarks/gpu_sweep.py``: every run checked, its predictions
    re-scored against this database's gold, all stored in one transaction.

    A run completed here is kept; so is one a live process is running here now (``runners``, as a second
    ``run_baselines`` leaves it): the import would discard that runner's work and the requests it pays for. A run
    marked running whose runner is gone is taken, as ``run_baselines`` would take it."""
    if not isinstance(payload, dict) or payload.get("format") != RUNS_FORMAT:
        raise ValueError(f'not a baseline-runs file (expected "format": {RUNS_FORMAT!r})')
    runs = payload.get("runs")
    if not isinstance(runs, list) or not runs:
        raise ValueError('"runs" must be a non-empty list')
    created = kept = 0
    running: list[str] = []
    # The runs held (``runners.hold``) are let go once the transaction has ended, committed or rolled back.
    with contextlib.ExitStack() as holds, transaction.atomic():
        for n, raw in enumerate(runs, start=1):
            r = _imported_run(raw, f"run {n}")
            task, tests, preds = r["task"], r["tests"], r["preds"]
            scores = item_scores(task, tests, preds)
            run, _ = BaselineRun.objects.select_for_update().get_or_create(
                task=task,
                method=r["method"],
                model=r["model"],
                backend=str(raw.get("backend") or _default_backend(r["method"], raw)),
                server=str(raw.get("server") or ""),
                shots=r["shots"],
                split=r["split"],
                seed=r["seed"],
                defaults={"config": raw.get("config") or {}},
            )
            if run.status == BaselineRun.Status.COMPLETED:
                kept += 1
                continue
            held = holds.enter_context(runners.hold(run.pk))
            if not held or (run.status == BaselineRun.Status.RUNNING and runners.held_by_another(run.runner)):
                running.append(f"{run}: {runners.describe(run.runner)}")
                continue
            notes = dict(raw.get("notes") or {})
            notes["imported_from"] = {k: payload.get(k) for k in ("torch", "transformers", "gpu", "python")}
            run.status, run.attempts = BaselineRun.Status.COMPLETED, run.attempts + 1
            run.device = str(raw.get("device") or "")[:40]
            run.started_at = run.finished_at = timezone.now()
            run.s1, run.item_scores, run.error, run.notes = corpus_s1(scores), scores, "", notes
            run.predictions = [{"id": e.clues_id, "prediction": list(p)} for e, p in zip(tests, preds, strict=True)]
            for key, value in r["numbers"].items():
                setattr(run, key, value)
            run.save()
            created += 1
    return Imported(created, kept, tuple(running))
