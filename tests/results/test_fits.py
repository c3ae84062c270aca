"""The fits that need the model set (``manage.py fit_results``): the joint ability scale of annotators and model
runs (mirt's 1PL) and the Dawid-Skene rows (crowd-kit), checked against the libraries' own output on the same
answers, on a simulation with known abilities, and through the pages, exports and API that read them."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from django.core.management import call_command
from django.test import Client
from scipy import stats

from annotation.models import Answer
from baselines.models import BaselineRun
from results import fits
from results.models import CohortFit
from tasks_data.models import Example
from tasks_data.registry import CLUES_TASKS
from tests.annotation.factories import cohort, complete, make_study, trim_test_set

mirt = pytest.importorskip("mirt")
crowdkit_aggregation = pytest.importorskip("crowdkit.aggregation")
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clues")]

WORKER_SERVER = "http://127.0.0.1:8000/v1"
HUMANS = {"A": set(), "B": set(range(0, 40, 5)), "C": set(range(0, 40, 5)) | set(range(1, 40, 5)), "D": set(range(24))}
WORKER_WRONG = set(range(2, 40, 3))  # 13 of 40: between B (8 wrong) and C (16 wrong)


def test_the_fit_recovers_simulated_abilities():
    """30 respondents (abilities drawn) answer 200 items under the 1PL model: the fitted abilities rank them as
    the simulation did (Spearman >= 0.9), and items' difficulties too."""
    rng = np.random.default_rng(5)
    theta, b = rng.normal(0.5, 1.2, 30), rng.normal(0, 1.5, 200)
    responses = (rng.random((30, 200)) < 1 / (1 + np.exp(-(theta[:, None] - b[None, :])))).astype(float)
    responses[rng.random(responses.shape) < 0.05] = np.nan  # a few unanswered items
    fit = fits.fit_ability(responses)
    assert stats.spearmanr(fit["theta"], theta).statistic >= 0.9
    assert stats.spearmanr(fit["difficulty"], b).statistic >= 0.9
    assert fit["converged"]


@pytest.fixture
def study(researcher):
    """SST-2, 40 test items, 10 shots: four annotators (0, 8, 16, 24 wrong) and a served LLM as a worker (13 wrong)."""
    trim_test_set("sst2", 40)
    s = make_study(
        tasks=["sst2"], shots=[10], created_by=researcher, filter_floor=None, filter_fraction=None, workers_per_cohort=5
    )
    ten = cohort(s, "sst2", 10)
    for name, wrong in HUMANS.items():
        complete(ten, name, wrong_test=wrong)
    tests = list(Example.objects.filter(task__slug="sst2", role="test").order_by("position"))
    BaselineRun.objects.create(
        task=tests[0].task,
        method="worker",
        model="qwen-tiny",
        server=WORKER_SERVER,
        shots=10,
        split=1,
        seed=0,
        status=BaselineRun.Status.COMPLETED,
        s1=1 - len(WORKER_WRONG) / 40,
        predictions=[
            {
                "id": int(e.clues_id) if e.clues_id_is_number else e.clues_id,
                "prediction": [next(x for x in ("positive", "negative") if x != e.gold[0])]
                if i in WORKER_WRONG
                else [e.gold[0]],
            }
            for i, e in enumerate(tests)
        ],
        item_scores=[0.0 if i in WORKER_WRONG else 1.0 for i in range(40)],
    )
    return s


def _fit(study) -> str:
    out = io.StringIO()
    call_command("fit_results", "--study", str(study.pk), stdout=out)
    return out.getvalue()


def test_abilities_order_humans_and_an_llm_worker_by_s1_and_equal_the_librarys_output(study, researcher):
    printed = _fit(study)
    assert "1PL IRT (mirt 1.2.0)" in printed and "Dawid-Skene (crowd-kit 1.4.2)" in printed
    (fit,) = CohortFit.objects.filter(cohort__study=study, kind=CohortFit.Kind.ABILITY)
    respondents = fit.result["respondents"]
    assert [r["kind"] for r in respondents] == ["human"] * 4 + ["model"]
    by_s1 = sorted(respondents, key=lambda r: -r["s1_percent"])
    by_theta = sorted(respondents, key=lambda r: -r["theta"])
    assert [r["label"] for r in by_theta] == [r["label"] for r in by_s1]
    assert by_theta[2]["row"].startswith("qwen-tiny (as a worker, 127.0.0.1:8000)")  # between B and C, as its S1
    # The same matrix built here from what each respondent got wrong, fitted by mirt directly.
    matrix = np.ones((5, 40))
    for row, wrong in enumerate([*HUMANS.values(), WORKER_WRONG]):
        matrix[row, sorted(wrong)] = 0.0
    own = mirt.fit_mirt(matrix, model="1PL", verbose=False)
    scored = mirt.fscores(own, matrix, method="EAP")
    assert [r["theta"] for r in respondents] == pytest.approx(np.ravel(scored.theta).tolist(), abs=1e-9)
    assert [r["theta_se"] for r in respondents] == pytest.approx(np.ravel(scored.standard_error).tolist(), abs=1e-9)
    assert [i["difficulty"] for i in fit.result["items"]] == pytest.approx(own.coef()["difficulty"].tolist(), abs=1e-9)
    # The page, the items view, the export and the API read the stored fit.
    client = Client()
    client.force_login(researcher)
    page = client.get(f"/dashboard/studies/{study.pk}/results/").content.decode()
    assert 'class="chart ability-chart"' in page and page.count('<g class="human">') == 4
    assert page.count('<g class="model">') == 1
    items = client.get(f"/dashboard/studies/{study.pk}/results/items/").content.decode()
    assert "Difficulty (IRT)" in items and 'data-column="irt_difficulty">' in items
    rows = json.loads(client.get(f"/api/studies/{study.pk}/export/abilities/", {"fmt": "json"}).content)["rows"]
    assert [r["ability"] for r in rows] == [r["theta"] for r in respondents] and all(r["current"] for r in rows)
    api = client.get(f"/api/studies/{study.pk}/results/").json()
    assert [r["ability"] for r in api["abilities"]] == [r["theta"] for r in respondents]
    item_rows = json.loads(client.get(f"/api/studies/{study.pk}/export/items/", {"fmt": "json"}).content)["rows"]
    assert [r["irt_difficulty"] for r in item_rows] == [i["difficulty"] for i in fit.result["items"]]


