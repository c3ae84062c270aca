"""``ft`` (span-extraction fine-tuning / BIO tagging) on a tiny BERT."""

from __future__ import annotations

import pytest

from fewshot_models import METHODS, AdapterConfig, AdapterExample
from fewshot_models.span_ft import FTSession, question_label_spans
from tasks_data.registry import CLUES_TASKS
from tests.adapters import adapter_synthetic as synthetic
from tests.adapters.adapter_helpers import assert_substrings, assert_well_formed, corpus_s1, task_and_data

# Overfitting settings: many more steps and a higher lr than the paper's defaults, and AdamW (the reference's
# Adamax, the default, needs more steps than these tests can afford to reach 100 on the tiny model).
OVERFIT = dict(lr=1e-3, epochs=200, batch_size=10, warmup_ratio=0.0, device="cpu", extra={"optimizer": "adamw"})
KINDS = ["label", "spans", "span_or_none", "entity"]


@pytest.mark.parametrize("kind", KINDS)
def test_ft_overfits_ten_examples(bert_path, kind):
    task, data = task_and_data(kind)
    assert len(data) == 10
    result = METHODS["ft"]().run(task, data, data, AdapterConfig(model=bert_path, **OVERFIT))
    assert_well_formed(result, len(data))
    assert corpus_s1(task, result.predictions, data) == 100.0, result.predictions
    assert result.notes["train_steps"] == 200
    assert result.notes["last_loss"] < result.notes["first_loss"]
    assert result.train_examples_per_second and result.train_examples_per_second > 0
    assert not result.notes["skipped_train_examples"]
    if kind in ("spans", "span_or_none", "entity"):
        assert_substrings(result.predictions, data)


def test_ft_mnli_uses_the_contraction_alias(bert_path):
    task = CLUES_TASKS["mnli"]
    spans = question_label_spans(task, synthetic.MNLI_QUESTION)
    s, e = spans["contradiction"]
    assert synthetic.MNLI_QUESTION[s:e] == "contraction"
    data = synthetic.mnli()
    result = METHODS["ft"]().run(task, data, data, AdapterConfig(model=bert_path, **OVERFIT))
    assert corpus_s1(task, result.predictions, data) == 100.0, result.predictions
    assert ["contradiction"] in result.predictions  # mapped back from the alias word


class _Recorder:
    def __init__(self):
        self.calls: list[tuple] = []

    def __call__(self, stage, done, total):
        self.calls.append((stage, done, total))


def test_ft_default_run_shapes_and_progress(bert_path):
    """Paper defaults (3 epochs, batch 16): one prediction per test item for every kind."""
    for kind in KINDS:
        task, data = task_and_data(kind)
        recorder = _Recorder()
        result = METHODS["ft"]().run(
            task, data[:6], data[6:], AdapterConfig(model=bert_path, device="cpu"), progress=recorder
        )
        calls = recorder.calls
        assert_well_formed(result, 4)
        assert result.notes["train_steps"] == 3  # 3 epochs x ceil(6 / 16)
        assert result.notes["hyperparameters"]["lr"] == 5e-5
        stages = {c[0] for c in calls}
        assert {"load", "train", "predict"} <= stages
        assert all(0 <= done <= total for _, done, total in calls)
        assert calls[-1][0] == "predict" and calls[-1][1] == calls[-1][2]
        if kind == "label":
            assert all(p and p[0] in task.labels for p in result.predictions)
        if kind == "entity":
            cands = [{ex.context[s:e] for s, e in ex.candidates} for ex in data[6:]]
            assert all(len(p) == 1 and p[0] in c for p, c in zip(result.predictions, cands, strict=True))
        if kind != "label":
            assert_substrings(result.predictions, data[6:])


def test_ft_is_deterministic_on_cpu(bert_path):
    task, data = task_and_data("span_or_none")
    cfg = dict(model=bert_path, lr=1e-3, epochs=5, batch_size=4, device="cpu")
    a = METHODS["ft"]().run(task, data, data, AdapterConfig(seed=7, **cfg))
    b = METHODS["ft"]().run(task, data, data, AdapterConfig(seed=7, **cfg))
    assert a.predictions == b.predictions
    assert a.notes["last_loss"] == b.notes["last_loss"]
    c = METHODS["ft"]().run(task, data, data, AdapterConfig(seed=8, **cfg))
    assert c.notes["last_loss"] != a.notes["last_loss"]
    assert a.notes["seed"] == 7


