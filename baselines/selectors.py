"""Read-only queries over baseline runs: the model cells of the paper's tables (Tables 6-7).

Units: percent (S1 x 100), not rounded. ``results`` lays these cells out beside the human ones.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from tasks_data.registry import TASKS
from tasks_data.stats import mean_std

from .models import BaselineRun

_TASK_ORDER = {slug: i for i, slug in enumerate(TASKS)}


def completed_runs():
    """Every completed run, with its task (one query)."""
    return BaselineRun.objects.filter(status=BaselineRun.Status.COMPLETED).select_related("task")


def model_cells(runs: Iterable[BaselineRun]) -> list[dict]:
    """Mean and sample std (ddof=1) of S1 over splits per (task, method, model, shots), percent."""
    groups: dict[tuple, list[BaselineRun]] = defaultdict(list)
    for run in runs:
        groups[(run.task.slug, run.method, run.model, run.shots)].append(run)
    rows = []
    for (task, method, model, shots), members in sorted(
            groups.items(), key=lambda kv: (_TASK_ORDER.get(kv[0][0], len(_TASK_ORDER)), kv[0][1], kv[0][2], kv[0][3])):
        mean, std = mean_std(100 * r.s1 for r in members)
        rows.append({"task": task, "method": method, "model": model, "shots": shots, "mean": mean, "std": std,
                     "n": len(members), "splits": sorted(r.split for r in members)})
    return rows
