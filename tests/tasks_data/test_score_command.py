"""`manage.py score PREDICTIONS.jsonl --task SLUG`: S1 of a prediction file, and its refusals."""

import io
import json

import pytest
from django.core.management import CommandError, call_command

from tasks_data.importer import import_release
from tasks_data.models import Task
from tasks_data.registry import CLUES_TASKS
from tasks_data.selectors import test_examples
from tests.tasks_data import synthetic


def gold_prediction(example):
    return example.gold[:1] if example.task.spec.answer_kind.gold_is_alternatives else list(example.gold)


def prediction_file(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def gold_rows(slug):
    task = Task.objects.get(slug=slug)
    return [{"id": e.clues_id, "prediction": gold_prediction(e)} for e in test_examples(task).select_related("task")]


def score(path, slug):
    out = io.StringIO()
    call_command("score", str(path), "--task", slug, stdout=out)
    return out.getvalue().strip()


@pytest.fixture
def synthetic_data(db, tmp_path):
    return import_release(synthetic.write_release(tmp_path / "release", tag="s"), source="synthetic")


def test_gold_scores_100_on_every_clues_task(synthetic_data, tmp_path):
    for slug in CLUES_TASKS:
        path = prediction_file(tmp_path / f"{slug}.jsonl", gold_rows(slug))
        assert score(path, slug) == f"{CLUES_TASKS[slug].name} S1 = 100.0 over {synthetic.test_rows(slug)} test items"


def test_sst2_ids_may_be_numbers(synthetic_data, tmp_path):
    rows = [{"id": int(r["id"]), "prediction": r["prediction"]} for r in gold_rows("sst2")]
    assert "S1 = 100.0" in score(prediction_file(tmp_path / "p.jsonl", rows), "sst2")


def test_partial_credit(synthetic_data, tmp_path):
    """Synthetic NER test: 6 sentences, every 3rd without a person -> people rows empty in 2 of 6."""
    rows = [{"id": r["id"], "prediction": []} for r in gold_rows("conll03")]
    # all-empty: right exactly on the 2 person-less people rows (of 18 rows)
    assert score(prediction_file(tmp_path / "p.jsonl", rows), "conll03").startswith(
        f"CoNLL03 S1 = {round(100 * 2 / 18, 1)} over 18"
    )


def test_blank_lines_are_ignored(synthetic_data, tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in gold_rows("mnli")) + "\n\n", encoding="utf-8")
    assert "S1 = 100.0" in score(path, "mnli")


@pytest.mark.parametrize(
    "change,message",
    [
        (
            lambda rows: rows + [{"id": "no-such-id", "prediction": []}],
            "line 7: unknown id 'no-such-id' (not in the test set)",
        ),
        (lambda rows: rows[:2] + rows[3:], "1 test id(s) have no prediction: 'st3'"),
        (lambda rows: rows + [rows[0]], "line 7: duplicate id 'st1'"),
        (lambda rows: rows[:1] + ["this is not json"] + rows[1:], "line 2: not valid JSON"),
        (
            lambda rows: rows[:1] + [["st2", ["neutral"]]] + rows[2:],
            'line 2: expected {"id": ..., "prediction": [...]}',
        ),
        (lambda rows: rows[:1] + [{"id": "st2"}] + rows[2:], 'line 2: expected {"id": ..., "prediction": [...]}'),
        (
            lambda rows: rows[:1] + [{"id": "st2", "prediction": "neutral"}] + rows[2:],
            "line 2: prediction must be a list of strings",
        ),
        (
            lambda rows: rows[:1] + [{"id": "st2", "prediction": [1]}] + rows[2:],
            "line 2: prediction must be a list of strings",
        ),
    ],
    ids=[
        "unknown id",
        "missing id",
        "duplicate id",
        "invalid JSON",
        "not an object",
        "no prediction field",
        "prediction not a list",
        "prediction not strings",
    ],
)
def test_bad_prediction_file_refused(synthetic_data, tmp_path, change, message):
    rows = change(gold_rows("mnli"))
    path = tmp_path / "p.jsonl"
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(CommandError) as caught:
        score(path, "mnli")
    assert str(caught.value).startswith(f"{path}:\n")
    assert message in str(caught.value)


def test_every_problem_reported(synthetic_data, tmp_path):
    rows = gold_rows("sst2")
    rows = [rows[0], rows[0], "{", {"id": "77", "prediction": []}, *rows[2:]]
    path = tmp_path / "p.jsonl"
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(CommandError) as caught:
        score(path, "sst2")
    lines = str(caught.value).splitlines()[1:]
    assert lines == [
        "line 2: duplicate id '1'",
        "line 3: not valid JSON (Expecting property name enclosed in double quotes)",
        "line 4: unknown id '77' (not in the test set)",
        "1 test id(s) have no prediction: '2'",
    ]


