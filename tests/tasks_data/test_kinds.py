"""The answer kinds (tasks_data/kinds.py): the registry of kinds, what each kind says a worker, a file and a
model, and the demo builder reading the task registry."""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

import pytest

from tasks_data.kinds import KINDS, InvalidAnswer, LabelKind, UnknownKind, get_kind, register_kind
from tasks_data.registry import CLUES_TASKS, TaskSpec

ROOT = Path(__file__).resolve().parents[2]


def test_the_registry_of_kinds_holds_the_api_names():
    assert list(KINDS) == ["label", "spans", "span_or_none", "entity"]
    assert {spec.slug: spec.answer_kind.name for spec in CLUES_TASKS.values()} == {
        "sst2": "label",
        "mnli": "label",
        "conll03": "spans",
        "wikiann": "spans",
        "squad2": "span_or_none",
        "record": "entity",
    }
    with pytest.raises(UnknownKind, match="unknown answer kind 'numbr'; known kinds: label, spans"):
        get_kind("numbr")
    with pytest.raises(ValueError, match="'label' is taken by LabelKind"):
        register_kind(type("Labels2", (LabelKind,), {}))
    assert type(KINDS["label"]) is LabelKind


def test_a_task_names_its_kind_or_holds_it():
    by_name = dataclasses.replace(CLUES_TASKS["sst2"], slug="sst2b", answer_kind="label")
    assert by_name.answer_kind is CLUES_TASKS["sst2"].answer_kind
    with pytest.raises(UnknownKind, match="'labels'"):
        dataclasses.replace(CLUES_TASKS["sst2"], answer_kind="labels")


def test_properties_of_the_four_kinds():
    facts = {
        name: (k.allows_empty, k.max_spans, k.gold_is_alternatives, k.is_choice, k.alpha_distance)
        for name, k in KINDS.items()
    }
    assert facts == {
        "label": (False, 1, False, True, "nominal"),
        "spans": (True, None, False, False, "jaccard"),
        "span_or_none": (True, 1, True, False, "jaccard"),
        "entity": (False, 1, True, True, "jaccard"),
    }


def test_the_official_export_shape_of_an_empty_answer():
    """The CLUES files write the NER empty set as [""] (eval/S1.py scores [] against it as wrong); MRC "no
    answer" is []."""
    assert KINDS["spans"].as_published([]) == [""]
    assert KINDS["spans"].as_published(["Paris"]) == ["Paris"]
    assert KINDS["span_or_none"].as_published([]) == []
    assert KINDS["label"].as_published(["positive"]) == ["positive"]


def test_each_kind_reads_its_widgets_form():
    assert KINDS["label"].form_answer({"label": "negative"}) == ["negative"]
    assert KINDS["label"].form_answer({}) == []
    assert KINDS["spans"].form_answer({"none": "1", "spans": "[[0, 1]]"}) == []
    assert KINDS["entity"].form_answer({"spans": "[[3, 7]]"}) == [{"start": 3, "end": 7}]
    with pytest.raises(InvalidAnswer, match="choose the \u201cnone\u201d button"):
        KINDS["spans"].form_answer({"spans": "[]"})
    with pytest.raises(InvalidAnswer, match="choose the \u201cno answer\u201d button"):
        KINDS["span_or_none"].form_answer({"spans": "[]"})
    for unreadable in ("[[0, 1]", '{"a": 1}', "[" * 100_000):  # the last exhausts the decoder's recursion
        with pytest.raises(InvalidAnswer, match="could not be read"):
            KINDS["spans"].form_answer({"spans": unreadable})


def test_a_models_reply_is_read_by_its_kinds_rules_with_a_reason():
    @dataclasses.dataclass
    class Item:
        context: str
        question: str = "q"
        hypothesis: str = ""
        candidates: tuple = ()

    ner, squad, record, sst = (CLUES_TASKS[s] for s in ("conll03", "squad2", "record", "sst2"))
    item = Item("Ann met Bo in Oslo .")
    assert ner.answer_kind.read_reply(ner, item, "Answer: ann | Bo") == ["Ann", "Bo"]
    assert ner.answer_kind.read_reply(ner, item, "none in this text") == []
    with pytest.raises(InvalidAnswer, match="'Paris' is not text of the passage"):
        ner.answer_kind.read_reply(ner, item, "Ann | Paris")
    with pytest.raises(InvalidAnswer, match="takes at most 1 span, got 2"):
        squad.answer_kind.read_reply(squad, item, "Ann | Bo")
    with pytest.raises(InvalidAnswer, match="positive, negative"):
        sst.answer_kind.read_reply(sst, item, "great")
    assert sst.answer_kind.read_reply(sst, item, "NEGATIVE.") == ["negative"]
    article = Item("Obama met Putin.", candidates=((0, 5), (10, 15)))
    assert record.answer_kind.options(record, article) == ["Obama", "Putin"]
    assert record.answer_kind.read_reply(record, article, "putin") == ["Putin"]
    with pytest.raises(InvalidAnswer, match="is not one of the names in the list"):
        record.answer_kind.read_reply(record, article, "Merkel")


def _make_demo():
    spec = importlib.util.spec_from_file_location("make_demo", ROOT / "tasks_data" / "demo" / "make_demo.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_demo_builder_reads_the_task_registry(monkeypatch):
    """The demo files are checked against every registry task (folder, file names, rows per shot); a task
    the builder has no texts for is named."""
    make_demo = _make_demo()
    assert make_demo.verify()
    extra = TaskSpec(
        slug="toy",
        name="Toy",
        category=CLUES_TASKS["sst2"].category,
        answer_kind="label",
        description="d",
        clues_folder="Toy",
        clues_prefix="toy",
    )
    monkeypatch.setitem(CLUES_TASKS, "toy", extra)
    with pytest.raises(SystemExit, match="no demo texts here: toy"):
        make_demo.verify()
