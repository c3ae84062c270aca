#!/usr/bin/env python3
"""Prove that one requirements set works alone: a fresh virtual environment with only that file installed.

    python3 .ci/check_requirements_set.py runtime      # requirements/runtime.txt: web app, importer, worker, commands
    python3 .ci/check_requirements_set.py baselines    # requirements/baselines.txt: + run_baselines

1. **Build** a virtual environment from the set's file alone, ``pip install --no-deps`` (so a package pulled in
   but not pinned stays missing and is reported, instead of pip quietly fetching some version of it). The
   environment is kept under the cache folder, keyed by the hash of the requirements files (with their ``-r``
   includes) and the interpreter: an unchanged file reuses it; pip's wheel cache is kept there too.
2. **Probe** inside it (``probe`` sub-command, run by that environment's interpreter): every distribution's own
   requirements are installed (what ``pip check`` checks), then every module of the project packages is imported,
   discovered from the file system (a new module is covered without editing this script), plus every management
   command, the Celery app with its tasks and the backends a production configuration selects (PostgreSQL,
   Redis, gunicorn). A module that cannot be imported fails with its name and the missing package.
3. **Smoke**: in that environment, ``migrate``, ``import_clues --demo``, a study through ``launch_study``
   (``run_baselines --methods empty majority`` for the baselines set), every export through
   ``export_results``, then ``runserver``: a worker joins and finishes a cohort over HTTP, and every URL
   pattern of the site is fetched (GET) by the worker, the researcher or an operator, every export kind and
   format taken from the project's export registry (``results.formats``, ``results.exports``,
   ``results.views.ROW_DOWNLOADS``). Every page must answer 200; a POST-only route answering 405 is listed.

Only the standard library is used outside the built environment. Options: ``--cache DIR`` (default
``$CLUES_CI_CACHE``, else ``~/.cache/clues-ci``), ``--database-url URL`` (a PostgreSQL database created for the
check and dropped after; default a scratch SQLite file), ``--python`` (the interpreter the environment is made
with). Exit status 1 with a line per problem.
"""

from __future__ import annotations

import argparse
import hashlib
import http.cookiejar
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SETS = {"runtime": "requirements/runtime.txt", "baselines": "requirements/baselines.txt"}
# Project folders that no set but dev.txt serves (the suite, timing scripts).
DEV_ONLY_PACKAGES = {"tests", "benchmarks"}
# What the runtime set does not load, with why: the model code and the command that runs it are the baselines set.
EXCLUDED = {
    "runtime": {
        "fewshot_models": "model code (torch, transformers): requirements/baselines.txt",
        "baselines.management.commands.run_baselines": "its model methods need requirements/baselines.txt",
    },
    "baselines": {},
}
# Loaded not by an import in the project but by the configuration (settings and the production commands).
CONFIGURED_MODULES = {
    "django.db.backends.postgresql.base": "DATABASE_URL=postgres://... (psycopg)",
    "django.db.backends.sqlite3.base": "the default database",
    "django.core.cache.backends.redis": "CACHE_URL=redis://...",
    "redis": "the cache and the Celery broker",
    "kombu.transport.redis": "CELERY_BROKER_URL=redis://...",
    "celery.bin.celery": "`celery -A clues_platform worker`",
    "gunicorn.app.wsgiapp": "`gunicorn clues_platform.wsgi` (production)",
    "whitenoise.middleware": "static files",
    "whitenoise.storage": "collectstatic with DEBUG=0",
    "clues_platform.wsgi": "the WSGI application",
}
# Routes the worker's flow itself proves (Smoke.worker_finishes): a second GET would be a second worker.
WORKER_FLOW = {"join/<str:token>/": "the join (302 to /work/)", "api/work/answer/": "every answer (201)"}
ENV_DROP = (
    "DATABASE_URL",
    "CELERY_BROKER_URL",
    "CACHE_URL",
    "REDIS_URL",
    "DJANGO_SETTINGS_MODULE",
    "VIRTUAL_ENV",
    "PYTHONPATH",
    "PYTHONHOME",
    "DEBUG",
    "PROLIFIC_API_TOKEN",
    "CLUES_DATA",
)


def say(message: str) -> None:
    print(f"requirements: {message}", flush=True)