def test_missing_file_task_without_data_and_unknown_task(db, tmp_path):
    import_release(synthetic.write_release(tmp_path / "release", slugs=["sst2"]), source="synthetic")
    with pytest.raises(CommandError, match="cannot read .*nothing.jsonl"):
        score(tmp_path / "nothing.jsonl", "sst2")
    path = prediction_file(tmp_path / "p.jsonl", [{"id": "1", "prediction": []}])
    with pytest.raises(CommandError, match="task 'mnli' has no data yet: run manage.py import_clues first"):
        score(path, "mnli")
    with pytest.raises(CommandError, match=r"--task: unknown task 'qnli' \(tasks: sst2, mnli, "):
        score(path, "qnli")


def test_not_utf8_refused(synthetic_data, tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_bytes(b'{"id": "\xff"}\n')
    with pytest.raises(CommandError, match="cannot read"):
        score(path, "sst2")


# ---------------------------------------------------------------- the official data


def test_official_gold_file_scores_100(clues_data, tmp_path):
    for slug in CLUES_TASKS:
        path = prediction_file(tmp_path / f"{slug}.jsonl", gold_rows(slug))
        assert score(path, slug).startswith(f"{CLUES_TASKS[slug].name} S1 = 100.0 over ")


def test_official_all_empty_conll03_in_clues_format(clues_data, tmp_path):
    """The empty set written as CLUES writes it, [""]: 51.3 (the paper's footnote 6)."""
    task = Task.objects.get(slug="conll03")
    path = prediction_file(
        tmp_path / "empty.jsonl", [{"id": e.clues_id, "prediction": [""]} for e in test_examples(task)]
    )
    assert score(path, "conll03") == "CoNLL03 S1 = 51.3 over 600 test items"


# ---------------------------------------------------------------- line breaks, --strict, --mrc-gold


def test_raw_u2028_inside_a_string_is_valid_jsonl(synthetic_data, tmp_path):
    """JSON allows U+2028/U+2029/U+0085 raw inside a string: only real line breaks end a line."""
    rows = gold_rows("conll03")
    rows[0] = {"id": rows[0]["id"], "prediction": ["not\u2028a name\u0085here"]}
    path = tmp_path / "p.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\r\n" for r in rows), encoding="utf-8")
    assert "\u2028" in path.read_text(encoding="utf-8")
    assert score(path, "conll03").startswith("CoNLL03 S1 = ")  # scored, not refused
    # A real line break inside a row is refused, naming the line.
    broken = json.dumps(rows[1]).replace(", ", ",\n", 1)
    path.write_text(
        json.dumps(rows[0], ensure_ascii=False)
        + "\n"
        + broken
        + "\n"
        + "".join(json.dumps(r) + "\n" for r in rows[2:]),
        encoding="utf-8",
    )
    with pytest.raises(CommandError, match="line 2: not valid JSON"):
        score(path, "conll03")


def test_strict_matches_the_official_function_on_whitespace_and_empty_spellings(synthetic_data, tmp_path):
    rows = gold_rows("conll03")
    padded = [{"id": r["id"], "prediction": [f" {p} " for p in r["prediction"]]} for r in rows]
    path = prediction_file(tmp_path / "p.jsonl", padded)
    assert "S1 = 100.0" in score(path, "conll03")
    out = io.StringIO()
    call_command("score", str(path), "--task", "conll03", "--strict", stdout=out, stderr=io.StringIO())
    # Strict: no stripping, so every padded name misses; and the rows without a person, written []
    # here, miss too: the official function compares [] with the data's [""] and finds them different.
    assert out.getvalue().startswith("CoNLL03 S1 = 0.0 over 18")
    as_published = [{"id": r["id"], "prediction": r["prediction"] or [""]} for r in rows]
    out = io.StringIO()
    call_command(
        "score",
        str(prediction_file(path, as_published)),
        "--task",
        "conll03",
        "--strict",
        stdout=out,
        stderr=io.StringIO(),
    )
    assert out.getvalue().startswith("CoNLL03 S1 = 100.0 over 18")


def test_mrc_gold_option_and_note(clues_data, tmp_path):
    """A perfect one-span predictor on SQuADv2: 100.0 with the best alternative, 88.8 with the set reading."""
    path = prediction_file(tmp_path / "p.jsonl", gold_rows("squad2"))
    for reading, expected in (("best", "100.0"), ("set", "88.8")):
        out, err = io.StringIO(), io.StringIO()
        call_command("score", str(path), "--task", "squad2", "--mrc-gold", reading, stdout=out, stderr=err)
        assert out.getvalue().strip() == f"SQuADv2 S1 = {expected} over 200 test items"
        assert "MRC gold rule" in err.getvalue() and "does not say which the authors used" in err.getvalue()
    with pytest.raises(CommandError, match="invalid choice: 'any'"):
        call_command("score", str(path), "--task", "squad2", "--mrc-gold", "any")
