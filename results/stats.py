"""The paired bootstrap gap between humans and a model (mean ± sample std lives in ``tasks_data.stats``)."""

from __future__ import annotations

import numpy as np

BOOTSTRAP_RESAMPLES = 10_000
CONFIDENCE = 0.95


def paired_gap(human: dict[str, float], model: dict[str, float], *, seed: int = 0) -> dict:
    """Human minus model S1 (percent) over the items both have, with a 95% paired bootstrap CI."""
    ids = sorted(set(human) & set(model))
    diffs = np.array([human[i] - model[i] for i in ids]) * 100
    gap = {"diff": float(diffs.mean()) if len(ids) else None, "ci_low": None, "ci_high": None, "items": len(ids)}
    if len(ids) >= 2 and np.ptp(diffs) > 0:
        from scipy.stats import bootstrap  # imported where used: no page but a results page needs scipy.stats

        # Resampling items keeps each item's human and model scores together: a paired bootstrap.
        ci = bootstrap(
            (diffs,),
            np.mean,
            confidence_level=CONFIDENCE,
            n_resamples=BOOTSTRAP_RESAMPLES,
            method="percentile",
            rng=np.random.default_rng(seed),
        ).confidence_interval
        gap["ci_low"], gap["ci_high"] = float(ci.low), float(ci.high)
    elif len(ids):
        gap["ci_low"] = gap["ci_high"] = gap["diff"]  # every item differs by the same amount
    return gap
