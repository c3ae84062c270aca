"""A task of one's own in the results, as a CLUES task is: Table 5 (its own shot sizes as columns), every export
kind and format, agreement, the items view, the results page; and each annotator's file in the official format,
scored by the official eval/S1.py as the platform scores it."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from results import exports, formats
from tests.annotation.factories import cohort, complete, make_study
from tests.tasks_data.official_s1 import eval_S1
from tests.tasks_data.own_tasks import row

pytestmark = pytest.mark.django_db
WRONG = ({1}, {0, 3}, {2, 4, 5})  # each annotator's wrong test items


@pytest.fixture
def study(own_task, researcher):
    own_task(kind="label", slug="lamps", name="Lamps", shots=(2, 4))
    return make_study(tasks=("lamps",), shots=(0, 2), created_by=researcher, workers_per_cohort=3, filter_fraction=None)


def _export(study, kind: str, fmt: str | None = None, *extra) -> str:
    out = io.StringIO()
    args = ["export_results", "--study", str(study.pk), "--kind", kind, *extra]
    if fmt:
        args += ["--format", fmt]
    call_command(*args, stdout=out)
    return out.getvalue()


def test_table5_every_export_and_the_official_scorer_on_a_task_of_ones_own(study, tmp_path):
    enrollments = {}
    for shots in (0, 2):
        for n, wrong in enumerate(WRONG):
            enrollments[(shots, n)] = complete(cohort(study, "lamps", shots), f"w{shots}{n}", wrong_test=wrong)
    # Table 5: the task's name, a cell per shot size with the annotators' mean ± std (ddof=1) of test S1.
    table = json.loads(_export(study, "table", "json"))
    cells = {(c["task"], c["shots"]): c for c in table["cells"]}
    expected = [100 * (6 - len(w)) / 6 for w in WRONG]  # 6 test items
    mean = sum(expected) / 3
    assert set(cells) == {("lamps", 0), ("lamps", 2)}
    assert cells[("lamps", 2)]["mean"] == pytest.approx(mean) and cells[("lamps", 2)]["n"] == 3
    markdown = _export(study, "table", "md")
    assert "Lamps" in markdown and f"{mean:.1f} ± " in markdown
    for fmt in formats.TABLE_FORMATS:
        assert "lamps" in _export(study, "table", fmt).lower(), fmt
    for kind in ("annotators", "learning_curves", "agreement", "items"):
        for fmt in formats.ROW_FORMATS:
            assert "lamps" in _export(study, kind, fmt), (kind, fmt)
    agreement = json.loads(_export(study, "agreement", "json"))
    rows = agreement if isinstance(agreement, list) else agreement["rows"]
    assert {r["shots"] for r in rows if r["task"] == "lamps"} == {0, 2}
    assert all(r["krippendorff_alpha"] is not None for r in rows)
    # Each annotator's file, in the official format: the official function gives the platform's S1.
    gold = [row("label", f"t{n}", n)["answer"] for n in range(1, 7)]  # the test file's answers, as published
    for (shots, n), enrollment in enrollments.items():
        lines = [json.loads(line) for line in exports.prediction_jsonl(enrollment).splitlines()]
        assert [r["id"] for r in lines] == [f"t{i}" for i in range(1, 7)]
        assert eval_S1([r["prediction"] for r in lines], gold) == pytest.approx(expected[n] / 100)
        path = tmp_path / f"{shots}-{n}.jsonl"
        path.write_text(exports.prediction_jsonl(enrollment))
        out = io.StringIO()
        call_command("score", str(path), "--task", "lamps", "--strict", stdout=out)
        assert f"Lamps S1 = {expected[n]:.1f} over 6 test items" in out.getvalue()


def test_the_results_page_and_the_items_view(study, researcher_client):
    for n, wrong in enumerate(WRONG):
        complete(cohort(study, "lamps", 2), f"p{n}", wrong_test=wrong)
    page = researcher_client.get(f"/dashboard/studies/{study.pk}/results/")
    html = page.content.decode()
    assert page.status_code == 200 and "Lamps" in html and "2 shots" in html
    items = researcher_client.get(f"/dashboard/studies/{study.pk}/results/items/")
    assert items.status_code == 200 and f"/results/items/{cohort(study, 'lamps', 2).pk}/t1" in items.content.decode()
    c = cohort(study, "lamps", 2)
    item = researcher_client.get(f"/dashboard/studies/{study.pk}/results/items/{c.pk}/t2")
    assert item.status_code == 200 and "Lamp t2 is" in item.content.decode()