class Failed(Exception):
    """The set does not work alone; the message says what is missing."""


# ---------------------------------------------------------------- 1. the environment


def requirement_files(path: Path, seen: list[Path] | None = None) -> list[Path]:
    """The file and every file it includes with ``-r`` (in order)."""
    seen = [] if seen is None else seen
    seen.append(path)
    for line in path.read_text().splitlines():
        match = re.match(r"\s*-r\s+(\S+)", line)
        if match:
            requirement_files((path.parent / match.group(1)).resolve(), seen)
    return seen


def set_key(name: str, python: str) -> str:
    digest = hashlib.sha256()
    version = subprocess.run(
        [python, "-c", "import sys; print(sys.version)"], capture_output=True, text=True, check=True
    ).stdout
    digest.update(version.encode())
    for path in requirement_files(ROOT / SETS[name]):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def folder_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def build_venv(name: str, cache: Path, python: str) -> Path:
    """The set's environment, built once per content of its requirements files."""
    key = set_key(name, python)
    venv = cache / "venvs" / f"{name}-{key}"
    done = venv / ".complete"
    if done.exists():
        say(f"{SETS[name]}: environment {venv} reused (same requirements hash {key}; {done.read_text().strip()})")
        return venv
    for old in (cache / "venvs").glob(f"{name}-*"):  # an older hash of this set: no longer wanted
        shutil.rmtree(old, ignore_errors=True)
    venv.parent.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    subprocess.run([python, "-m", "venv", str(venv)], check=True)
    env = {**os.environ, "PIP_CACHE_DIR": str(cache / "pip"), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    env.pop("PIP_NO_CACHE_DIR", None)
    result = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-deps", "-r", str(ROOT / SETS[name])],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if result.returncode:
        shutil.rmtree(venv, ignore_errors=True)
        raise Failed(f"pip cannot install {SETS[name]}:\n{result.stdout}{result.stderr}")
    seconds = time.monotonic() - began
    size = folder_size(venv) / 2**20
    done.write_text(f"built in {seconds:.0f} s, {size:.0f} MiB\n")
    say(f"{SETS[name]}: built {venv} in {seconds:.1f} s, {size:.0f} MiB (pip cache {cache / 'pip'})")
    return venv


# ---------------------------------------------------------------- 2. the probe (runs inside the environment)


def project_packages() -> list[str]:
    return sorted(p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file() and p.name not in DEV_ONLY_PACKAGES)


def project_modules(set_name: str) -> list[str]:
    """Every module of the project's packages the set must load, found on disk (packages: folders with
    ``__init__.py``), minus the set's EXCLUDED subtrees."""
    excluded = tuple(EXCLUDED[set_name])
    modules = []
    for package in project_packages():
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if any(not (ROOT.joinpath(*parts[:i]) / "__init__.py").is_file() for i in range(1, len(parts))):
                continue  # not inside a package (a script folder, data)
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            if not any(name == e or name.startswith(e + ".") for e in excluded):
                modules.append(name)
    return modules


def missing_distributions(requirements: str) -> list[str]:
    """What ``pip check`` says, in the words of this project: a distribution's requirement that is not installed
    (or at a version outside its range) is a pin missing from the set's file."""
    from importlib import metadata

    from pip._vendor.packaging.requirements import Requirement  # pip is in every venv; packaging may not be
    from pip._vendor.packaging.utils import canonicalize_name

    installed: dict[str, metadata.Distribution] = {}
    for dist in metadata.distributions():
        installed.setdefault(canonicalize_name(dist.metadata["Name"]), dist)
    problems = []
    for dist in (installed[name] for name in sorted(installed)):
        for text in dist.requires or ():
            requirement = Requirement(text)
            if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
                continue
            needed = installed.get(canonicalize_name(requirement.name))
            if needed is None:
                problems.append(
                    f"{dist.metadata['Name']} {dist.version} needs {requirement.name}"
                    f"{requirement.specifier or ''}, which {requirements} does not pin"
                )
            elif requirement.specifier and not requirement.specifier.contains(needed.version, prereleases=True):
                problems.append(
                    f"{dist.metadata['Name']} {dist.version} needs {requirement}, but {requirements} "
                    f"pins {needed.metadata['Name']}=={needed.version}"
                )
    return problems


def importing_module(exc: BaseException) -> str | None:
    """The project module whose import statement failed: the last traceback frame in this repository."""
    name = None
    tb = exc.__traceback__
    while tb is not None:
        path = Path(tb.tb_frame.f_code.co_filename)
        if path.is_relative_to(ROOT) and path.resolve() != Path(__file__).resolve():
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        tb = tb.tb_next
    return name


def import_problem(what: str, exc: BaseException, requirements: str) -> str:
    where = importing_module(exc)
    if where and not what.startswith(where):
        what = f"{what}, in {where}"
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        top = exc.name.split(".")[0]
        if top not in project_packages():
            return (
                f"{what}: No module named {exc.name!r}: no package of {requirements} provides it "
                f"(pin the package that does, with everything it pulls in)"
            )
    return f"{what}: {type(exc).__name__}: {exc}"


def load_commands(set_name: str, requirements: str, problems: list[str]) -> int:
    """Every management command (the project's and the installed apps'), as `manage.py <name>` loads it."""
    from django.core.management import get_commands, load_command_class

    excluded = tuple(EXCLUDED[set_name])
    loaded = 0
    for command, app in sorted(get_commands().items()):
        if any(f"{app}.management.commands.{command}".startswith(e) for e in excluded):
            continue
        try:
            load_command_class(app, command)
            loaded += 1
        except Exception as exc:  # noqa: BLE001
            problems.append(import_problem(f"manage.py {command} ({app})", exc, requirements))
    return loaded


def load_celery(requirements: str, problems: list[str]) -> list[str]:
    """The Celery worker: the app, and the task modules it autodiscovers."""
    try:
        from clues_platform.celery import app as celery_app

        celery_app.loader.import_default_modules()
        celery_app.autodiscover_tasks(force=True)
        return sorted(t for t in celery_app.tasks if not t.startswith("celery."))
    except Exception as exc:  # noqa: BLE001
        problems.append(import_problem("the Celery app (clues_platform.celery)", exc, requirements))
        return []


def load_routes(requirements: str, problems: list[str]) -> list[str]:
    """Every URL pattern (its view imported), as a route string."""
    from django.urls import URLPattern, URLResolver, get_resolver

    routes: list[str] = []

    def walk(patterns, prefix=""):
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns, prefix + str(pattern.pattern))
            elif isinstance(pattern, URLPattern):
                routes.append(prefix + str(pattern.pattern))

    try:
        walk(get_resolver().url_patterns)
    except Exception as exc:  # noqa: BLE001
        problems.append(import_problem("the URL configuration", exc, requirements))
    return routes


