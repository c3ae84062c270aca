"""Table 5's extras through the HTTP surface: majority-vote rows, 95% intervals, the planner, the MRC gold rule."""

from __future__ import annotations

import csv
import io
import json
import re
from decimal import Decimal

import numpy as np
import pytest
from django.core.management import call_command
from django.test import Client
from scipy import stats as scipy_stats

from annotation import services
from annotation.estimates import cohort_estimate
from results.cells import table_cells
from results.uncertainty import t_interval, two_level_interval
from tasks_data.models import Example
from tasks_data.s1 import MRC_GOLD_NOTE, as_set, item_s1
from tests.annotation.factories import cohort, complete, gold_answer, join, make_study, pid_for, trim_test_set

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clues")]


@pytest.fixture
def sst(researcher):
    """SST-2, 5 test items, 10 shots: A right everywhere, B wrong on item 4, C wrong on items 3 and 4."""
    trim_test_set("sst2", 5)
    study = make_study(
        tasks=["sst2"],
        shots=[0, 10],
        created_by=researcher,
        filter_floor=None,
        filter_fraction=None,
        workers_per_cohort=4,
    )
    ten = cohort(study, "sst2", 10)
    complete(ten, "A")
    complete(ten, "B", wrong_test={4})
    complete(ten, "C", wrong_test={3, 4})
    return study


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_majority_row_and_intervals_in_every_table_export(sst, researcher):
    client = _client(researcher)
    url = f"/api/studies/{sst.pk}/export/table/"
    payload = json.loads(client.get(url, {"fmt": "json"}).content)
    # Items 0-3: the majority is right (C alone is wrong on item 3); item 4: B and C outvote A.
    ten = next(m for m in payload["majority"] if m["shots"] == 10)
    assert ten == {"task": "sst2", "shots": 10, "s1": pytest.approx(80.0), "n": 3}
    assert next(m for m in payload["majority"] if m["shots"] == 0)["s1"] is None  # nobody finished
    cell = next(c for c in payload["cells"] if c["shots"] == 10)
    assert set(cell) == {"task", "shots", "mean", "std", "n"}  # the cells' keys stay as they were
    interval, task_items = (
        next(i for i in payload["intervals"] if i["shots"] == 10 and i["target"] == target)
        for target in ("this test set", "the task's items")
    )
    assert set(payload["interval_targets"]) == {"this test set", "the task's items"}
    assert interval["low"] < cell["mean"] < interval["high"] <= 100.0 and interval["confidence"] == 0.95
    # This test set: Student's t on the annotators' S1 (100, 80, 60): 80 ± t(0.975, 2) 20 / sqrt(3), clipped to 100.
    half = scipy_stats.t.ppf(0.975, 2) * 20 / np.sqrt(3)
    assert interval["low"] == pytest.approx(80 - half) and interval["high"] == pytest.approx(100.0)
    assert t_interval([1.0, 0.8, 0.6]).low == pytest.approx((80 - half) / 100)
    # The task's items: annotators x items ANOVA by hand, each variance part with its own t quantile.
    m = np.ones((3, 5))
    m[1, 4] = m[2, 3] = m[2, 4] = 0.0
    rows_, cols_ = m.mean(axis=1), m.mean(axis=0)
    resid = m - rows_[:, None] - cols_[None, :] + m.mean()
    ms_a, ms_i = 5 * rows_.var(ddof=1), 3 * cols_.var(ddof=1)
    ms_e = (resid**2).sum() / 8
    t2, t4 = scipy_stats.t.ppf(0.975, 2), scipy_stats.t.ppf(0.975, 4)
    half2 = np.sqrt(t2**2 * ms_a / 15 + t4**2 * (ms_i - ms_e) / 15)
    assert task_items["low"] == pytest.approx(100 * (0.8 - half2))
    assert two_level_interval(m).high == pytest.approx(0.8 + half2)

    rows = list(csv.reader(io.StringIO(client.get(url, {"fmt": "csv"}).content.decode())))
    assert rows[0] == [
        "Method",
        "#Shots",
        "SST-2",
        "SST-2 n",
        "SST-2 95% CI (this test set) low",
        "SST-2 95% CI (this test set) high",
        "SST-2 95% CI (the task's items) low",
        "SST-2 95% CI (the task's items) high",
        "SST-2 cut off by time",
    ]
    human10 = next(r for r in rows if r[:2] == ["Human", "10"])
    assert human10[-1] == "0"  # nobody cut off by a part's time limit
    assert (
        human10[2] == "80.0 ± 20.0"
        and human10[3] == "3"
        and float(human10[4]) == pytest.approx(interval["low"], abs=0.01)
    )
    assert float(human10[6]) == pytest.approx(task_items["low"], abs=0.01)
    assert ["Majority vote", "10", "80.0", "3", "", "", "", "", ""] in rows  # no cut-off count: not a human row
    md = client.get(url, {"fmt": "md"}).content.decode()
    low, high = interval["low"], interval["high"]
    # Three annotators: their values beside the (model-based) interval, as the paper's cells of three.
    assert f"| Human | 10 | 80.0 ± 20.0 [{low:.1f}, {high:.1f}] (values 60.0, 80.0, 100.0) (n=3) |" in md
    assert "| Majority vote | 10 | 80.0 (n=3) |" in md
    tex = client.get(url, {"fmt": "tex"}).content.decode()
    assert f"80.0 $\\pm$ 20.0 [{low:.1f}, {high:.1f}]" in tex and "Majority vote" in tex
    page = client.get(f"/dashboard/studies/{sst.pk}/results/download.md").content.decode()
    assert page == md


