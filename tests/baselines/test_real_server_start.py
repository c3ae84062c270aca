"""The real-server test (test_real_server.py) fails, never skips, when `transformers serve` cannot start: run here
as .ci/run's last pass runs the suite, with no environment at all (CI unset), against a server that dies starting
(its fastapi made unimportable for that process alone)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_a_server_that_cannot_start_fails_the_real_server_test_with_no_environment(tmp_path):
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "fastapi.py").write_text("raise ImportError('fastapi is broken here, on purpose')\n")
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "LANG": "C.UTF-8", "PYTHONPATH": str(shim)}
    test = "tests/baselines/test_real_server.py::test_icl_and_worker_against_transformers_serve"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", test, "-q", "-p", "no:cacheprovider", "-n", "0"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 1, done.stdout[-3000:]
    assert "1 error" in done.stdout and "skipped" not in done.stdout
    assert "transformers serve did not start (exited 1)" in done.stdout and "fastapi is broken here" in done.stdout
