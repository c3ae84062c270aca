"""Small display helpers of the dashboard's progress pages (no rules, no queries)."""

from __future__ import annotations

import json


def sparkline(values: list[float], width: int = 120, height: int = 28) -> dict | None:
    """A learning curve as SVG parts: one bar per training item (its S1) and the running mean."""
    if not values:
        return None
    n = len(values)
    step = width / n
    bars, points, total = [], [], 0.0
    inner = height - 6  # 3 px above and below, so the line at 100% stays visible
    for i, v in enumerate(values):
        v = max(0.0, min(1.0, float(v)))
        total += v
        h = max(1.0, v * inner)
        bars.append(
            {
                "x": round(i * step + 0.5, 2),
                "y": round(height - 3 - h, 2),
                "w": round(max(step - 1, 0.6), 2),
                "h": round(h, 2),
            }
        )
        points.append(f"{round(i * step + step / 2, 2)},{round(height - 3 - (total / (i + 1)) * inner, 2)}")
    return {
        "w": width,
        "h": height,
        "bars": bars,
        "points": " ".join(points),
        "first": round(100 * values[0]),
        "last": round(100 * total / n),
        "n": n,
    }


def duration(seconds: float) -> str:
    """ "42 s", "3 min 05 s", "1 h 02 min"."""
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def audit_reason(reason: str) -> str:
    """An audit row's reason as a researcher reads it: a changed test answer (stored as JSON, so that nothing
    of it is lost) becomes "Test item 12: “Paris” → “Lyon”"; any other reason is shown as written."""
    if not reason.startswith("{"):
        return reason
    try:
        data = json.loads(reason)
        before, after = data["before"]["texts"], data["after"]["texts"]
        position = int(data["position"]) + 1
    except (ValueError, KeyError, TypeError):
        return reason

    def answer(texts) -> str:
        shown = [t for t in texts if str(t).strip()]
        return ", ".join(f"\u201c{t}\u201d" for t in shown) if shown else "no answer"

    return f"Test item {position}: {answer(before)} \u2192 {answer(after)}"
