"""Exported annotator files, scored by the official eval/S1.py with the gold as published,
give exactly the platform's number, on every task.

One annotator per task answers the first test items through the services with a mix of
gold, wrong, partial and empty answers; their prediction file (``exports.prediction_jsonl``)
is then scored by the copied official function against the test file read from the zip as
published, and by ``manage.py score`` (default and ``--strict``).
"""

import io
import json
import zipfile

import pytest
from django.core.management import call_command

from annotation import services
from annotation.models import Answer
from results import exports
from tasks_data.models import Example, Task
from tasks_data.registry import CLUES_TASKS
from tasks_data.s1 import percent
from tasks_data.scoring import item_scores
from tasks_data.selectors import test_examples
from tests.annotation.factories import cohort, gold_answer, join, make_study, trim_test_set, wrong_answer
from tests.conftest import imported_for_module
from tests.tasks_data.official_s1 import _s1_entry, eval_S1

pytestmark = [pytest.mark.django_db, pytest.mark.official_data]
KEEP = 60  # first test items of each task (SQuADv2's first 60 hold unanswerable and multi-answer items)


@pytest.fixture(scope="module")
def official(clues_zip, django_db_setup, django_db_blocker):
    from tasks_data.importer import import_release

    with imported_for_module(django_db_blocker, lambda: import_release(clues_zip)) as report:
        yield report


def published_gold(clues_zip, slug: str) -> list[tuple[str | int, list[str]]]:
    """(id, answer) of the test file's lines, read as published: MRC answers as their texts."""
    spec = CLUES_TASKS[slug]
    with zipfile.ZipFile(clues_zip) as archive:
        text = archive.read(f"CLUES-JSON/{spec.clues_folder}/{spec.test_filename}").decode("utf-8")
    rows = [json.loads(line) for line in text.split("\n") if line]
    return [(r["id"], [a["text"] if isinstance(a, dict) else a for a in r["answer"]]) for r in rows]


def _partial(example: Example) -> list:
    """Spans: the gold less one name, or the gold plus a wrong word; otherwise the gold."""
    answer = gold_answer(example)
    if example.task.spec.answer_kind.max_spans is None and len(answer) > 1:
        return answer[1:]
    return answer


def _mixed(example: Example, position: int) -> list:
    kind = example.task.spec.answer_kind
    choice = position % 4
    if choice == 1:
        return wrong_answer(example)
    if choice == 2:
        return _partial(example)
    if choice == 3 and kind.allows_empty:
        return []
    if choice == 3:
        return wrong_answer(example)
    return gold_answer(example)


def annotator(slug: str):
    trim_test_set(slug, KEEP)
    study = make_study(tasks=[slug], shots=[0], filter_floor=None, filter_fraction=None)
    enrollment = join(cohort(study, slug, 0), f"roundtrip-{slug}")
    while (state := services.current_item(enrollment_id=enrollment.pk)).item is not None:
        services.submit_answer(
            enrollment_id=enrollment.pk, item=state.item_handle, answer=_mixed(state.item, state.done)
        )
    enrollment.refresh_from_db()
    return enrollment


def platform_s1(enrollment) -> float:
    """The platform's number: the mean of the stored per-answer S1 (what the tables average)."""
    scores = list(Answer.objects.filter(enrollment=enrollment, step=Answer.Step.TEST).values_list("s1", flat=True))
    assert len(scores) == KEEP
    return sum(scores) / len(scores)


def official_best(predictions, golds) -> float:
    """The SQuAD convention with the official per-item function: best single alternative."""
    total = 0.0
    for pred, gold in zip(predictions, golds, strict=True):
        total += max((_s1_entry(pred, [alt]) for alt in gold), default=_s1_entry(pred, []))
    return total / len(predictions)


def score_command(path, slug, *extra) -> str:
    out = io.StringIO()
    call_command("score", str(path), "--task", slug, *extra, stdout=out, stderr=io.StringIO())
    return out.getvalue()


@pytest.mark.parametrize("slug", list(CLUES_TASKS))
def test_exported_file_scored_by_the_official_function_equals_the_platform(official, clues_zip, slug, tmp_path):
    enrollment = annotator(slug)
    exported = exports.prediction_jsonl(enrollment)
    rows = [json.loads(line) for line in exported.split("\n") if line]
    gold = published_gold(clues_zip, slug)[:KEEP]
    # Ids as the file writes them (SST-2's are numbers), so a join by id works too.
    assert [(type(r["id"]), r["id"]) for r in rows] == [(type(i), i) for i, _ in gold]
    predictions, golds = [r["prediction"] for r in rows], [g for _, g in gold]

    platform = platform_s1(enrollment)
    assert 0.05 < platform < 0.95  # the mix gives partial credit, not a trivial 0 or 1
    if CLUES_TASKS[slug].answer_kind.gold_is_alternatives:
        assert official_best(predictions, golds) == pytest.approx(platform, abs=1e-12)
        # The literal reading of eval/S1.py (published list as one gold set) is --mrc-gold set.
        task = Task.objects.get(slug=slug)
        as_set = item_scores(task, list(test_examples(task).select_related("task")), predictions, mrc_gold="set")
        assert eval_S1(predictions, golds) == pytest.approx(sum(as_set) / len(as_set), abs=1e-12)
    else:
        assert eval_S1(predictions, golds) == pytest.approx(platform, abs=1e-12)

    path = tmp_path / "annotator.jsonl"
    path.write_text(exported, encoding="utf-8")
    expected = f"S1 = {percent(platform):.1f} over {KEEP} test items"
    assert expected in score_command(path, slug)
    assert expected in score_command(path, slug, "--strict")

    if CLUES_TASKS[slug].answer_kind.as_published([]) == [""]:
        # The data's spelling matters to the official function: [] for "no entity" scores 0 there.
        assert [""] in predictions
        old_spelling = [p if p != [""] else [] for p in predictions]
        assert eval_S1(old_spelling, golds) < platform - 0.05
        path.write_text(
            "".join(
                json.dumps({"id": r["id"], "prediction": p}) + "\n" for r, p in zip(rows, old_spelling, strict=True)
            ),
            encoding="utf-8",
        )
        assert expected in score_command(path, slug)  # score keeps accepting both spellings
        assert expected not in score_command(path, slug, "--strict")
