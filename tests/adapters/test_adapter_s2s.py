"""``s2s`` (T5-style generation fine-tuning) on a tiny T5."""

from __future__ import annotations

import pytest

from fewshot_models import METHODS, AdapterConfig
from fewshot_models.seq2seq import S2SSession
from tasks_data.registry import CLUES_TASKS
from tests.adapters import adapter_synthetic as synthetic
from tests.adapters.adapter_helpers import assert_well_formed, corpus_s1, task_and_data

OVERFIT = dict(lr=1e-3, epochs=150, batch_size=10, warmup_ratio=0.0, device="cpu")


@pytest.mark.parametrize("kind", ["label", "spans", "span_or_none", "entity"])
def test_s2s_overfits_ten_examples(t5_path, kind):
    task, data = task_and_data(kind)
    result = METHODS["s2s"]().run(task, data, data, AdapterConfig(model=t5_path, **OVERFIT))
    assert_well_formed(result, len(data))
    assert corpus_s1(task, result.predictions, data) == 100.0, result.notes["generated"]
    if kind == "spans":
        # The tiny tokenizer detokenises "Smith, Mary" as "Smith , Mary": parsing and
        # snapping to the context still give the exact entity strings.
        assert any(" , " in g for g in result.notes["generated"])


def test_s2s_sources_targets_and_determinism(t5_path):
    task = CLUES_TASKS["mnli"]
    session = S2SSession(task, AdapterConfig(model=t5_path, device="cpu"))
    assert session.hp["max_target_length"] >= 32 and session.hp["lr"] == 1e-4
    ex = synthetic.mnli()[1]
    src = session.tokenizer.decode(session.source(ex)["input_ids"])
    # context (premise </s> hypothesis) </s> question </s>
    assert src.startswith("A woman is reading") and src.count("</s>") == 3
    assert src.rstrip().endswith("neutral ? </s>")
    tgt = session.tokenizer.decode(session.target_ids(ex), skip_special_tokens=True)
    assert tgt == "contradiction"
    ner = synthetic.ner()
    ner_session = S2SSession(CLUES_TASKS["conll03"], AdapterConfig(model=t5_path, device="cpu"))
    targets = [ner_session.tokenizer.decode(ner_session.target_ids(e), skip_special_tokens=True) for e in ner]
    assert targets[0] == "John Smith , Mary Jones" and targets[1] == "none"
    data = synthetic.sst2()
    cfg = dict(model=t5_path, lr=1e-3, epochs=3, batch_size=4, device="cpu", seed=3)
    a = METHODS["s2s"]().run(CLUES_TASKS["sst2"], data, data, AdapterConfig(**cfg))
    b = METHODS["s2s"]().run(CLUES_TASKS["sst2"], data, data, AdapterConfig(**cfg))
    assert a.notes["generated"] == b.notes["generated"] and a.predictions == b.predictions