def render_every_format(requirements: str, problems: list[str]) -> int:
    """Each output format of the export registry on an empty table and empty rows: a writer may import its
    package only when it writes (pandas' LaTeX writer needs jinja2)."""
    try:
        from results import formats
        from results.table import build_table

        table = build_table([])
        for fmt in formats.TABLE_FORMATS:
            formats.render(table, fmt)
        for fmt in formats.ROW_FORMATS:
            formats.render_rows([], fmt, columns=("s1",))
        return len(formats.TABLE_FORMATS) + len(formats.ROW_FORMATS)
    except Exception as exc:  # noqa: BLE001
        problems.append(import_problem("an export format (results.formats)", exc, requirements))
        return 0


def probe(set_name: str, dump: Path | None, requirements: str | None = None) -> int:
    import importlib

    requirements = requirements or SETS[set_name]
    sys.path.insert(0, str(ROOT))
    os.chdir(ROOT)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "clues_platform.settings")
    problems = missing_distributions(requirements)
    try:
        import django

        django.setup()
    except Exception as exc:  # noqa: BLE001 - whatever stops Django is the finding
        problems.append(import_problem("clues_platform.settings (django.setup)", exc, requirements))
        print(f"{requirements} alone does not load the project:", file=sys.stderr)
        print("\n".join(f"  {p}" for p in problems), file=sys.stderr)
        return 1
    modules = project_modules(set_name)
    loaded = 0
    for module in [*modules, *CONFIGURED_MODULES]:
        try:
            importlib.import_module(module)
            loaded += 1
        except Exception as exc:  # noqa: BLE001
            why = CONFIGURED_MODULES.get(module)
            problems.append(import_problem(module + (f" ({why})" if why else ""), exc, requirements))
    commands = load_commands(set_name, requirements, problems)
    tasks = load_celery(requirements, problems)
    routes = load_routes(requirements, problems)
    rendered = render_every_format(requirements, problems)
    if problems:
        print(f"{requirements} alone does not load the project:", file=sys.stderr)
        print("\n".join(f"  {p}" for p in problems), file=sys.stderr)
        return 1
    print(
        f"{requirements}: imported {loaded} modules ({len(modules)} of the project), {commands} management "
        f"commands, {len(tasks)} Celery tasks, {len(routes)} URL patterns, {rendered} export formats"
    )
    if dump:
        from results import exports, formats, views

        try:  # the export registry: a kind or format added there is fetched without editing this script
            registry = {
                "table_formats": list(formats.TABLE_FORMATS),
                "row_formats": list(formats.ROW_FORMATS),
                "export_kinds": list(exports.EXPORT_KINDS),
                "row_downloads": list(views.ROW_DOWNLOADS),
            }
        except AttributeError as exc:
            print(f"the export registry moved ({exc}): update Smoke's reading of it in {__file__}", file=sys.stderr)
            return 1
        dump.write_text(json.dumps({"routes": routes, **registry}))
    return 0


