"""``icl`` (in-context learning) on a tiny GPT-2."""

from __future__ import annotations

import pytest

from fewshot_models import METHODS, AdapterConfig, AdapterExample
from fewshot_models.backends import LoglikelihoodRequest
from fewshot_models.base import render_answer
from fewshot_models.icl import ICLSession, fit_demonstrations, parse_generated, render_example
from tests.adapters.adapter_helpers import assert_substrings, assert_well_formed, task_and_data


@pytest.mark.parametrize("kind", ["label", "spans", "span_or_none", "entity"])
def test_icl_runs_every_kind(gpt2_path, kind):
    task, data = task_and_data(kind)
    test = data[:4]
    result = METHODS["icl"]().run(task, data, test, AdapterConfig(model=gpt2_path, device="cpu", max_new_tokens=12))
    assert_well_formed(result, len(test))
    assert result.train_seconds == 0 and result.train_examples_per_second is None
    assert len(result.notes["demonstrations_used"]) == len(test)
    assert sorted(result.notes["demonstration_order"]) == sorted(ex.uid for ex in data)
    if kind == "label":
        assert all(len(p) == 1 and p[0] in task.labels for p in result.predictions)
    elif kind == "entity":
        for pred, ex in zip(result.predictions, test, strict=True):
            assert len(pred) == 1 and pred[0] in {ex.context[s:e] for s, e in ex.candidates}
    else:
        assert_substrings(result.predictions, test)


def test_icl_generated_spans_are_context_substrings(gpt2_path):
    task, data = task_and_data("spans")
    notes = {"spans_not_in_context": 0}
    ex = AdapterExample(uid="x", context="John Smith met Mary Jones in Paris .", question="q", answers=())
    pred = parse_generated(task, ex, "john smith, Mary  Jones, Napoleon, none", notes)
    assert pred == ["John Smith", "Mary Jones"] and notes["spans_not_in_context"] == 1
    assert parse_generated(task, ex, " none", notes) == []


def test_icl_drops_demonstrations_from_the_front(gpt2_path):
    task, data = task_and_data("span_or_none")
    cfg = AdapterConfig(model=gpt2_path, device="cpu", max_length=200, max_new_tokens=8)
    session = ICLSession(task, cfg)
    backend = session.backend
    demos = data  # already in some order; fit keeps the END of the list
    demo_texts = [render_example(d, render_answer(task, d)) for d in demos]
    query = data[0]
    request, used, truncated = session.fit(session.request(query, []), demo_texts, backend.count_tokens(demo_texts))
    assert request.max_tokens == 8 and backend.context_budget(request) == 200 - 8
    assert 0 < used < len(demos) and not truncated
    prompt = backend.prompt_ids(request.context, backend.context_budget(request))
    assert len(prompt) <= 200 - 8
    text = backend.tokenizer.decode(prompt)
    kept, dropped = demos[len(demos) - used :], demos[: len(demos) - used]
    for d in kept:
        assert d.context in text
    for d in dropped:
        assert d.context not in text or d.context == query.context
    # End to end: per-item counts recorded, smaller than K, the same rule as above.
    result = METHODS["icl"]().run(task, data, data[:3], cfg)
    assert all(0 < n < len(data) for n in result.notes["demonstrations_used"])
    assert fit_demonstrations([5, 5, 5], 4, 14) == 2
    assert fit_demonstrations([5, 5, 5], 20, 14) == 0


def test_icl_seed_shuffles_demonstrations_and_is_deterministic(gpt2_path):
    task, data = task_and_data("label")
    test = data[:3]
    a = METHODS["icl"]().run(task, data, test, AdapterConfig(model=gpt2_path, device="cpu", seed=1))
    b = METHODS["icl"]().run(task, data, test, AdapterConfig(model=gpt2_path, device="cpu", seed=1))
    c = METHODS["icl"]().run(task, data, test, AdapterConfig(model=gpt2_path, device="cpu", seed=2))
    assert a.notes["demonstration_order"] == b.notes["demonstration_order"]
    assert a.predictions == b.predictions
    assert a.notes["demonstration_order"] != c.notes["demonstration_order"]
    assert sorted(a.notes["demonstration_order"]) == sorted(c.notes["demonstration_order"])


def test_icl_label_scores_are_log_likelihoods(gpt2_path):
    """The summed log-likelihood of a continuation equals a manual token-by-token sum."""
    import torch

    task, data = task_and_data("label")
    session = ICLSession(task, AdapterConfig(model=gpt2_path, device="cpu"))
    backend = session.backend
    query = render_example(data[0], None)
    prompt = backend.ids(query)
    conts = [backend.continuation_ids((query,), " " + o) for o in ("positive", "negative", "a b c")]
    assert conts[0] == backend.ids(" positive")
    (scores,) = backend.loglikelihood([LoglikelihoodRequest((query,), (" positive", " negative", " a b c"))])
    for cont, score in zip(conts, scores, strict=True):
        ids = torch.tensor([prompt + cont])
        with torch.no_grad():
            logp = torch.log_softmax(backend.lm(ids).logits[0].float(), dim=-1)
        manual = sum(float(logp[len(prompt) - 1 + k, t]) for k, t in enumerate(cont))
        assert score == pytest.approx(manual, abs=1e-4)


def test_icl_zero_and_few_demonstrations(gpt2_path):
    task, data = task_and_data("label")
    zero = METHODS["icl"]().run(
        task, data, data[:2], AdapterConfig(model=gpt2_path, device="cpu", extra={"max_demonstrations": 0})
    )
    assert zero.notes["demonstration_order"] == [] and zero.notes["demonstrations_used"] == [0, 0]
    three = METHODS["icl"]().run(
        task, data, data[:2], AdapterConfig(model=gpt2_path, device="cpu", extra={"max_demonstrations": 3})
    )
    assert len(three.notes["demonstration_order"]) == 3
    assert three.notes["demonstrations_used"] == [3, 3]
