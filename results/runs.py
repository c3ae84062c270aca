"""The model side of the results: the completed baseline runs as the tables read them.

``runs_fingerprint()`` names what the completed runs are (their content, so that a run deleted and
another stored with the same id never shares a key); ``model_rows`` (mean ± std over splits per
(task, method, model, backend, server, shots), ``baselines.selectors.model_cells``), ``labels`` (each row
identity's own label), ``model_item_means``
(per model row and test item) and ``run_item_scores`` (per run and test item), each read under an MRC
gold rule (MRC runs rescored from their stored predictions) and kept until the completed runs change.
"""

from __future__ import annotations

import hashlib

from baselines.models import BaselineRun
from baselines.selectors import completed_runs, model_cells, row_identity, row_key, row_labels
from baselines.selectors import model_item_means as item_means_of_runs
from tasks_data.models import Example
from tasks_data.s1 import check_mrc_gold, corpus_s1, item_s1

from .cache import VERSION, remember


def runs_fingerprint() -> str:
    """What the completed runs are (1 query): each run's id, identity, finish time and S1."""
    rows = (
        completed_runs()
        .order_by("pk")
        .values_list(
            "pk", "task_id", "method", "model", "backend", "server", "shots", "split", "seed", "finished_at", "s1"
        )
    )
    return hashlib.sha1(repr(list(rows)).encode()).hexdigest()


def rescored(runs: list[BaselineRun], mrc_gold: str) -> list[BaselineRun]:
    """MRC runs rescored from their stored predictions under ``mrc_gold`` (on the instances, never saved;
    runs store S1 under the default reading). One query for the gold, none when nothing is rescored."""
    mrc = [r for r in runs if mrc_gold != "best" and r.task.spec.answer_kind.gold_is_alternatives and r.predictions]
    if not mrc:
        return runs
    golds = {
        (task_id, clues_id): gold
        for task_id, clues_id, gold in Example.objects.filter(
            task_id__in={r.task_id for r in mrc}, role=Example.Role.TEST
        ).values_list("task_id", "clues_id", "gold")
    }
    for run in mrc:
        run.item_scores = [
            item_s1(p["prediction"], golds[(run.task_id, str(p["id"]))], alternatives=True, mrc_gold=mrc_gold)
            for p in run.predictions or ()  # each run here has predictions (the filter above)
        ]
        run.s1 = corpus_s1(run.item_scores)
    return runs


def model_rows(mrc_gold: str = "best", *, runs: str | None = None) -> list[dict]:
    """Every model row (``baselines.selectors.model_cells``), MRC read with ``mrc_gold``; kept until the runs
    change (``runs``: their fingerprint, when the caller has it)."""
    check_mrc_gold(mrc_gold)
    return remember(
        f"results:model-cells:v{VERSION}:{mrc_gold}:{runs or runs_fingerprint()}",
        lambda: model_cells(rescored(list(completed_runs()), mrc_gold)),
    )


def labels() -> dict[tuple, str]:
    """{(method, model, backend, server): label} of every completed run's row identity, no two alike (1 query):
    the labels of ``model_rows``, for what reads runs one by one."""
    return row_labels(completed_runs().order_by().values_list("method", "model", "backend", "server").distinct())


def model_item_means(mrc_gold: str = "best") -> dict[tuple, dict[str, float]]:
    """Per model row (task, method, model, backend, server, shots): per test item (CLUES id), S1 averaged over its runs
    (MRC read by ``mrc_gold``); cached until the completed runs change (2 queries when cached: none to decode)."""
    return remember(
        f"results:model-items:v{VERSION}:{check_mrc_gold(mrc_gold)}:{runs_fingerprint()}",
        lambda: item_means_of_runs(rescored(list(completed_runs()), mrc_gold)),
    )


def run_item_scores(task: str, shots: int, mrc_gold: str = "best") -> list[dict]:
    """Each completed run of ``task`` at ``shots``: ``{"run", "key", "label", "split", "seed", "s1", "items"}``,
    ``items`` its S1 (0-1) per test item (CLUES id), MRC read by ``mrc_gold``."""
    runs = rescored(list(completed_runs().filter(task__slug=task, shots=shots).order_by("pk")), mrc_gold)
    names = labels() if runs else {}
    return [
        {
            "run": run.pk,
            "key": row_key(run),
            "label": names[row_identity(run)],
            "method": run.method,
            "split": run.split,
            "seed": run.seed,
            "s1": run.s1,
            "items": {str(p["id"]): s for p, s in zip(run.predictions or [], run.item_scores or [], strict=True)},
        }
        for run in runs
        if run.predictions and run.item_scores
    ]