# ---------------------------------------------------------------- 3. the smoke run


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Site:
    """One browser: a cookie jar, CSRF header on POSTs, no redirects followed."""

    class _NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    def __init__(self, base: str):
        self.base = base
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar), self._NoRedirect)

    def csrf(self) -> str:
        return next((c.value or "" for c in self.jar if c.name == "csrftoken"), "")

    def request(self, path: str, data: bytes | None = None, headers: dict | None = None) -> tuple[int, bytes, dict]:
        headers = {"Referer": self.base + "/", **(headers or {})}
        if data is not None:
            headers["X-CSRFToken"] = self.csrf()
        req = urllib.request.Request(self.base + path, data=data, headers=headers)
        try:
            with self.opener.open(req, timeout=60) as response:
                return response.status, response.read(), dict(response.headers)
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read(), dict(exc.headers)

    def post_json(self, path: str, body: dict) -> tuple[int, dict]:
        status, data, _ = self.request(path, json.dumps(body).encode(), {"Content-Type": "application/json"})
        return status, json.loads(data or b"null")

    def log_in(self, username: str, password: str) -> None:
        self.request("/accounts/login/")
        form = urllib.parse.urlencode(
            {"username": username, "password": password, "csrfmiddlewaretoken": self.csrf()}
        ).encode()
        status, _, headers = self.request(
            "/accounts/login/", form, {"Content-Type": "application/x-www-form-urlencoded"}
        )
        if status != 302:
            raise Failed(f"log-in as {username} answered {status}, not a redirect")


