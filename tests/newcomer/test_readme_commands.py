"""Every command in the README's ```sh blocks works as written.

Each block is run as a newcomer would type it, one line after the other in one shell (an ``export`` carries to
the next lines of its block), in a scratch copy of the repository whose ``.venv`` is this interpreter's
environment, on the embedded default (a scratch SQLite file, no broker, no Redis). Commands that serve
forever (``make run``, gunicorn) are started, asked for a page over HTTP and stopped. A comment line right
after a command is its documented output: it must appear in what the command printed (up to an ellipsis),
and a documented ``CommandError`` must be what the command fails with. The few commands that cannot run here
are listed in SKIPPED with the reason; each must still be in the README (so the list cannot go stale). A
run_baselines sweep of hours runs narrowed (NARROWED) by flags the README itself shows on a run_baselines line.
"""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import psycopg
import pytest

from tests.conftest import _official_zip
from tests.newcomer.servers import free_port, stop
from tests.tasks_data import synthetic

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"

SKIPPED = {
    ".venv/bin/celery -A clues_platform worker -l info": "needs a Redis broker; tests/baselines runs a real worker",
    ".venv/bin/celery -A clues_platform worker -Q gpu -c 1": "needs a Redis broker and a GPU machine",
    "DATABASE_URL=postgres://postgres@127.0.0.1:5432/clues make test": "the whole suite (this test is in it)",
    "CI=true bash .ci/run": "CI itself (this test is in it)",
}
# A sweep of hours runs narrowed, by flags the README shows on a run_baselines line of its own (checked), to one task,
# shots and split: the command line is otherwise as written, the default model and every name in it included.
RUN_BASELINES = ".venv/bin/python manage.py run_baselines"
NARROWED = {
    RUN_BASELINES: "--tasks sst2 --shots 10 --splits 1",  # 90 runs, about 36 min on a CPU
    f"{RUN_BASELINES} --tasks sst2 mnli --methods pt icl --models pt=$HOME/models/roberta-large "
    "icl=$HOME/models/gpt2": "--tasks sst2 --shots 10 --splits 1",  # 60 runs
    f"{RUN_BASELINES} --queue": "--tasks sst2 --shots 10 --splits 1",  # no broker: the 90 default runs inline
}
POSTGRES_BLOCK_MARKER = "export DATABASE_URL=postgres://"
# The PostgreSQL + Redis block runs on the suite's servers: its database under a scratch name (created by `make run`
# itself, then dropped), its broker the suite's (nothing is sent to it: `make run` only serves).
SUITE_DATABASE_URL = os.environ.get("DATABASE_URL", "")
SUITE_BROKER = os.environ.get("CLUES_TEST_BROKER") or os.environ.get("CELERY_BROKER_URL", "")
README_DATABASE = "export DATABASE_URL=postgres://postgres@127.0.0.1:5432/clues"
README_BROKER = "export CELERY_BROKER_URL=redis://127.0.0.1:6379/0"
SERVERS = ("make run", ".venv/bin/gunicorn ")
INNER_PYTEST = "tests/tasks_data/test_project.py -q -p no:cacheprovider"


@dataclass
class Command:
    line: str
    block: int
    documented: list[str] = field(default_factory=list)  # the comment lines under it: its output


def readme_blocks() -> list[list[Command]]:
    blocks = []
    for number, body in enumerate(re.findall(r"^```sh\n(.*?)^```", README.read_text(), re.S | re.M)):
        commands: list[Command] = []
        for raw in body.splitlines():
            if raw.startswith("#"):
                if commands:
                    commands[-1].documented.append(raw.lstrip("# ").rstrip())
                continue
            # A trailing comment explains the command; a '#' inside quotes or $(...) would be kept (none here).
            line = re.sub(r"\s+#\s.*$", "", raw).strip()
            if line:
                commands.append(Command(line, number))
        blocks.append(commands)
    return blocks


def is_postgres_block(block: list[Command]) -> bool:
    return any(c.line.startswith(POSTGRES_BLOCK_MARKER) for c in block)


def skip_reason(command: Command, block: list[Command]) -> str | None:
    if is_postgres_block(block) and not SUITE_DATABASE_URL.startswith(("postgres://", "postgresql://")):
        return SKIPPED.get(command.line) or "the PostgreSQL + Redis example: the suite runs without PostgreSQL"
    return SKIPPED.get(command.line)