def _planned_by_hand(s1: list[float], half_width: float, assurance: float = 0.8) -> int:
    """The planner re-derived: the spread's upper 90% confidence bound from the pilot (chi-square), then the
    fewest n whose t half-width t s / sqrt(n) is at most the target with probability ``assurance`` when the
    spread is that bound, s^2 (n - 1) / sigma^2 ~ chi2(n - 1)."""
    df = len(s1) - 1
    sigma2 = df * np.var(s1, ddof=1) / scipy_stats.chi2.ppf(0.1, df)
    n = 2
    while (
        scipy_stats.chi2.cdf((n - 1) * n * half_width**2 / (scipy_stats.t.ppf(0.975, n - 1) ** 2 * sigma2), n - 1)
        < assurance
    ):
        n += 1
    return n


def test_results_page_shows_both_intervals_majority_and_the_priced_planner(sst, researcher):
    client = _client(researcher)
    html = client.get(f"/dashboard/studies/{sst.pk}/results/").content.decode()
    assert "Majority vote" in html and '<span class="value">80.0</span>' in html
    assert '<small class="muted detail">± 20.0</small>' in html
    # Its interval beneath it, never past S1's scale (three annotators' normal interval reaches above 100).
    shown = re.findall(r'<small class="muted detail">\[([-0-9.]+), ([-0-9.]+)\](?: model-based)?</small>', html)
    assert shown and all(0 <= float(low) <= float(high) <= 100 for low, high in shown)
    assert ("100.0",) in {(high,) for _, high in shown}
    assert "Annotators for ± 5.0" in html and "95% interval: this test set" in html
    # The plan's promise holds per pilot (the spread's upper 90% bound), the measured assurance beside it, and the
    # range of plans another pilot of 3 would give.
    assert "with 90% confidence" in html and "78-85% for a left-skewed population" in html
    (ten,) = [c for c in table_cells(sst) if c["shots"] == 10]
    assert ten["plan_low"] < ten["planned"] and ten["plan_confidence"] == 0.9
    assert ten["plan_high"] is None  # a pilot of 3 this spread out: another could ask for more than 1000
    plans = f'data-label="Plans from such pilots" data-plan-range>{ten["plan_low"]} to &gt;1000</td>'
    assert plans in html
    assert "95% interval: the task's items" in html
    (cell,) = [c for c in table_cells(sst) if c["shots"] == 10]
    assert cell["planned"] == _planned_by_hand([1.0, 0.8, 0.6], 0.05)
    assert table_cells(sst, target_points=25)[1]["planned"] == _planned_by_hand([1.0, 0.8, 0.6], 0.25)
    wider = table_cells(sst, target_points=40)[1]["planned"]
    assert wider == _planned_by_hand([1.0, 0.8, 0.6], 0.40) < cell["planned"]
    # Priced: planned annotators x the cohort's estimate at the study's rate (measured once 3 workers finished a
    # part: the typical pace of their part totals) + the platform's service fee.
    enrollments = list(sst.cohorts.get(shots=10).enrollments.all())
    assert len(enrollments) == 3
    estimate = cohort_estimate(sst.cohorts.get(shots=10))
    assert estimate.measured
    each = estimate.total_pay
    fee_share = sst.provider.service_fee()
    assert sst.platform == "prolific" and fee_share > 0
    fee = (cell["planned"] * each * Decimal(str(fee_share))).quantize(Decimal("0.01"))
    assert cell["planned_fee"] == fee and cell["planned_cost"] == cell["planned"] * each + fee
    assert cell["expected_minutes"] == estimate.listed_minutes  # what the workers are shown and paid
    html = client.get(f"/dashboard/studies/{sst.pk}/results/", {"target": "40"}).content.decode()
    assert f'<td class="num planned" data-label="Annotators for ± 40.0">{wider}</td>' in html
    for bad in ("abc", "0", "-3", "nan", "1e9"):
        response = client.get(f"/dashboard/studies/{sst.pk}/results/", {"target": bad})
        assert response.status_code == 400 and "target" in response.content.decode()
    api = client.get(f"/api/studies/{sst.pk}/results/", {"target": "40"}).json()
    assert api["cells"][1]["planned"] == wider and api["cells"][1]["majority"] == pytest.approx(80.0)
    assert float(api["cells"][1]["planned_cost"]) == pytest.approx(
        float(wider * each + (wider * each * Decimal(str(fee_share))).quantize(Decimal("0.01")))
    )
    assert client.get(f"/api/studies/{sst.pk}/results/", {"target": "x"}).status_code == 400


