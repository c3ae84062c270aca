"""Read-only queries over baseline runs: the model rows of the paper's tables (Tables 5-7) and the run list.

Units: percent (S1 x 100), not rounded. ``results`` lays these rows out beside the human ones.

A model row is one (task, method, model, backend, server, shots): its runs over splits and seeds (sampling) give
the mean ± std and n. Its identity is everything but the task and shots (``row_identity``): the method, the model
as named (its owner included: ``alice/llama-7b`` and ``bob/llama-7b`` are two models), the backend and the server's
URL with its path (``gpu-a:8000/v1`` and ``gpu-a:8000/v2`` are two servers). Two identities never share a label
(``row_labels``): where the short label would, it says what tells them apart.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from urllib.parse import urlsplit

from tasks_data.card_import import Use
from tasks_data.models import TrainingSet
from tasks_data.registry import task_order
from tasks_data.s1 import as_set
from tasks_data.stats import mean_std

from .models import BaselineResponse, BaselineRun

#: How a row names its method (the results table: "Qwen2.5-7B (as a worker)").
METHOD_WORDS = {
    "worker": "as a worker",
    "icl": "in context",
    "ft": "fine-tuned",
    "pt": "prompt-tuned",
    "s2s": "seq2seq",
    "empty": "empty answer",
    "majority": "majority label",
}


def task_uses(task) -> list[Use]:
    """The baseline runs of ``task`` (``tasks_data.card_import.register_use``): their predictions and scores are of
    its test items, and those with shots of a training set (2 queries)."""
    runs = list(BaselineRun.objects.filter(task=task).values_list("shots", "split"))
    if not runs:
        return []
    files = {(shots, split) for shots, split in runs if shots}
    sets = frozenset(ts.pk for ts in TrainingSet.objects.filter(task=task) if (ts.shots, ts.split) in files)
    return [Use(what=f"{len(runs)} baseline run(s) (export_baselines lists them)", training_sets=sets)]


def completed_runs():
    """Every completed run, with its task (one query)."""
    return BaselineRun.objects.filter(status=BaselineRun.Status.COMPLETED).select_related("task")


Identity = tuple[str, str, str, str]  # (method, model, backend, server)


def row_identity(run: BaselineRun) -> Identity:
    return run.method, run.model, run.backend, run.server


def row_key(run: BaselineRun) -> tuple[str, str, str, str, str, int]:
    """(task, method, model, backend, server, shots): one model row of one table cell."""
    return run.task.slug, run.method, run.model, run.backend, run.server, run.shots


def row_label(method: str, model: str, server: str = "") -> str:
    """A model row's short name in the tables. A model on a server: "Qwen2.5-7B-Instruct (as a worker,
    gpu-box:8000)", its name, how it answered and where; in process: "ft MODEL". Two rows may share it:
    ``row_labels`` gives each its own."""
    if not server:
        return f"{method} {model}".strip()
    name = model.rstrip("/").rsplit("/", 1)[-1] or method
    return f"{name} ({METHOD_WORDS.get(method, method)}, {urlsplit(server).netloc})"


def _server_with_path(server: str) -> str:
    parts = urlsplit(server)
    return (parts.netloc + parts.path.rstrip("/")) or server


def _full_label(identity: Identity, parts: set[str]) -> str:
    """The label naming ``parts`` of the identity beyond the short label: ``owner`` (the model as named),
    ``path`` (the server's URL with its path), ``backend``."""
    method, model, backend, server = identity
    name = model.rstrip("/") if "owner" in parts else (model.rstrip("/").rsplit("/", 1)[-1] or method)
    if not server:
        label = f"{method} {name}".strip()
        return f"{label} ({backend})" if "backend" in parts and backend else label
    where = _server_with_path(server) if "path" in parts else urlsplit(server).netloc
    words = [METHOD_WORDS.get(method, method), where]
    if "backend" in parts and backend:
        words.append(backend)
    return f"{name} ({', '.join(words)})"


def row_labels(identities: Iterable[Identity]) -> dict[Identity, str]:
    """{identity: label}, no two alike: the short label (``row_label``) where it is one identity's alone, else
    it adds what tells the identities sharing it apart (the model's owner, the server's path, the backend)."""
    unique = sorted(set(identities))
    by_short: dict[str, list[Identity]] = defaultdict(list)
    for identity in unique:
        by_short[row_label(identity[0], identity[1], identity[3])].append(identity)
    out: dict[Identity, str] = {}
    for short, group in by_short.items():
        if len(group) == 1:
            out[group[0]] = short
            continue
        parts = set()
        if len({g[1] for g in group}) > 1:
            parts.add("owner")
        if len({_server_with_path(g[3]) for g in group}) > 1:
            parts.add("path")
        if len({g[2] for g in group}) > 1:
            parts.add("backend")
        labels = {g: _full_label(g, parts) for g in group}
        for g in group:  # what the label cannot spell (a trailing slash, a scheme) still never merges two rows
            same = [h for h in group if labels[h] == labels[g]]
            out[g] = labels[g] if len(same) == 1 else f"{labels[g]} #{same.index(g) + 1}"
    return out


def model_cells(runs: Iterable[BaselineRun]) -> list[dict]:
    """Mean and sample std (ddof=1) of S1 over the runs (splits, seeds) per (task, method, model, backend, server,
    shots), percent; each row has its ``label`` (its own: ``row_labels``), ``n`` and the ``splits`` and ``seeds``
    it covers."""
    groups: dict[tuple, list[BaselineRun]] = defaultdict(list)
    for run in runs:
        groups[row_key(run)].append(run)
    labels = row_labels(key[1:5] for key in groups)
    rows = []
    for (task, method, model, backend, server, shots), members in sorted(
        groups.items(), key=lambda kv: (task_order(kv[0][0]), *kv[0][1:])
    ):
        mean, std = mean_std(100 * r.s1 for r in members if r.s1 is not None)  # completed runs: each has its S1
        held = [r.demonstrations for r in members if r.demonstrations]
        rows.append(
            {
                "task": task,
                "method": method,
                "model": model,
                "backend": backend,
                "server": server,
                "shots": shots,
                "label": labels[(method, model, backend, server)],
                "mean": mean,
                "std": std,
                "n": len(members),
                "splits": sorted({r.split for r in members}),
                "seeds": sorted({r.seed for r in members}),
                # what its runs' prompts held (the least and most of any item, the median of the runs' medians)
                "demonstrations": {
                    "min": min(d["min"] for d in held),
                    "median": statistics.median(d["median"] for d in held),
                    "max": max(d["max"] for d in held),
                    "of": max(d["of"] for d in held),
                }
                if held
                else None,
                "scoring": ", ".join(sorted({r.scoring for r in members if r.scoring})),
                "scoring_fallbacks": sorted({f for r in members if (f := (r.notes or {}).get("scoring_fallback"))}),
            }
        )
    return rows


def demonstrations_text(held: dict | None) -> str:
    """What a run's (or a row's) prompts held, in words: "5-9 of 30 demonstrations (median 7)", or "30 of 30
    demonstrations"; "" when its prompts hold none."""
    if not held:
        return ""
    low, high, of = held["min"], held["max"], held["of"]
    if low == high:
        return f"{low} of {of} demonstrations"
    return f"{low}-{high} of {of} demonstrations (median {held['median']:g})"


def downgrades(row: Mapping) -> list[str]:
    """What a model row (``model_cells``) did less than its name says, one line each: prompts that held fewer
    training examples than the file has, and a choice scored by generation where the method scores by
    log-likelihood (with why: ``notes["scoring_fallback"]``)."""
    held, out = row.get("demonstrations"), []
    if held and held["min"] < held["of"]:
        out.append(f"its prompts held {demonstrations_text(held)}: the model's window cannot hold them all")
    if row.get("scoring_fallbacks"):
        out.append(f"scored by generation, not log-likelihood: {'; '.join(row['scoring_fallbacks'])}")
    return out


def model_item_means(runs: Iterable[BaselineRun]) -> dict[tuple, dict[str, float]]:
    """Per model row (``row_key``): per test item (CLUES id), S1 averaged over the row's runs."""
    sums: dict[tuple, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for run in runs:
        for pred, score in zip(run.predictions or [], run.item_scores or [], strict=True):
            sums[row_key(run)][str(pred["id"])].append(score)
    return {key: {i: statistics.fmean(v) for i, v in items.items()} for key, items in sums.items()}


def agreement_with(
    runs: Iterable[BaselineRun], majorities: Mapping[tuple[str, int], Mapping[str, Sequence[str]]]
) -> dict[tuple, float]:
    """Per model row: the share (percent) of the items with a human majority answer where the model's answer is
    the same (compared as S1 compares answers: as sets), averaged over the row's runs. ``majorities``:
    ``{(task, shots): {CLUES id: majority answer}}``; rows without a cohort are left out."""
    shares: dict[tuple, list[float]] = defaultdict(list)
    for run in runs:
        majority = majorities.get((run.task.slug, run.shots))
        if not majority:
            continue
        same = [
            as_set(p["prediction"]) == as_set(majority[str(p["id"])])
            for p in run.predictions or []
            if str(p["id"]) in majority
        ]
        if same:
            shares[row_key(run)].append(100 * sum(same) / len(same))
    return {key: statistics.fmean(v) for key, v in shares.items()}


def run_list(runs=None) -> list[dict]:
    """Every run as ``export_baselines`` and ``GET /api/baselines/runs/`` list it (S1 in percent, the unit in the
    column's name), with its attempts, the training examples its prompts actually held per test item (min, median,
    max: below ``shots`` where the model's window dropped some) and how its answers were scored."""
    runs = runs if runs is not None else BaselineRun.objects.select_related("task").order_by("pk")
    out = []
    for run in runs:
        usage, demos = run.usage or {}, run.demonstrations or {}
        out.append(
            {
                "id": run.pk,
                "task": run.task.slug,
                "method": run.method,
                "model": run.model,
                "backend": run.backend,
                "server": run.server,
                "shots": run.shots,
                "split": run.split,
                "seed": run.seed,
                "status": run.status,
                "attempts": run.attempts,
                "s1_percent": None if run.s1 is None else 100 * run.s1,
                "demonstrations_min": demos.get("min"),
                "demonstrations_median": demos.get("median"),
                "demonstrations_max": demos.get("max"),
                "demonstrations_of": demos.get("of"),
                "scoring": run.scoring,
                "requests": usage.get("requests"),
                "tokens": run.total_tokens,
                "seconds": usage.get("seconds"),
                "resumed": usage.get("resumed"),
                "finished_at": run.finished_at.isoformat() if run.finished_at else None,
            }
        )
    return out


RUN_FIELDS = (
    "id",
    "task",
    "method",
    "model",
    "backend",
    "server",
    "shots",
    "split",
    "seed",
    "status",
    "attempts",
    "s1_percent",
    "demonstrations_min",
    "demonstrations_median",
    "demonstrations_max",
    "demonstrations_of",
    "scoring",
    "requests",
    "tokens",
    "seconds",
    "resumed",
    "finished_at",
)


def transcript(run: BaselineRun) -> list[dict]:
    """A run's answered requests in the order they were answered (for audit): each request's key (the hash of its
    URL and body), what scoring read of the answer, and its tokens."""
    out = []
    for row in BaselineResponse.objects.filter(run=run).order_by("pk").only("key", "data", "created_at"):
        record = row.record
        answer = record["answer"] if "answer" in record else record.get("raw")
        out.append(
            {"key": row.key, "answer": answer, "usage": record.get("usage", {}), "at": row.created_at.isoformat()}
        )
    return out


def prediction_lines(run: BaselineRun) -> str:
    """A completed run's predictions as a CLUES prediction file (``{"id", "prediction"}`` per line, test-file
    order), each id and answer written as the official files write them (SST-2's ids as JSON numbers, NER "no
    entity" as ``[""]``), so that the file joins the test file by id and the official ``eval/S1.py`` gives the
    run's S1."""
    import json

    from tasks_data.models import Example
    from tasks_data.scoring import as_published, published_id

    kind = run.task.spec.answer_kind
    numbers = set(
        Example.objects.filter(task=run.task, role=Example.Role.TEST, clues_id_is_number=True).values_list(
            "clues_id", flat=True
        )
    )
    return "".join(
        json.dumps(
            {
                "id": published_id(str(p["id"]), str(p["id"]) in numbers),
                "prediction": as_published(kind, p["prediction"]),
            },
            ensure_ascii=False,
        )
        + "\n"
        for p in run.predictions or []
    )