def test_the_dawid_skene_row_is_crowd_kits_output_on_the_same_answers(study, researcher):
    _fit(study)
    (fit,) = CohortFit.objects.filter(cohort__study=study, kind=CohortFit.Kind.AGGREGATE)
    rows = Answer.objects.filter(enrollment__cohort__study=study, step=Answer.Step.TEST).values_list(
        "enrollment_id", "example__clues_id", "texts"
    )
    import pandas as pd

    frame = pd.DataFrame([(str(e), str(x), t[0]) for e, x, t in rows], columns=["worker", "task", "label"])
    expected = crowdkit_aggregation.DawidSkene(n_iter=100).fit_predict(frame)
    assert fit.result["answers"] == {task: [label] for task, label in expected.items()}
    gold = dict(Example.objects.filter(task__slug="sst2", role="test").values_list("clues_id", "gold"))
    s1 = 100 * np.mean([float(expected[x] == gold[x][0]) for x in expected.index])
    assert fit.result["s1_percent"]["best"] == pytest.approx(s1)
    client = Client()
    client.force_login(researcher)
    md = client.get(f"/api/studies/{study.pk}/export/table/", {"fmt": "md"}).content.decode()
    assert f"| Dawid-Skene (crowd-kit) | 10 | {s1:.1f} (n=4) |" in md and "| Majority vote | 10 |" in md
    payload = json.loads(client.get(f"/api/studies/{study.pk}/export/table/", {"fmt": "json"}).content)
    assert payload["aggregates"] == [
        {"task": "sst2", "shots": 10, "method": "Dawid-Skene (crowd-kit)", "s1": pytest.approx(s1), "n": 4}
    ]
    # One more annotator: the fit is of older results, and its row leaves the table until fitted again.
    complete(cohort(study, "sst2", 10), "E")
    md = client.get(f"/api/studies/{study.pk}/export/table/", {"fmt": "md"}).content.decode()
    assert "Dawid-Skene" not in md
    assert not fits.stored_fits(study, CohortFit.Kind.AGGREGATE)[fit.cohort_id][0]["current"]


def test_the_command_says_how_to_install_the_model_set_when_a_library_is_missing(study, monkeypatch):
    from django.core.management.base import CommandError

    real = __import__("importlib").util.find_spec
    monkeypatch.setattr("importlib.util.find_spec", lambda name, *a: None if name == "mirt" else real(name, *a))
    with pytest.raises(CommandError, match="requirements/baselines.txt"):
        call_command("fit_results", "--study", str(study.pk))
    assert not CohortFit.objects.exists()


def test_ner_spans_enter_dawid_skene_as_one_decision_per_marked_span():
    """Each span an annotator marked is a yes/no question to every annotator of the item; the aggregated answer
    is crowd-kit's yes spans (here as a strict majority would have it: unanimous and 2-of-3 spans in, 1-of-3 out)."""
    import pandas as pd

    answers = {
        1: {"a": ["Paris", "Obama"], "b": [], "c": ["Kenya"]},
        2: {"a": ["Paris"], "b": [], "c": ["Kenya"]},
        3: {"a": ["Paris", "Obama", "Rome"], "b": [], "c": []},
    }
    got = fits.dawid_skene(answers, "span decisions")
    frame = pd.DataFrame(
        [
            (str(w), f"{i}\x1f{span}", int(span in a))
            for w, per in answers.items()
            for i, a in per.items()
            for span in sorted({x for p in answers.values() for x in p[i]})
        ],
        columns=["worker", "task", "label"],
    )
    decided = crowdkit_aggregation.DawidSkene(n_iter=100).fit_predict(frame)
    expected = {
        i: sorted(t.split("\x1f")[1] for t, v in decided.items() if t.startswith(f"{i}\x1f") and v == 1)
        for i in ("a", "b", "c")
    }
    assert got == expected
    assert got["b"] == [] and "Paris" in got["a"] and "Rome" not in got["a"]
    assert (
        fits.crowd_representation(CLUES_TASKS["record"].answer_kind) is None
    )  # MRC: not fitted, and the page says why