def selectors_rows(study):
    from annotation import selectors

    return selectors.study_enrollments(study, results=True)  # active seconds not rounded


def test_majority_vote_ties_on_a_cohort_of_two(researcher):
    trim_test_set("sst2", 4)
    study = make_study(tasks=["sst2"], shots=[0], created_by=researcher, filter_floor=None, filter_fraction=None)
    zero = cohort(study, "sst2", 0)
    complete(zero, "A")
    complete(zero, "B", wrong_test={0, 1, 2, 3})
    # Every item is a 1-1 tie: the label first in sort order wins ("negative" before "positive").
    golds = list(
        Example.objects.filter(task__slug="sst2", role="test").order_by("position").values_list("gold", flat=True)
    )
    expected = 100 * sum(g == ["negative"] for g in golds) / 4
    assert table_cells(study)[0]["majority"] == pytest.approx(expected)


def _squad_study(researcher):
    """SQuADv2 kept to 4 test items, 2 of them with several distinct gold answers; two annotators give
    the first alternative that can be marked."""
    tests = Example.objects.filter(task__slug="squad2", role="test").order_by("position")
    several = [e.pk for e in tests if len(as_set(e.gold)) >= 2 and gold_answer(e)][:2]
    single = [e.pk for e in tests if len(as_set(e.gold)) == 1][:2]
    assert len(several) == 2 and len(single) == 2
    tests.exclude(pk__in=several + single).delete()
    study = make_study(tasks=["squad2"], shots=[0], created_by=researcher, filter_floor=None, filter_fraction=None)
    for pid in ("A", "B"):
        complete(cohort(study, "squad2", 0), pid)
    return study


def test_the_mrc_gold_rule_is_a_parameter_of_every_table_and_is_noted(researcher, tmp_path):
    study = _squad_study(researcher)
    client = _client(researcher)
    url = f"/api/studies/{study.pk}/export/table/"
    best = json.loads(client.get(url, {"fmt": "json"}).content)
    as_set_ = json.loads(client.get(url, {"fmt": "json", "mrc_gold": "set"}).content)
    assert best["mrc_gold"] == "best" and best["mrc_gold_note"] == MRC_GOLD_NOTE["best"]
    assert as_set_["mrc_gold"] == "set" and as_set_["mrc_gold_note"] == MRC_GOLD_NOTE["set"]
    assert best["cells"][0]["mean"] == pytest.approx(100.0)
    # "set": rescored from the stored answers, item by item, with the one S1 function.
    answers = study.cohorts.get().enrollments.get(worker__external_id=pid_for("A")).answers.select_related("example")
    expected = 100 * sum(item_s1(a.texts, a.example.gold, alternatives=True, mrc_gold="set") for a in answers) / 4
    assert as_set_["cells"][0]["mean"] == pytest.approx(expected) and expected < 100.0
    assert as_set_["majority"][0]["s1"] == pytest.approx(expected)
    assert json.loads(client.get(url, {"fmt": "json", "mrc_gold": "set"}).content) == as_set_  # stable

    md = client.get(url, {"fmt": "md", "mrc_gold": "set"}).content.decode()
    tex = client.get(url, {"fmt": "tex"}).content.decode()
    assert MRC_GOLD_NOTE["set"] in md and "MRC gold rule" in tex
    text = client.get(url, {"fmt": "csv", "mrc_gold": "set"}).content.decode()
    assert "MRC gold" not in text and not text.startswith("#")  # CSV stays a plain header and rows
    assert client.get(url, {"fmt": "json", "mrc_gold": "both"}).status_code == 400

    out = io.StringIO()
    call_command("export_results", "--study", str(study.pk), "--format", "json", "--mrc-gold", "set", stdout=out)
    assert json.loads(out.getvalue()) == as_set_
    download = client.get(f"/dashboard/studies/{study.pk}/results/download.json", {"mrc_gold": "set"})
    assert json.loads(download.content) == as_set_
    assert client.get(f"/dashboard/studies/{study.pk}/results/download.json", {"mrc_gold": "x"}).status_code == 400

    page = client.get(f"/dashboard/studies/{study.pk}/results/").content.decode()
    assert "MRC gold rule" in page and "best single alternative" in page
    page_set = client.get(f"/dashboard/studies/{study.pk}/results/", {"mrc_gold": "set"}).content.decode()
    assert f"{expected:.1f}" in page_set and "download.json?mrc_gold=set" in page_set
    api = client.get(f"/api/studies/{study.pk}/results/", {"mrc_gold": "set"}).json()
    assert api["cells"][0]["mean"] == pytest.approx(expected) and api["mrc_gold_note"] == MRC_GOLD_NOTE["set"]