def postgres_scratch() -> tuple[str, str]:
    """(the README's database line on the suite's server under a scratch name, that name)."""
    name = f"clues_readme_{os.getpid()}_{int(time.time())}"
    parts = urlsplit(SUITE_DATABASE_URL)
    return f"export DATABASE_URL={parts._replace(path='/' + name).geturl()}", name


def drop_database(name: str) -> bool:
    """Drop the scratch database; whether it existed (with the imported tasks in it)."""
    admin = urlsplit(SUITE_DATABASE_URL)._replace(scheme="postgresql", path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as conn:
        found = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is not None
        tasks = 0
        if found:
            with psycopg.connect(urlsplit(admin)._replace(path="/" + name).geturl()) as db:
                tasks = db.execute("SELECT count(*) FROM tasks_data_task").fetchone()[0]
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    return found and tasks == 6


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """A copy of the tracked files, .venv and .venv-test = this environment, stamps fresh (make installs nothing)."""
    root = tmp_path_factory.mktemp("readme") / "repo"
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split("\n")
    for name in filter(None, files):
        source = REPO / name
        if source.is_file() and not source.is_symlink():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, root / name)
    for venv in (".venv", ".venv-test"):  # make run's and make test's
        (root / venv).symlink_to(Path(sys.prefix))
    stamps = root.parent / "stamps"
    stamps.mkdir()
    for name in (".stamp-runtime", ".stamp-baselines", ".stamp-dev"):
        (stamps / name).touch()
    home = root.parent / "home"
    home.mkdir()
    models(home / "models")
    official, _ = _official_zip()
    if official:
        (home / "CLUES-JSON.zip").symlink_to(official)
        data = official
    else:  # a newcomer without the official zip: the demo data stands in for it
        from tasks_data.management.commands.import_clues import DEMO_DATA

        data = synthetic.zip_release(DEMO_DATA, home / "CLUES-JSON.zip")
    return root, stamps, home, data, official is not None


def models(folder: Path) -> None:
    """The checkpoint folders the README names (~/models/...): tiny ones of the kinds it names, built here (a
    masked LM with the prompt's verbalizer words as tokens for pt, a causal LM for icl)."""
    from tasks_data.registry import CLUES_TASKS
    from tests.adapters import tiny_models

    words = sorted({w for slug in ("sst2", "mnli") for w in CLUES_TASKS[slug].prompt.verbalizer.values()})
    texts = ["It was great.", "A sentence? Yes, it is.", *words]
    tiny_models.bert_checkpoint(folder / "roberta-large", texts, mlm=True, whole_words=words)
    tiny_models.gpt2_checkpoint(folder / "gpt2", texts)


def base_env(root: Path, stamps: Path, home: Path, data: Path) -> dict:
    drop = (
        "DATABASE_URL",
        "CELERY_BROKER_URL",
        "CACHE_URL",
        "REDIS_URL",
        "DJANGO_SETTINGS_MODULE",
        "VIRTUAL_ENV",
        "PYTEST_ADDOPTS",
        "PYTEST_ARGS",
        "MAKEFLAGS",
        "MFLAGS",
        "MAKELEVEL",
        "DJANGO_ALLOW_ASYNC_UNSAFE",
        "DEBUG",
    )
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(
        HOME=str(home),
        CLUES_DATA=str(data),
        STAMP_DIR=str(stamps),
        PORT=str(free_port()),
        GUNICORN_CMD_ARGS=f"--bind 127.0.0.1:{free_port()}",
        PYTEST_ARGS=INNER_PYTEST,
    )
    return env


def write_predictions(root: Path) -> None:
    """The user's predictions.jsonl for `score`: predict nothing for every CoNLL03 test item."""
    with sqlite3.connect(root / "db.sqlite3") as conn:
        ids = [
            row[0]
            for row in conn.execute(
                "SELECT e.clues_id FROM tasks_data_example e JOIN tasks_data_task t ON t.id = e.task_id "
                "WHERE t.slug = 'conll03' AND e.role = 'test' ORDER BY e.position"
            )
        ]
    (root / "predictions.jsonl").write_text("".join(f'{{"id": "{i}", "prediction": [""]}}\n' for i in ids))