class Smoke:
    def __init__(self, set_name: str, venv: Path, work: Path, database_url: str | None):
        self.set_name, self.python, self.work = set_name, str(venv / "bin" / "python"), work
        self.env = {k: v for k, v in os.environ.items() if k not in ENV_DROP}
        self.env.update(
            DATABASE_URL=database_url or f"sqlite:///{work / 'smoke.sqlite3'}",
            DEBUG="1",
            HOME=str(work),
            PATH=f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        )
        self.fetched: list[str] = []
        self.post_only: list[str] = []
        self.skipped: list[str] = []  # routes whose object this set cannot make (a baseline run in runtime.txt)

    def manage(self, *commands: list[str], extra_env: dict | None = None, quiet: bool = False) -> list[str]:
        """Run management commands in one process (each interpreter start costs seconds), as `manage.py` runs
        them (``call_command``); their outputs, in order. The first failure stops with its output."""
        results = self.work / "commands.json"
        code = (
            "import io, json, sys, time, traceback\nimport django\ndjango.setup()\n"
            "from django.core.management import call_command\nout = []\n"
            "for args in json.loads(sys.argv[1]):\n"
            "    stdout, stderr, began = io.StringIO(), io.StringIO(), time.monotonic()\n"
            "    try:\n        call_command(*args, stdout=stdout, stderr=stderr)\n"
            "    except BaseException:\n"
            "        out.append({'failed': args, 'output': stdout.getvalue() + stderr.getvalue() + "
            "traceback.format_exc()})\n        break\n"
            "    out.append({'args': args, 'stdout': stdout.getvalue(), 'seconds': time.monotonic() - began})\n"
            "open(sys.argv[2], 'w').write(json.dumps(out))\n"
        )
        env = {**self.env, "DJANGO_SETTINGS_MODULE": "clues_platform.settings", **(extra_env or {})}
        result = subprocess.run(
            [self.python, "-c", code, json.dumps(commands), str(results)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        done = json.loads(results.read_text()) if results.exists() else []
        results.unlink(missing_ok=True)
        for step in done:
            if "failed" in step:
                raise Failed(f"manage.py {' '.join(step['failed'])} failed:\n{step['output'][-4000:]}")
            if not quiet:
                say(f"  manage.py {' '.join(step['args'])[:90]}: ok ({step['seconds']:.1f} s)")
        if result.returncode or len(done) != len(commands):
            raise Failed(
                f"the management commands stopped ({result.returncode}):\n{(result.stdout + result.stderr)[-4000:]}"
            )
        return [step["stdout"] for step in done]

    @staticmethod
    def found(pattern: str, text: str, command: str) -> tuple[str, ...]:
        match = re.search(pattern, text, re.M)
        if match is None:
            raise Failed(f"{command} did not print {pattern!r}:\n{text}")
        return match.groups()

    def prepare(self) -> dict:
        dump = self.work / "site.json"
        result = subprocess.run(
            [self.python, __file__, "probe", self.set_name, "--dump", str(dump)],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if result.returncode:
            raise Failed(result.stderr.strip() or result.stdout.strip())
        say(result.stdout.strip())
        self.operator = ("operator", "operator-" + os.urandom(6).hex())
        commands = [
            ["migrate", "--noinput", "-v0"],
            ["import_clues", "--demo"],
            ["ensure_local_researcher", "--password-file", str(self.work / "researcher-password")],
            ["createsuperuser", "--noinput", "--username", self.operator[0], "--email", "op@example.org"],
            [
                "launch_study",
                "--name",
                "smoke",
                "--tasks",
                "sst2",
                "--shots",
                "0",
                "--workers",
                "1",
                "--platform",
                "generic",
            ],
        ]
        if self.set_name == "baselines":
            commands.append(["run_baselines", "--methods", "empty", "majority"])
        outputs = self.manage(*commands, extra_env={"DJANGO_SUPERUSER_PASSWORD": self.operator[1]})
        self.researcher = self.found(r"Researcher login: (\S+) / (\S+)", outputs[2], "ensure_local_researcher")
        self.study = int(self.found(r"^study (\d+)$", outputs[4], "launch_study")[0])
        self.join_path = self.found(r"^sst2 0 (/join/\S+/)", outputs[4], "launch_study")[0]
        return json.loads(dump.read_text())

    def exports_by_command(self, site: dict) -> None:
        """``export_results`` for every kind and format of the registry, in one process (each start costs seconds)."""
        calls = []
        for kind in site["export_kinds"]:
            formats = (
                site["table_formats"] if kind == "table" else [None] if kind == "predictions" else site["row_formats"]
            )
            for fmt in formats:
                args = ["--study", str(self.study), "--kind", kind]
                args += ["--out", str(self.work / f"export-{kind}.{fmt or 'zip'}")]
                if fmt:
                    args += ["--format", fmt]
                if kind == "table" and self.set_name == "baselines":
                    args.append("--with-baselines")
                calls.append(args)
        began = time.monotonic()
        self.manage(*(["export_results", *args] for args in calls), quiet=True)
        empty = [path.name for path in sorted(self.work.glob("export-*")) if path.stat().st_size == 0]
        if len(list(self.work.glob("export-*"))) != len(calls) or empty:
            raise Failed(
                f"export_results wrote {len(list(self.work.glob('export-*')))} of {len(calls)} files (empty: {empty})"
            )
        say(f"  manage.py export_results: {len(calls)} kinds x formats written ({time.monotonic() - began:.1f} s)")

    def serve(self) -> subprocess.Popen:
        port = free_port()
        self.base = f"http://127.0.0.1:{port}"
        log = open(self.work / "server.log", "wb")  # closed with the process
        proc = subprocess.Popen(
            [self.python, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"],
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise Failed(f"runserver exited with {proc.returncode}:\n{(self.work / 'server.log').read_text()}")
            try:
                urllib.request.urlopen(self.base + "/", timeout=2)
                return proc
            except (urllib.error.URLError, OSError):
                time.sleep(0.3)
        raise Failed("runserver did not answer within 60 s")

    def worker_finishes(self, worker: Site) -> int:
        """A worker joins the generic link and answers every item of the cohort through the API."""
        status, _, headers = worker.request(f"{self.join_path}?worker_id=smoke-worker-1")
        if status != 302:
            raise Failed(f"joining {self.join_path} answered {status}, not the redirect to /work/")
        for _ in range(1000):
            status, data, _ = worker.request("/api/work/current/")
            state = json.loads(data)
            if status != 200 or state["item"] is None:
                break
            item = state["item"]
            status, answer = worker.post_json(
                "/api/work/answer/", {"item": item["id"], "answer": item.get("labels", [])[:1]}
            )
            if status != 201:
                raise Failed(f"answering item {item['id']} answered {status}: {answer}")
        if not state.get("completion"):
            raise Failed(f"the worker did not finish: {state}")
        enrollment = json.loads(self.researcher_site.request(f"/api/studies/{self.study}/enrollments/")[1])
        rows = enrollment["results"] if isinstance(enrollment, dict) else enrollment
        return rows[0]["id"]

    def urls(self, site: dict, enrollment: int, cohort: int) -> list[tuple[str, str]]:
        """(who, path) for every URL pattern, its parameters filled; the export routes once per kind and format."""
        token = self.join_path.strip("/").split("/")[-1]
        ids = {"studies": self.study, "cohorts": cohort, "enrollments": enrollment, "runs": site.get("run")}
        plain = {
            "study_id": self.study,
            "cohort_id": cohort,
            "enrollment_id": enrollment,
            "token": token,
            "clues_id": site.get("clues_id"),
            "slug": "sst2",  # a task's routes (the smoke study's task)
        }
        table, rows = site["table_formats"], site["row_formats"]
        found = []
        for route in site["routes"]:
            if route.startswith("admin/") or route in WORKER_FLOW:
                continue
            who = "worker" if route.startswith(("work/", "api/work/", "join/")) else "researcher"
            variants = [route]
            if "<str:kind>.<str:fmt>" in route:  # the dashboard's row downloads (and the table under results/)
                variants = [
                    route.replace("<str:kind>.<str:fmt>", f"{k}.{f}")
                    for k in ["table", *site["row_downloads"]]
                    for f in (table if k == "table" else rows)
                ]
            elif "<str:fmt>" in route:
                variants = [route.replace("<str:fmt>", f) for f in table]
            elif "<str:kind>" in route:  # the API's exports: ?fmt= per kind
                variants = [
                    route.replace("<str:kind>", k) + ("" if k == "predictions" else f"?fmt={f}")
                    for k in site["export_kinds"]
                    for f in (table if k == "table" else [""] if k == "predictions" else rows)
                ]
            if "<int:pk>" in route and route.split("/<int:pk>")[0].rsplit("/", 1)[-1] == "runs" and not ids["runs"]:
                self.skipped.append(route)  # no baseline run in this set (run_baselines is the baselines set's)
                continue
            for variant in variants:

                def fill(match, variant=variant, route=route):
                    name = match.group(1)
                    before = variant[: match.start()].rstrip("/").rsplit("/", 1)[-1]
                    value = ids.get(before) if name == "pk" else plain.get(name)
                    if value is None:
                        raise Failed(f"the checker cannot fill <{name}> in {route!r}: teach Smoke.urls")
                    return str(value)

                found.append((who, "/" + re.sub(r"<(?:\w+:)?(\w+)>", fill, variant)))
        return found

    def fetch_everything(self, site: dict) -> None:
        worker, researcher, operator = Site(self.base), Site(self.base), Site(self.base)
        self.researcher_site = researcher
        researcher.log_in(*self.researcher)
        operator.log_in(*self.operator)
        enrollment = self.worker_finishes(worker)
        cohort = json.loads(researcher.request(f"/api/studies/{self.study}/")[1])["cohorts"][0]["id"]
        # An item the worker answered (the item pages) and a baseline run, if this set made one.
        items = json.loads(researcher.request(f"/api/studies/{self.study}/export/items/?fmt=json")[1])
        rows = items["rows"] if isinstance(items, dict) else items
        runs = json.loads(researcher.request("/api/baselines/runs/")[1])["runs"]
        site = {**site, "clues_id": rows[0]["clues_id"] if rows else None, "run": runs[0]["id"] if runs else None}
        sites = {"worker": worker, "researcher": researcher}
        failures = []
        urls = self.urls(site, enrollment, cohort)
        urls += [
            ("operator", "/admin/"),
            ("researcher", f"/dashboard/studies/{self.study}/results/?models=1"),
            ("researcher", f"/api/studies/{self.study}/export/table/?fmt=md&with_baselines=1"),
        ]
        for who, path in urls:
            status, body, headers = (sites.get(who) or operator).request(path)
            if status == 405:
                self.post_only.append(path)
            elif status == 200 and body:
                self.fetched.append(path)
            else:
                failures.append(f"GET {path} ({who}) answered {status}: {body[:300]!r}")
        if failures:
            raise Failed("pages that did not answer 200:\n  " + "\n  ".join(failures))
        say(
            f"  {len(self.fetched)} pages and downloads answered 200 (POST-only, 405 on GET: "
            f"{', '.join(self.post_only)})"
            + (f"; no object in this set for: {', '.join(self.skipped)}" if self.skipped else "")
        )


def postgres_database(url: str, python: str, env: dict, *, create: bool) -> None:
    """Create (or drop) the scratch PostgreSQL database of ``url``, through the environment's psycopg."""
    parts = urllib.parse.urlsplit(url)
    name = parts.path.lstrip("/")
    maintenance = parts._replace(scheme="postgresql", path="/postgres").geturl()
    statement = f'CREATE DATABASE "{name}"' if create else f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'
    code = (
        "import psycopg, sys\nwith psycopg.connect(sys.argv[1], autocommit=True) as c:\n"
        f"    c.execute('DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)')\n"
        f"    c.execute({statement!r})\n"
    )
    subprocess.run([python, "-c", code, maintenance], env=env, check=True, capture_output=True, text=True)


def check(set_name: str, cache: Path, database_url: str | None, python: str) -> int:
    began = time.monotonic()
    try:
        venv = build_venv(set_name, cache, python)
        with tempfile.TemporaryDirectory(prefix=f"clues-{set_name}-") as tmp:
            smoke = Smoke(set_name, venv, Path(tmp), database_url)
            if database_url:
                postgres_database(database_url, smoke.python, smoke.env, create=True)
            proc = None
            try:
                site = smoke.prepare()
                smoke.exports_by_command(site)
                proc = smoke.serve()
                smoke.fetch_everything(site)
            finally:
                if proc is not None and proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGTERM)
                    proc.wait(timeout=20)
                if database_url:
                    postgres_database(database_url, smoke.python, smoke.env, create=False)
    except Failed as exc:
        print(f"requirements: {SETS[set_name]} FAILED:\n{exc}", file=sys.stderr)
        return 1
    say(f"{SETS[set_name]} works alone ({time.monotonic() - began:.0f} s)")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command")
    run = sub.add_parser("check", help="build, probe, smoke (the default)")
    run.add_argument("set", choices=SETS)
    run.add_argument(
        "--cache", type=Path, default=Path(os.environ.get("CLUES_CI_CACHE") or Path.home() / ".cache" / "clues-ci")
    )
    run.add_argument("--database-url", default=None)
    run.add_argument("--python", default=sys.executable)
    inner = sub.add_parser("probe", help="inside an environment: import everything the set must load")
    inner.add_argument("set", choices=SETS)
    inner.add_argument("--dump", type=Path, default=None)
    inner.add_argument("--requirements", default=None, help="the file to name in messages (default: the set's)")
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in SETS:
        argv.insert(0, "check")
    args = parser.parse_args(argv)
    if args.command == "probe":
        return probe(args.set, args.dump, args.requirements)
    if args.command == "check":
        return check(args.set, args.cache.resolve(), args.database_url, args.python)
    parser.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())
