"""The architecture is executable: `lint-imports` checks the contracts in pyproject.toml (issue 13.7).

Layers results > annotation | baselines > tasks_data (a lower layer never imports a higher one, and
annotation and baselines never import each other),
and baselines.adapters (model code) imports no Django.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_are_kept():
    lint = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 2 kept, 0 broken." in result.stdout