def test_a_table_without_an_mrc_task_has_no_mrc_note(sst, researcher):
    payload = json.loads(_client(researcher).get(f"/api/studies/{sst.pk}/export/table/", {"fmt": "json"}).content)
    assert "mrc_gold_note" not in payload and payload["mrc_gold"] == "best"


def test_an_unfinished_worker_changes_no_extra(sst):
    before = table_cells(sst)
    unfinished = join(cohort(sst, "sst2", 10), "U")
    services.submit_answer(
        enrollment_id=unfinished.pk,
        item=services.current_item(enrollment_id=unfinished.pk).item_handle,
        answer=["negative"],
    )
    assert table_cells(sst) == before


def test_the_mrc_gold_rule_reads_annotator_rows_and_model_rows_too(researcher):
    from baselines.models import BaselineRun

    study = _squad_study(researcher)
    client = _client(researcher)
    url = f"/api/studies/{study.pk}/export/annotators/"
    best = json.loads(client.get(url, {"fmt": "json"}).content)["rows"]
    as_set_ = json.loads(client.get(url, {"fmt": "json", "mrc_gold": "set"}).content)["rows"]
    a = study.cohorts.get().enrollments.get(worker__external_id=pid_for("A"))
    answers = a.answers.select_related("example")
    expected = sum(item_s1(x.texts, x.example.gold, alternatives=True, mrc_gold="set") for x in answers) / 4
    by_best, by_set = ({r["worker"]: r["test_s1_percent"] for r in rows} for rows in (best, as_set_))
    a_pid = pid_for("A")
    assert by_best[a_pid] == pytest.approx(100.0) and by_set[a_pid] == pytest.approx(100 * expected) and expected < 1
    out = io.StringIO()
    call_command(
        "export_results",
        "--study",
        str(study.pk),
        "--kind",
        "annotators",
        "--format",
        "json",
        "--mrc-gold",
        "set",
        stdout=out,
    )
    assert {r["worker"]: r["test_s1_percent"] for r in json.loads(out.getvalue())["rows"]} == by_set

    # A model that predicts every published answer at once: below 1 under "best" on multi-answer items, and
    # exactly the gold set under "set". Rescored from its stored predictions, not from its stored S1.
    tests = list(Example.objects.filter(task__slug="squad2", role="test").order_by("position"))
    predictions = [{"id": e.clues_id, "prediction": list(e.gold)} for e in tests]
    best_scores = [item_s1(e.gold, e.gold, alternatives=True) for e in tests]
    BaselineRun.objects.create(
        task=tests[0].task,
        method="oracle",
        model="all-answers",
        shots=0,
        split=1,
        seed=0,
        status=BaselineRun.Status.COMPLETED,
        s1=sum(best_scores) / 4,
        predictions=predictions,
        item_scores=best_scores,
    )
    table = f"/api/studies/{study.pk}/export/table/"
    rows_best = json.loads(client.get(table, {"fmt": "json", "with_baselines": "1"}).content)["model_rows"]
    rows_set = json.loads(client.get(table, {"fmt": "json", "with_baselines": "1", "mrc_gold": "set"}).content)[
        "model_rows"
    ]
    assert rows_best[0]["mean"] == pytest.approx(100 * sum(best_scores) / 4) and sum(best_scores) < 4
    assert rows_set[0]["mean"] == pytest.approx(100.0)
    # The gap is human minus model under the same reading.
    assert rows_set[0]["diff"] == pytest.approx(100 * expected - 100.0)


