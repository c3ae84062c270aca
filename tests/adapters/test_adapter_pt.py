"""``pt`` (LM-BFF prompt fine-tuning) on a tiny BERT masked LM."""

from __future__ import annotations

import pytest

from fewshot_models import METHODS, AdapterConfig, AdapterError
from fewshot_models.prompt_ft import PromptSession
from tasks_data.registry import CLUES_TASKS
from tests.adapters import adapter_synthetic as synthetic
from tests.adapters import tiny_models
from tests.adapters.adapter_helpers import assert_well_formed, corpus_s1

OVERFIT = dict(lr=1e-3, epochs=30, device="cpu")


@pytest.mark.parametrize("slug", ["sst2", "mnli"])
def test_pt_overfits_ten_examples(mlm_path, slug):
    task = CLUES_TASKS[slug]
    data = synthetic.sst2() if slug == "sst2" else synthetic.mnli()
    result = METHODS["pt"]().run(task, data, data, AdapterConfig(model=mlm_path, **OVERFIT))
    assert_well_formed(result, len(data))
    assert corpus_s1(task, result.predictions, data) == 100.0, result.predictions
    assert result.notes["train_steps"] == 30 * 2  # 30 epochs x ceil(10 / 8)
    assert result.notes["last_loss"] < result.notes["first_loss"]


def test_pt_defaults_and_templates(mlm_path):
    session = PromptSession(CLUES_TASKS["mnli"], AdapterConfig(model=mlm_path, device="cpu"))
    assert session.hp["lr"] == 1e-5 and session.hp["batch_size"] == 8
    assert session.max_length == 256
    ex = synthetic.mnli()[0]
    feat = session.encode(ex)
    text = session.tokenizer.decode(feat["input_ids"])
    # <premise minus final punctuation> ? [MASK] , <hypothesis, first letter lower-cased>
    assert "on stage? [MASK], a man plays music." in text
    assert feat["input_ids"].count(session.tokenizer.mask_token_id) == 1
    sst = PromptSession(CLUES_TASKS["sst2"], AdapterConfig(model=mlm_path, device="cpu", max_length=12))
    assert sst.max_length == 12
    long = synthetic.sst2()[0].__class__(
        uid="x", context=" ".join(["wonderful"] * 40), question="q", answers=("positive",)
    )
    feat = sst.encode(long)
    assert len(feat["input_ids"]) == 12  # the sentence was cut, the template kept
    assert sst.tokenizer.decode(feat["input_ids"]).endswith("It was [MASK]. [SEP]")
    result = METHODS["pt"]().run(
        CLUES_TASKS["sst2"], synthetic.sst2(), synthetic.sst2()[:3], AdapterConfig(model=mlm_path, device="cpu")
    )
    assert result.notes["train_steps"] == 20 * 2  # 20 x ceil(10 / 8)
    assert result.notes["verbalizer"] == {"negative": "terrible", "positive": "great"}
    assert all(p[0] in ("positive", "negative") for p in result.predictions)


def test_pt_needs_single_token_verbalizers(tmp_path, texts):
    # A vocabulary without "terrible" / "great" as whole words.
    path = tiny_models.bert_checkpoint(tmp_path / "small-vocab", texts, mlm=True, split_words=["great"])
    data = synthetic.sst2()
    with pytest.raises(AdapterError, match="not a single token"):
        METHODS["pt"]().run(CLUES_TASKS["sst2"], data, data, AdapterConfig(model=path, device="cpu"))


def test_the_template_is_the_tasks_not_its_slugs(mlm_path):
    """A new label task brings its own template (TaskSpec.prompt); prompt_ft knows no task by name."""
    from dataclasses import replace

    from fewshot_models.prompt_ft import read_template
    from tasks_data.registry import PromptMethod

    base = CLUES_TASKS["sst2"]
    task = replace(
        base,
        slug="reviews",
        prompt=PromptMethod(
            verbalizer=dict(base.prompt.verbalizer), template="*cls*_Review:*+sent_0*_Verdict:*mask*.*sep+*"
        ),
    )
    session = PromptSession(task, AdapterConfig(model=mlm_path, device="cpu"))
    text = session.tokenizer.decode(session.encode(synthetic.sst2()[0])["input_ids"])
    assert text == "[CLS] Review : a wonderful and moving film Verdict : [MASK]. [SEP]"
    for broken, reason in (
        ("*sent_0*mask*", "must start with"),
        ("*cls**sent_0**sep+*", "exactly one"),
        ("*cls**sent_2*mask**sep+*", "sentence 2"),
    ):
        with pytest.raises(AdapterError, match=reason):
            read_template(broken)
