"""A fifth answer kind is one class and one template: a worker goes through a task of it over HTTP.

The toy kind ``number`` (a whole number typed in a box) is registered here only, and taken out after the test.
Its task is data: a card naming the kind and JSONL in the CLUES unified format, imported as any task of one's
own (``import_task``; the kind reads the gold). The worker follows the join link, reads the description,
answers the training items (seeing the gold after each) and the test items through the pages, and gets the
completion code. Every answer is validated by the kind (a word instead of a number is refused with its message,
nothing stored) and scored with S1.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

import pytest
from django.test import Client

from annotation.models import Answer, Enrollment
from tasks_data import registry
from tasks_data.card_import import import_task
from tasks_data.kinds import KINDS, AnswerKind, InvalidAnswer, ValidatedAnswer, register_kind, unregister_kind
from tests.annotation.factories import pid_for
from tests.worker_pages.factories import cohort_of, make_study

pytestmark = pytest.mark.django_db


class NumberKind(AnswerKind):
    """A whole number typed in a box ("How many people are named?")."""

    name = "number"
    title = "number"
    widget_template = "toy/_widget_number.html"
    description_rule = "Answer with digits only, for example 3."

    def validate_given(self, spec, item, answer: list) -> ValidatedAnswer:
        if len(answer) != 1 or not isinstance(answer[0], str):
            raise InvalidAnswer('answer must be one number, e.g. ["3"]')
        if not re.fullmatch(r"\d{1,4}", answer[0].strip()):
            raise InvalidAnswer(f"{answer[0]!r} is not a whole number: type digits only")
        return ValidatedAnswer(texts=[str(int(answer[0]))], spans=None)

    def form_answer(self, form: Mapping[str, str]) -> list:
        number = form.get("number", "").strip()
        return [number] if number else []


WIDGET = """<h1 class="question" id="item-heading" tabindex="-1">{% include "worker/_question.html" %}</h1>
{% include "worker/_label_text.html" %}
<div class="number-widget" data-widget="number">
  <label>Your answer <input type="text" inputmode="numeric" name="number" autocomplete="off"></label>
  <button type="submit" class="primary" data-role="submit">Submit</button>
  <p class="status" role="status" data-status></p>