def test_the_table_reads_cached_scores_and_a_new_result_shows_at_once(sst, researcher, django_assert_max_num_queries):
    table_cells(sst)  # computes and stores each cohort's scores
    # The stored scores' counters, the cohorts, the workers cut off by time (the scores: read already).
    with django_assert_max_num_queries(3):
        assert [c["n"] for c in table_cells(sst)] == [0, 3]
    client = _client(researcher)
    assert client.get(f"/api/studies/{sst.pk}/results/").json()["cells"][0]["n"] == 0
    # A worker answers every item of the 0-shot cohort: the last answer completes them, and the result shows
    # on the next request (the completion marked the cohort's stored scores stale), nothing invalidated by hand.
    enrollment = join(cohort(sst, "sst2", 0), "Z")
    while (state := services.current_item(enrollment_id=enrollment.pk)).item is not None:
        services.submit_answer(enrollment_id=enrollment.pk, item=state.item_handle, answer=gold_answer(state.item))
    api = client.get(f"/api/studies/{sst.pk}/results/").json()
    assert api["cells"][0]["n"] == 1 and api["cells"][0]["mean"] == pytest.approx(100.0)
    assert api["cells"][1]["n"] == 3  # the other cohort, still as stored
    with django_assert_max_num_queries(4):  # and the 0-shot cohort's scores, new to this Study object
        assert [c["n"] for c in table_cells(sst)] == [1, 3]
    with django_assert_max_num_queries(3):
        assert [c["n"] for c in table_cells(sst)] == [1, 3]


def test_a_cell_with_an_annotator_at_chance_is_flagged_on_the_page_and_in_the_files(researcher):
    trim_test_set("sst2", 40)
    study = make_study(tasks=["sst2"], shots=[10, 20], created_by=researcher, filter_floor=None, filter_fraction=None)
    guessed = cohort(study, "sst2", 10)
    complete(guessed, "A", wrong_test=set(range(0, 40, 8)))
    complete(guessed, "B", wrong_test=set(range(1, 40, 4)))
    complete(guessed, "C", wrong_test=set(range(20)))  # S1 50%: chance for two labels
    learned = cohort(study, "sst2", 20)
    for name, start in (("D", 0), ("E", 2), ("F", 3)):
        complete(learned, name, wrong_test=set(range(start, 40, 5)))
    client = _client(researcher)
    payload = json.loads(client.get(f"/api/studies/{study.pk}/export/table/", {"fmt": "json"}).content)
    meanings = payload["interval_flag_meanings"]
    # Flags point at a cell: the 10-shot cohort holds an annotator at chance (and its three values' t interval
    # reaches past 100); the 20-shot cohort of three earnest annotators carries no flag.
    assert payload["interval_flags"] == [
        {
            "task": "sst2",
            "shots": 10,
            "flags": ["at_chance", "past_scale"],
            "texts": [meanings["at_chance"], meanings["past_scale"]],
        },
    ]
    assert "few_annotators" not in meanings
    html = client.get(f"/dashboard/studies/{study.pk}/results/").content.decode()
    assert "Intervals in doubt: SST-2 10 shots: an annotator" in html
    assert html.count("an annotator&#x27;s S1 is at chance") + html.count("an annotator's S1 is at chance") >= 1
    md = client.get(f"/api/studies/{study.pk}/export/table/", {"fmt": "md"}).content.decode()
    assert "† Intervals in doubt: SST-2 10 shots: an annotator's S1 is at chance" in md
    assert "SST-2 20 shots" not in md.split("Intervals in doubt")[1]
    # The three values of each cell beside its interval, which rests on the normal model alone.
    assert "(values 50.0, 75.0, 87.5)" in md and "(values 80.0, 80.0, 80.0)" in md


def test_intervals_are_never_shown_past_their_scale():
    from results.table import Cell, format_gap, format_interval

    # A gap of two few-annotator cells: its normal interval can run past +100 (human minus model S1).
    assert format_gap(71.3, -52.0, 194.7, -130.0, 20.0) == "+71.3 [-52.0, +100.0] {-100.0, +20.0}"
    assert format_interval(-4.2, 131.0) == "[0.0, 100.0]"
    gap = Cell(format_gap(71.3, -52.0, 194.7, -130.0, 20.0), 40, head="+71.3")
    assert gap.short == "+71.3" and gap.details == ["[-52.0, +100.0]", "{-100.0, +20.0}", "n=40"]