def serve(command: Command, root: Path, env: dict) -> str:
    port = env["PORT"] if command.line.startswith("make run") else env["GUNICORN_CMD_ARGS"].rsplit(":", 1)[1]
    log = root.parent / f"server-{port}.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            ["bash", "-c", command.line],
            cwd=root,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 300  # make run imports the official data first
        while time.monotonic() < deadline:
            assert proc.poll() is None, f"{command.line!r} exited with {proc.returncode}:\n{log.read_text()}"
            try:
                # The host production allows (it redirects to https there: any answer but a 5xx is a server up).
                host = env.get("ALLOWED_HOSTS", "127.0.0.1").split(",")[0]
                response = httpx.get(f"http://127.0.0.1:{port}/", headers={"Host": host}, timeout=5)
            except httpx.HTTPError:
                time.sleep(0.3)
                continue
            assert response.status_code < 500, f"{command.line!r}: / answered {response.status_code}"
            if command.line.startswith("make run"):  # how to get an operator, not an admin link
                assert "manage.py createsuperuser" in log.read_text(), log.read_text()
            return f"{command.line}: HTTP {response.status_code}"
        raise AssertionError(f"{command.line!r} did not answer within 300 s:\n{log.read_text()}")
    finally:
        stop(proc)


def run(command: Command, root: Path, env: dict, *, official: bool) -> str:
    if "score predictions.jsonl" in command.line:
        write_predictions(root)
    line = f"{command.line} {NARROWED[command.line]}" if command.line in NARROWED else command.line
    result = subprocess.run(
        ["bash", "-c", f"{line}\nstatus=$?; env -0 > ../env.out; exit $status"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=900 if line.startswith(RUN_BASELINES) else 180,  # trains models on a shared CPU
    )
    output = result.stdout + result.stderr
    expect_error = any(d.startswith("CommandError") for d in command.documented)
    if expect_error:
        assert result.returncode != 0, f"{command.line!r} should have failed:\n{output}"
    else:
        assert result.returncode == 0, f"{command.line!r} failed ({result.returncode}):\n{output[-4000:]}"
    for documented in command.documented:
        expected = re.split(r"\s*(?:\.\.\.|…)", documented)[0]
        if "score " in command.line and not official:
            expected = expected.split(" S1 = ")[0]  # the figure is the official data's
        assert expected in output, f"{command.line!r}: documented output {documented!r} not in:\n{output[-3000:]}"
    if command.line.startswith("export "):  # what the shell keeps for the block's next lines
        env.clear()
        env.update(dict(item.split("=", 1) for item in (root.parent / "env.out").read_text().split("\0") if item))
    return f"{command.line}: ok"


def test_readme_commands_work_as_written(scratch):
    root, stamps, home, data, official = scratch
    blocks = readme_blocks()
    lines = {c.line for block in blocks for c in block}
    assert not set(SKIPPED) - lines, f"SKIPPED lists commands the README no longer has: {set(SKIPPED) - lines}"
    assert not set(NARROWED) - lines, f"NARROWED lists commands the README no longer has: {set(NARROWED) - lines}"
    shown = [line for line in lines if line.startswith(RUN_BASELINES)]
    for flags in set(NARROWED.values()):  # narrowed only as the README narrows a run itself
        assert any(line.endswith(" " + flags) and line not in NARROWED for line in shown), flags
    ran, skipped = [], []
    began = time.monotonic()
    scratch_database = None
    for block in blocks:
        env = base_env(root, stamps, home, data)  # a new shell per block
        for command in block:
            reason = skip_reason(command, block)
            if reason:
                skipped.append(f"{command.line}: {reason}")
                continue
            start = time.monotonic()
            if command.line == README_DATABASE:
                line, scratch_database = postgres_scratch()
                command = Command(line, command.block, command.documented)
            elif command.line == README_BROKER and SUITE_BROKER:
                command = Command(f"export CELERY_BROKER_URL={SUITE_BROKER}", command.block, command.documented)
            try:
                if command.line.startswith(SERVERS):
                    ran.append(serve(command, root, env))
                else:
                    ran.append(run(command, root, env, official=official))
            except BaseException:
                if scratch_database:
                    drop_database(scratch_database)
                raise
            ran[-1] += f" ({time.monotonic() - start:.1f} s)"
        if is_postgres_block(block) and scratch_database:
            # make run created the database it was pointed at, and migrated and imported into it.
            assert drop_database(scratch_database), f"make run did not create and fill {scratch_database}"
            ran.append(f"(the PostgreSQL block's database {scratch_database} was created by make run)")
            scratch_database = None
    print("\n".join(["ran:", *ran, "skipped:", *skipped, f"in {time.monotonic() - began:.0f} s"]))
    assert len(ran) >= 15 and len(skipped) <= 10
    assert any(r.startswith("make run: HTTP 200 ") for r in ran)
