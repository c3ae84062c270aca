"""Chart geometry of the results page: S1 against shots per task, as SVG coordinates (no JavaScript)."""

from __future__ import annotations

import math

from annotation.models import Study
from tasks_data.registry import find_task, task_name

CHART_W, CHART_H = 360, 240
CHART_PAD = {"left": 44, "right": 12, "top": 28, "bottom": 40}
SERIES_COLORS = ("#2456c7", "#c0392b", "#8e44ad", "#16a085", "#d35400", "#2c3e50", "#7f8c8d")


def _num(value) -> float | None:
    if value is None:
        return None
    value = float(value)
    return None if math.isnan(value) else value


def _series(task: str, cells: list[dict], rows: list[dict], xs: list[int]) -> list[dict]:
    series = [
        {
            "name": "Human",
            "human": True,
            "points": [(c["shots"], _num(c["mean"]), _num(c["std"]), c["n"]) for c in cells if c["task"] == task],
        }
    ]
    by_model: dict[tuple, list] = {}
    names: dict[tuple, str] = {}
    for r in rows:
        if r.get("task") == task and r.get("shots") in xs:
            # One series per row identity (method, model as named, backend, server with its path): two rows
            # are never one series with two points per shot, whatever their labels.
            identity = (r.get("method", ""), r.get("model", ""), r.get("backend", ""), r.get("server", ""))
            names[identity] = r.get("label") or f"{r.get('method', '')} {r.get('model', '')}".strip()
            by_model.setdefault(identity, []).append(
                (int(r["shots"]), _num(r.get("mean")), _num(r.get("std")), r.get("n"))
            )
    for identity, points in sorted(by_model.items(), key=lambda kv: (names[kv[0]], kv[0])):
        series.append({"name": names[identity], "human": False, "points": points})
    return series


def _mark(k: int, mean: float, std: float | None, n, x_of, y_of) -> dict:
    mark = {
        "x": x_of(k),
        "y": y_of(mean),
        "label": f"{k} shots: {mean:.1f}"
        + (f" ± {std:.1f}" if std is not None else "")
        + (f" (n={n})" if n is not None else ""),
    }
    if std is not None:
        mark.update(err=True, y1=y_of(mean - std), y2=y_of(mean + std), xl=mark["x"] - 4, xr=mark["x"] + 4)
    return mark


def chart(task: str, cells: list[dict], rows: list[dict]) -> dict:
    """S1 (%) against shots for one task: humans (mean ± std) and model rows, as SVG coordinates."""
    spec = find_task(task)
    xs = [0, *spec.shots] if spec else list(Study.SHOT_CONDITIONS)
    series = _series(task, cells, rows, xs)
    values = [m - (s or 0) for ser in series for _, m, s, _ in ser["points"] if m is not None]
    lo = min(max(0, math.floor((min(values, default=60) - 5) / 10) * 10), 60)
    hi = 100
    pad = CHART_PAD
    plot_w, plot_h = CHART_W - pad["left"] - pad["right"], CHART_H - pad["top"] - pad["bottom"]

    def x_of(k):
        return round(pad["left"] + plot_w * (xs.index(k) + 0.5) / len(xs), 1)

    def y_of(v):
        v = max(lo, min(hi, v))
        return round(pad["top"] + plot_h * (hi - v) / (hi - lo), 1)

    out_series = []
    for i, ser in enumerate(series):
        pts = sorted((p for p in ser["points"] if p[1] is not None), key=lambda p: xs.index(p[0]))
        marks = [_mark(k, mean, std, n, x_of, y_of) for k, mean, std, n in pts]
        out_series.append(
            {
                "name": ser["name"],
                "human": ser["human"],
                "color": SERIES_COLORS[i % len(SERIES_COLORS)],
                "marks": marks,
                "path": " ".join(f"{m['x']},{m['y']}" for m in marks),
                "legend_y": CHART_H + 16 + 18 * i,
            }
        )
    ticks = [{"v": v, "y": y_of(v)} for v in range(lo, hi + 1, 10 if hi - lo <= 50 else 20)]
    return {
        "task": task,
        "name": task_name(task),
        "w": CHART_W,
        "h": CHART_H + 10 + 18 * len(out_series),
        "plot_h": CHART_H,
        "left": pad["left"],
        "right": CHART_W - pad["right"],
        "top": pad["top"],
        "bottom": CHART_H - pad["bottom"],
        "mid": round(pad["left"] + plot_w / 2, 1),
        "ymid": -round(pad["top"] + plot_h / 2, 1),
        "xticks": [{"k": k, "x": x_of(k)} for k in xs],
        "yticks": ticks,
        "series": out_series,
        "has_data": any(s["marks"] for s in out_series),
    }


ABILITY_W, ABILITY_ROW = 640, 18
ABILITY_PAD = {"left": 300, "right": 16, "top": 30, "bottom": 34}
HUMAN_COLOR, MODEL_COLOR = SERIES_COLORS[0], SERIES_COLORS[1]


def ability_chart(task: str, shots: int, fit: dict) -> dict:
    """One cohort's joint ability scale as SVG coordinates: each annotator and each model run a row on one
    ability axis (the fit's logit scale), its estimate and 95% interval, humans and models told apart."""
    result = fit["result"]
    people = sorted(result["respondents"], key=lambda r: (-r["theta"], r["label"]))
    lo = math.floor(min([r["low"] for r in people] + [-1]))
    hi = math.ceil(max([r["high"] for r in people] + [1]))
    pad = ABILITY_PAD
    plot_w = ABILITY_W - pad["left"] - pad["right"]
    height = pad["top"] + pad["bottom"] + ABILITY_ROW * len(people)

    def x_of(v: float) -> float:
        return round(pad["left"] + plot_w * (v - lo) / (hi - lo), 1)

    marks = []
    for i, r in enumerate(people):
        y = pad["top"] + ABILITY_ROW * i + ABILITY_ROW / 2
        s1 = r.get("s1_percent")
        marks.append(
            {
                "label": r["label"],
                "human": r["kind"] == "human",
                "color": HUMAN_COLOR if r["kind"] == "human" else MODEL_COLOR,
                "x": x_of(r["theta"]),
                "x1": x_of(r["low"]),
                "x2": x_of(r["high"]),
                "y": y,
                "text_y": y + 4,
                "title": f"{r['label']}: ability {r['theta']:.2f} [{r['low']:.2f}, {r['high']:.2f}]"
                + (f", S1 {s1:.1f}" if s1 is not None else ""),
            }
        )
    step = 1 if hi - lo <= 8 else 2
    return {
        "task": task,
        "shots": shots,
        "name": task_name(task),
        "method": fit["method"],
        "library": fit["library"],
        "current": fit["current"],
        "converged": result.get("converged", True),
        "w": ABILITY_W,
        "h": height,
        "left": pad["left"],
        "right": ABILITY_W - pad["right"],
        "top": pad["top"],
        "bottom": height - pad["bottom"],
        "label_x": pad["left"] - 8,
        "xticks": [{"v": v, "x": x_of(v)} for v in range(lo, hi + 1, step)],
        "marks": marks,
        "humans": sum(1 for r in people if r["kind"] == "human"),
        "models": sum(1 for r in people if r["kind"] != "human"),
        "pool": result.get("pool", ""),
        "response": result.get("response", ""),
        "items": len(result.get("items", ())),
        "all_right": result.get("items_all_right"),
        "all_wrong": result.get("items_all_wrong"),
        "at_bound": result.get("items_at_bound"),
    }
