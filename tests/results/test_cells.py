"""One cell computation: one mean/std helper (ddof=1) behind the human cells and the model cells."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from baselines.selectors import model_cells
from tasks_data.stats import STD_DDOF, mean_std

ROOT = Path(__file__).resolve().parents[2]


def test_mean_std_is_the_sample_standard_deviation():
    values = [100.0, 80.0, 60.0, 75.5]
    mean, std = mean_std(values)
    assert STD_DDOF == 1
    assert mean == pytest.approx(np.mean(values)) and std == pytest.approx(np.std(values, ddof=1))
    assert mean_std([42.0]) == (42.0, None) and mean_std([]) == (None, None)


def test_no_other_module_computes_a_standard_deviation():
    pattern = re.compile(r"\bstdev\(|\.std\(|np\.std\(|pstdev\(")
    found = [
        str(p.relative_to(ROOT))
        for folder in ("annotation", "baselines", "results", "tasks_data")
        for p in (ROOT / folder).rglob("*.py")
        if "adapters" not in p.parts and pattern.search(p.read_text(encoding="utf-8"))
    ]
    assert found == ["tasks_data/stats.py"]


@pytest.mark.django_db
def test_model_cells_average_the_splits_with_the_same_helper(clues):
    from tests.annotation.factories import baseline_runs

    runs = baseline_runs("sst2", 10, "ft", "m", [0.5, 0.6, 0.7]) + baseline_runs("sst2", 20, "ft", "m", [0.9])
    ten, twenty = model_cells(runs)
    assert (ten["shots"], ten["n"], ten["splits"]) == (10, 3, [1, 2, 3])
    assert (ten["mean"], ten["std"]) == pytest.approx(mean_std([50.0, 60.0, 70.0]))
    assert (twenty["mean"], twenty["std"]) == (pytest.approx(90.0), None)