def test_ft_long_context_windows(bert_path):
    """A context longer than max_length is read in overlapping windows; answers far into the
    context, and "no answer", are still learnt and decoded to exact substrings."""
    task = CLUES_TASKS["squad2"]
    filler = " ".join(["the river flows north through the green valley ."] * 6)
    data = [
        AdapterExample(
            uid="a",
            context=filler + " Gustave Eiffel built it in 1889 .",
            question="When was it built ?",
            answers=("1889",),
        ),
        AdapterExample(
            uid="b", context="Mount Everest is high . " + filler, question="What is high ?", answers=("Mount Everest",)
        ),
        AdapterExample(uid="c", context=filler + " Bees dance .", question="Who sings ?", answers=()),
    ]
    session = FTSession(task, AdapterConfig(model=bert_path, max_length=48, doc_stride=16, device="cpu"))
    features, windows = session.encode(data, training=True)
    assert len(features) > 2 * len(data)  # several windows per example
    assert all(len(f["input_ids"]) <= 48 for f in features)
    result = METHODS["ft"]().run(
        task,
        data,
        data,
        AdapterConfig(
            model=bert_path,
            max_length=48,
            doc_stride=16,
            lr=1e-3,
            epochs=150,
            batch_size=32,
            warmup_ratio=0.0,
            device="cpu",
        ),
    )
    assert result.predictions == [["1889"], ["Mount Everest"], []]


def test_ft_ner_labels_and_exact_spans(bert_path):
    """Gold strings located by search (all occurrences, unfindable ones skipped), first
    sub-word labelling, and decoded spans that are exact context substrings even when words
    split into several sub-words."""
    task = CLUES_TASKS["conll03"]
    ctx = synthetic.SUBWORD_NER_CONTEXT
    ex = AdapterExample(
        uid="1", context=ctx, question=synthetic.PEOPLE_Q, answers=("Bartholomew Quackenbush", "Nobody Here")
    )
    session = FTSession(task, AdapterConfig(model=bert_path, device="cpu"))
    pieces = session.tokenizer.tokenize("Quackenbush")
    assert len(pieces) > 1 and "[UNK]" not in pieces  # really sub-words
    features, windows = session.encode([ex], training=True)
    assert session.notes["ner_gold_not_found"] == 1
    labels = features[0]["labels"]
    toks = session.tokenizer.convert_ids_to_tokens(features[0]["input_ids"])
    tagged = [(t, lab) for t, lab in zip(toks, labels, strict=True) if lab != -100]
    assert [lab for _, lab in tagged] == [0, 1, 2, 0, 0, 0, 0]  # one label per context word
    assert all(not t.startswith("##") for t, _ in tagged)
    data = [ex, AdapterExample(uid="2", context=ctx, question=synthetic.LOC_Q, answers=("Quackenbush Manor",))]
    result = METHODS["ft"]().run(task, data, data, AdapterConfig(model=bert_path, **OVERFIT))
    assert result.predictions == [["Bartholomew Quackenbush"], ["Quackenbush Manor"]]
    assert_substrings(result.predictions, data)


def test_ft_ner_long_context_windows(bert_path):
    """NER over several windows: every word labelled once (at its first sub-word, from the
    window where it has most context); entities on both sides of a window edge come back as
    exact substrings."""
    task = CLUES_TASKS["conll03"]
    filler = " ".join(["the weather was calm on Tuesday ."] * 5)
    ctx = f"John Smith met Mary Jones . {filler} Bartholomew Quackenbush flew to Paris ."
    data = [
        AdapterExample(
            uid="p",
            context=ctx,
            question=synthetic.PEOPLE_Q,
            answers=("John Smith", "Mary Jones", "Bartholomew Quackenbush"),
        ),
        AdapterExample(uid="l", context=ctx, question=synthetic.LOC_Q, answers=("Paris",)),
        AdapterExample(uid="o", context=ctx, question=synthetic.ORG_Q, answers=()),
    ]
    cfg = dict(model=bert_path, max_length=40, doc_stride=12, device="cpu")
    session = FTSession(task, AdapterConfig(**cfg))
    features, windows = session.encode(data, training=True)
    assert len(features) >= 3 * len(data)
    result = METHODS["ft"]().run(
        task,
        data,
        data,
        AdapterConfig(lr=1e-3, epochs=150, batch_size=32, warmup_ratio=0.0, extra={"optimizer": "adamw"}, **cfg),
    )
    assert [sorted(p) for p in result.predictions] == [
        ["Bartholomew Quackenbush", "John Smith", "Mary Jones"],
        ["Paris"],
        [],
    ]


def test_ft_follows_the_clues_reference_regime():
    """The CLUES reference (classic_finetuning/run_clues_finetune.sh: OPTIM=adamax; prepro_clues_ext.py:
    DOC_STRIDE=180, the tokenizer's stride) is the default."""
    from fewshot_models.span_ft import DEFAULTS

    assert DEFAULTS["optimizer"] == "adamax" and DEFAULTS["doc_stride"] == 180
    assert (DEFAULTS["lr"], DEFAULTS["epochs"], DEFAULTS["batch_size"], DEFAULTS["max_length"]) == (5e-5, 3, 16, 384)
