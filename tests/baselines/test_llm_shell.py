"""`manage.py run_baselines ... --set temperature=0.7 --seed 1 2` typed in a shell: the command in its own
process, on the test database, against the real HTTP fake (tests/baselines/fake_openai.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from baselines.models import BaselineRun
from tests.baselines.fake_openai import TOKEN, FakeOpenAI

ROOT = Path(__file__).resolve().parents[2]
SAMPLING = ("--set", "temperature=0.7", "--seed", "1", "2")


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_set_and_seed_from_a_shell(demo_path):
    """`manage.py run_baselines ... --set temperature=0.7 --seed 1 2` in its own process, on the test database."""
    import os
    import subprocess
    import sys

    from django.db import connection

    db = connection.settings_dict
    if db["ENGINE"] != "django.db.backends.postgresql":
        pytest.skip("the command runs in another process: it needs PostgreSQL")
    from tasks_data.importer import import_release

    import_release(demo_path)
    url = f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    env = {**os.environ, "DATABASE_URL": url, "OPENAI_API_KEY": TOKEN}
    command = [sys.executable, "manage.py", "run_baselines", "--tasks", "sst2", "--methods", "worker"]
    command += ["--models", "tiny-model", "--shots", "0", *SAMPLING]
    with FakeOpenAI() as fake:
        command += ["--api-base", fake.base_url]
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert sorted(BaselineRun.objects.values_list("seed", flat=True)) == [1, 2]
    assert {b["temperature"] for b in fake.answered} == {0.7} and {b["seed"] for b in fake.answered} == {1, 2}


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_an_unknown_bare_model_name_costs_no_model_hub_traffic(demo_path, tmp_path):
    """`run_baselines --methods ft --models ORG/NAME` for a model that is neither a folder nor cached: one line,
    at once, and not one request to the model hub (pointed here at a local server that counts them)."""
    import os
    import subprocess
    import sys
    import threading
    import time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from django.db import connection

    db = connection.settings_dict
    if db["ENGINE"] != "django.db.backends.postgresql":
        pytest.skip("the command runs in another process: it needs PostgreSQL")
    from tasks_data.importer import import_release

    import_release(demo_path)
    hits = []

    class Hub(BaseHTTPRequestHandler):
        def do_GET(self):
            hits.append(self.path)
            self.send_error(404)

        do_HEAD = do_GET

        def log_message(self, *args):
            pass

    hub = ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    threading.Thread(target=hub.serve_forever, daemon=True).start()
    url = f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"}
    env.update(DATABASE_URL=url, HF_ENDPOINT=f"http://127.0.0.1:{hub.server_address[1]}", HF_HOME=str(tmp_path))
    command = [sys.executable, "manage.py", "run_baselines", "--tasks", "sst2", "--methods", "ft"]
    command += ["--models", "no-such-org/no-such-model", "--shots", "10", "--splits", "1"]
    start = time.monotonic()
    try:
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    finally:
        hub.shutdown()
        hub.server_close()
    assert done.returncode == 1 and hits == []
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("CommandError: no model 'no-such-org/no-such-model': not a local folder")
    assert "--models ft=/path/to/checkpoint" in line and time.monotonic() - start < 60
    assert not BaselineRun.objects.exists()