</div>
"""


CARD = """slug = "toycount"
name = "Toy count"
kind = "number"
instructions = "instructions.md"
test = "test.jsonl"
train = "train_{shots}_{split}.jsonl"
nested = true
"""


NAMES = ("Ann", "Bo", "Cy", "Di", "Ed", "Flo", "Gus", "Hal")
PLACES = ("market", "harbour", "station", "library", "museum", "garden")


def _row(i: int) -> dict:
    count = i % 4 + 1
    names = list(NAMES[i % 5 : i % 5 + count])
    who = names[0] if count == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    context = f"{who} walked to the {PLACES[i % len(PLACES)]} on day {i}."
    return {"id": f"toy-{i}", "context": context, "question": "How many people are named?", "answer": [str(count)]}


def _task_folder(root):
    """The toy task as data: its card, its instructions, a test file and three nested training files."""
    folder = root / "toycount"
    folder.mkdir(parents=True)
    rows = [_row(i) for i in range(34)]

    def write(name: str, lines: list[dict]) -> None:
        (folder / name).write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")

    (folder / "task.toml").write_text(CARD, encoding="utf-8")
    (folder / "instructions.md").write_text("Each item is a short sentence. Count the people it names.\n")
    write("test.jsonl", rows[:4])
    for shots in (10, 20, 30):
        write(f"train_{shots}_1.jsonl", rows[4 : 4 + shots])
    return folder


@pytest.fixture
def toy_kind(settings, tmp_path):
    register_kind(NumberKind)
    templates = tmp_path / "templates"
    (templates / "toy").mkdir(parents=True)
    (templates / "toy" / "_widget_number.html").write_text(WIDGET, encoding="utf-8")
    engines = [dict(engine) for engine in settings.TEMPLATES]
    engines[0]["DIRS"] = [*engines[0].get("DIRS", []), templates]
    settings.TEMPLATES = engines
    yield KINDS["number"]
    unregister_kind("number")


def _html(response) -> str:
    assert response.status_code == 200, response.status_code
    return response.content.decode()


def _field(html: str, name: str) -> str:
    match = re.search(rf'name="{name}" value="([^"]*)"', html)
    assert match, f"no {name} field on the page"
    return match.group(1)


def test_a_worker_goes_through_a_task_of_a_new_answer_kind(toy_kind, tmp_path, researcher):
    result = import_task(_task_folder(tmp_path), owner=researcher)
    assert (result.spec.slug, len(result.data.test), len(result.data.training_examples)) == ("toycount", 4, 30)
    assert registry.get_task("toycount").answer_kind is toy_kind
    study = make_study(tasks=("toycount",), shots=(10,))
    cohort = cohort_of(study, "toycount", 10)

    client = Client()
    joined = client.get(
        f"/join/{cohort.join_token}/", {"PROLIFIC_PID": pid_for("N1"), "STUDY_ID": "S", "SESSION_ID": "X"}
    )
    assert joined.status_code == 302 and joined["Location"] == "/work/"
    html = _html(client.get("/work/"))
    assert 'data-view="description"' in html and "Count the people it names." in html
    assert "Answer with digits only, for example 3." in html  # the kind's rule on the description page
    assert "Training: 10 items" in html and "Test: 4 items" in html
    assert "js/widgets/" not in html  # the kind has no script: its form is the widget
    assert client.post("/work/start/").status_code == 302

    api = client.get("/api/work/current/").json()
    assert api["task"]["kind"] == "number" and api["item"]["kind"] == "number"

    enrollment = Enrollment.objects.get(worker__external_id=pid_for("N1"))
    sent, refused = [], 0
    while True:
        html = _html(client.get("/work/"))
        view = re.search(r'data-view="(\w+)"', html).group(1)
        if view != "item":
            break
        assert 'data-kind="number"' in html and 'data-widget="number"' in html  # the kind's own template
        handle = _field(html, "item")
        question_text = re.search(r'<p class="text">([^<]*)</p>', html).group(1)
        count = len(re.findall(r"\b(?:" + "|".join(NAMES) + r")\b", question_text))
        if refused == 0:  # the kind's validation, its message shown; nothing is stored
            response = client.post("/work/answer/", {"item": handle, "number": "three"})
            assert response.status_code == 400
            assert "is not a whole number: type digits only" in response.content.decode()
            assert not Answer.objects.filter(enrollment=enrollment).exists()
            refused += 1
        number = str(count if len(sent) % 3 else count + 1)  # every third answer wrong
        assert client.post("/work/answer/", {"item": handle, "number": number}).status_code == 302
        sent.append(number)
        html = _html(client.get("/work/"))
        if 'data-view="feedback"' in html:  # training: the gold shown after the answer
            assert f'<span class="chip gold right">{count}</span>' in html
            assert client.post("/work/next/", {"item": _field(html, "item")}).status_code == 302

    assert view == "done" and "DONE123" in html
    answers = list(Answer.objects.filter(enrollment=enrollment).select_related("example").order_by("answered_at"))
    assert [a.texts for a in answers] == [[n] for n in sent] and len(answers) == 14
    assert [a.s1 for a in answers] == [1.0 if a.texts == a.example.gold else 0.0 for a in answers]
    assert sorted({a.s1 for a in answers}) == [0.0, 1.0]
    enrollment.refresh_from_db()
    assert enrollment.state == Enrollment.State.COMPLETED
    training = [a.s1 for a in answers if a.step == Answer.Step.TRAINING]
    assert enrollment.training_s1 == pytest.approx(sum(training) / len(training))
