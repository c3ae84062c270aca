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
WORKER_WRONG_2 = set(range(1, 40, 4))  # split 2: 10 of 40, between B and split 1


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
        tasks=["sst2"], shots=[10], created_by=researcher, filter_floor=None, filter_fraction=None, workers_per_cohort=6
    )
    ten = cohort(s, "sst2", 10)
    for name, wrong in HUMANS.items():
        complete(ten, name, wrong_test=wrong)
    tests = list(Example.objects.filter(task__slug="sst2", role="test").order_by("position"))
    for split, wrong in ((1, WORKER_WRONG), (2, WORKER_WRONG_2)):
        BaselineRun.objects.create(
            task=tests[0].task,
            method="worker",
            model="qwen-tiny",
            server=WORKER_SERVER,
            shots=10,
            split=split,
            seed=0,
            status=BaselineRun.Status.COMPLETED,
            s1=1 - len(wrong) / 40,
            predictions=[
                {
                    "id": int(e.clues_id) if e.clues_id_is_number else e.clues_id,
                    "prediction": [next(x for x in ("positive", "negative") if x != e.gold[0])]
                    if i in wrong
                    else [e.gold[0]],
                }
                for i, e in enumerate(tests)
            ],
            item_scores=[0.0 if i in wrong else 1.0 for i in range(40)],
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
    assert [r["kind"] for r in respondents] == ["human"] * 4 + ["model"] * 2
    by_s1 = sorted(respondents, key=lambda r: -r["s1_percent"])
    by_theta = sorted(respondents, key=lambda r: -r["theta"])
    assert [r["label"] for r in by_theta] == [r["label"] for r in by_s1]
    assert by_theta[2]["row"].startswith("qwen-tiny (as a worker, 127.0.0.1:8000)")  # between B and C, as its S1
    # The pool is named beside every ability; SST-2's S1 is 0 or 1: right or wrong (1PL), stated.
    pool = "4 annotators and 2 model runs (1 model row: qwen-tiny (as a worker, 127.0.0.1:8000))"
    assert fit.result["pool"] == pool and all(r["pool"] == pool for r in respondents)
    assert fit.result["model"] == "1PL" and fit.result["response"].startswith("right (1)")
    # The same matrix built here from what each respondent got wrong, without the items everyone got right
    # (no information), fitted by mirt directly.
    matrix = np.ones((6, 40))
    for row, wrong in enumerate([*HUMANS.values(), WORKER_WRONG, WORKER_WRONG_2]):
        matrix[row, sorted(wrong)] = 0.0
    varied = matrix.min(axis=0) < matrix.max(axis=0)
    assert fit.result["items_all_right"] == int((matrix.min(axis=0) == 1).sum()) > 0
    assert fit.result["items_all_wrong"] == int((matrix.max(axis=0) == 0).sum())
    own = mirt.fit_mirt(matrix[:, varied], model="1PL", verbose=False)
    scored = mirt.fscores(own, matrix[:, varied], method="EAP", n_quadpts=401)
    assert [r["theta"] for r in respondents] == pytest.approx(np.ravel(scored.theta).tolist(), abs=2e-3)
    assert [r["theta_se"] for r in respondents] == pytest.approx(np.ravel(scored.standard_error).tolist(), abs=2e-3)
    assert [i["difficulty"] for i in fit.result["items"]] == pytest.approx(own.coef()["difficulty"].tolist(), abs=1e-9)
    # The page, the items view, the export and the API read the stored fit.
    client = Client()
    client.force_login(researcher)
    page = client.get(f"/dashboard/studies/{study.pk}/results/").content.decode()
    assert 'class="chart ability-chart"' in page and page.count('<g class="human">') == 4
    assert page.count('<g class="model">') == 2 and f"Scale fitted on {pool}" in page.replace("&#x27;", "'")
    items = client.get(f"/dashboard/studies/{study.pk}/results/items/").content.decode()
    assert "Difficulty (IRT)" in items and 'data-column="irt_difficulty">' in items
    rows = json.loads(client.get(f"/api/studies/{study.pk}/export/abilities/", {"fmt": "json"}).content)["rows"]
    assert [r["ability"] for r in rows] == [r["theta"] for r in respondents] and all(r["current"] for r in rows)
    assert {r["pool"] for r in rows} == {pool}
    api = client.get(f"/api/studies/{study.pk}/results/").json()
    assert [r["ability"] for r in api["abilities"]] == [r["theta"] for r in respondents]
    item_rows = json.loads(client.get(f"/api/studies/{study.pk}/export/items/", {"fmt": "json"}).content)["rows"]
    assert [r["irt_difficulty"] for r in item_rows if r["irt_difficulty"] is not None] == [
        i["difficulty"] for i in fit.result["items"]
    ]
    assert sum(r["irt_difficulty"] is None for r in item_rows) == fit.result["items_all_right"]


def test_no_scale_for_a_cell_of_one_respondent_group(study, researcher):
    """Annotators alone (the runs gone): no scale is fitted, and the page says why instead of drawing one."""
    BaselineRun.objects.all().delete()
    _fit(study)
    (fit,) = CohortFit.objects.filter(cohort__study=study, kind=CohortFit.Kind.ABILITY)
    assert fit.result["fitted"] is False and "respondents" not in fit.result
    client = Client()
    client.force_login(researcher)
    page = client.get(f"/dashboard/studies/{study.pk}/results/").content.decode()
    assert 'class="chart ability-chart"' not in page
    assert "SST-2, 10 shots: no scale (4 annotators and 0 model runs: a joint scale needs at least 2" in page
    assert json.loads(client.get(f"/api/studies/{study.pk}/export/abilities/", {"fmt": "json"}).content)["rows"] == []


@pytest.mark.slow  # a 600-item mirt fit: ~3 s on a quiet machine
def test_abilities_are_the_posterior_on_a_fine_grid_for_a_long_test():
    """600 items, 8 respondents: each ability's posterior mean and SD, re-derived here by scipy's quadrature on the
    fitted difficulties, are what is stored; mirt's default 49-point EAP snaps to its nodes and under-states the SD
    (the posterior is narrower than the grid's spacing)."""
    from scipy import integrate
    from scipy.special import expit

    rng = np.random.default_rng(7)
    theta, b = rng.normal(0, 1, 8), rng.normal(-1, 1.5, 600)
    responses = (rng.random((8, 600)) < expit(theta[:, None] - b[None, :])).astype(float)
    own = mirt.fit_mirt(responses, model="1PL", verbose=False, compute_standard_errors=False)
    d = own.coef()["difficulty"].to_numpy(dtype=float)
    mean_, sd_ = fits.posterior(responses, d[:, None])  # what fit_ability stores, on the fitted difficulties
    fit = {"theta": mean_.tolist(), "theta_se": sd_.tolist()}
    for j in range(2):
        x = responses[j]

        def density(t, x=x):
            p = expit(t - d)
            return np.exp(np.sum(x * np.log(p) + (1 - x) * np.log1p(-p)) - t**2 / 2 + 300)

        mode = fit["theta"][j]
        z = integrate.quad(density, mode - 3, mode + 3, points=[mode], limit=200)[0]
        mean = integrate.quad(lambda t: t * density(t), mode - 3, mode + 3, points=[mode], limit=200)[0] / z
        second = integrate.quad(lambda t: t * t * density(t), mode - 3, mode + 3, points=[mode], limit=200)[0] / z
        assert fit["theta"][j] == pytest.approx(mean, abs=1e-3)
        assert fit["theta_se"][j] == pytest.approx(np.sqrt(second - mean**2), rel=0.02)
    coarse = mirt.fscores(own, responses, method="EAP")
    assert np.mean(np.ravel(coarse.standard_error)) < 0.8 * np.mean(fit["theta_se"])


def test_partial_credit_where_s1_is_partial():
    """Span answers with partial S1: three categories (wrong, partly right, fully right) and mirt's partial credit
    model; the stored abilities are the posterior under that model (mirt's own EAP on 401 points beside)."""
    s1 = np.array([[1.0, 0.5, 0.0, 1.0], [0.5, 0.5, 0.0, 1.0], [0.0, 0.0, 0.0, 0.67]])
    responses, model = fits.responses_of(s1)
    assert model == "PCM" and responses.tolist() == [[2, 1, 0, 2], [1, 1, 0, 2], [0, 0, 0, 1]]
    assert fits.responses_of(np.array([[1.0, 0.0], [0.0, np.nan]]))[1] == "1PL"
    rng = np.random.default_rng(2)
    t, b = rng.normal(0, 1, 10), rng.normal(0, 1, 120)
    graded = np.clip(rng.beta(2 * expit_(t[:, None] - b), 2 * (1 - expit_(t[:, None] - b))), 0, 1)
    graded[graded > 0.9], graded[graded < 0.1] = 1.0, 0.0
    responses, model = fits.responses_of(graded)
    fit = fits.fit_ability(responses, model)
    assert fit["theta"] == pytest.approx(fit["theta_mirt"], abs=5e-3)
    assert stats.spearmanr(fit["theta"], t).statistic >= 0.8


def expit_(x):
    return 1 / (1 + np.exp(-x))


def test_the_dawid_skene_row_is_crowd_kits_output_on_the_same_answers(study, researcher):
    complete(cohort(study, "sst2", 10), "E", wrong_test={0, 1})  # a third annotator well above chance
    _fit(study)
    (fit,) = CohortFit.objects.filter(cohort__study=study, kind=CohortFit.Kind.AGGREGATE)
    rows = Answer.objects.filter(enrollment__cohort__study=study, step=Answer.Step.TEST).values_list(
        "enrollment_id", "example__clues_id", "texts"
    )
    import pandas as pd

    frame = pd.DataFrame([(str(e), str(x), t[0]) for e, x, t in rows], columns=["worker", "task", "label"])
    expected = crowdkit_aggregation.DawidSkene(n_iter=100).fit_predict(frame)
    assert fit.result["answers"] == {task: [label] for task, label in expected.items()}
    assert fit.result["identifiable"] is True and fit.result["reason"] is None
    gold = dict(Example.objects.filter(task__slug="sst2", role="test").values_list("clues_id", "gold"))
    s1 = 100 * np.mean([float(expected[x] == gold[x][0]) for x in expected.index])
    assert fit.result["s1_percent"]["best"] == pytest.approx(s1)
    client = Client()
    client.force_login(researcher)
    md = client.get(f"/api/studies/{study.pk}/export/table/", {"fmt": "md"}).content.decode()
    assert f"| Dawid-Skene (crowd-kit) | 10 | {s1:.1f} (n=5) |" in md and "| Majority vote | 10 |" in md
    payload = json.loads(client.get(f"/api/studies/{study.pk}/export/table/", {"fmt": "json"}).content)
    assert payload["aggregates"] == [
        {
            "task": "sst2",
            "shots": 10,
            "method": "Dawid-Skene (crowd-kit)",
            "s1": pytest.approx(s1),
            "n": 5,
            "identifiable": True,
            "reason": None,
        }
    ]
    # One more annotator: the fit is of older results, and its row leaves the table until fitted again.
    complete(cohort(study, "sst2", 10), "F")
    md = client.get(f"/api/studies/{study.pk}/export/table/", {"fmt": "md"}).content.decode()
    assert "Dawid-Skene" not in md
    assert not fits.stored_fits(study, CohortFit.Kind.AGGREGATE)[fit.cohort_id][0]["current"]


def test_an_aggregate_of_two_annotators_better_than_chance_says_it_cannot_be_identified(study, researcher):
    """The fixture's cohort: 2 of 4 annotators better than chance (C at 60% and D at 40% are within 40 items'
    noise of a coin): Dawid-Skene cannot tell whose answers to trust; the row says so, never a number."""
    _fit(study)
    (fit,) = CohortFit.objects.filter(cohort__study=study, kind=CohortFit.Kind.AGGREGATE)
    assert fit.result["identifiable"] is False and fit.result["reason"].startswith("2 of 4 annotators")
    client = Client()
    client.force_login(researcher)
    md = client.get(f"/api/studies/{study.pk}/export/table/", {"fmt": "md"}).content.decode()
    assert "| Dawid-Skene (crowd-kit) | 10 | not identifiable (n=4) |" in md
    html = client.get(f"/dashboard/studies/{study.pk}/results/").content.decode()
    assert '<span class="value">not identifiable</span>' in html


def test_the_command_says_how_to_install_the_model_set_when_a_library_is_missing(study, monkeypatch):
    from django.core.management.base import CommandError

    real = __import__("importlib").util.find_spec
    monkeypatch.setattr("importlib.util.find_spec", lambda name, *a: None if name == "mirt" else real(name, *a))
    with pytest.raises(CommandError, match="requirements/baselines.txt"):
        call_command("fit_results", "--study", str(study.pk))
    assert not CohortFit.objects.exists()


CONTEXTS = {
    "1": "Obama met Le Pen in Paris on Monday .",
    "2": "Rome and Paris are far from Kenya .",
    "3": "Nothing here , said the New York Times .",
}


def _token_frame(answers):
    """The token matrix built here by hand: every word of the item from every annotator who answered it."""
    import pandas as pd

    rows = []
    for worker, per in answers.items():
        for item, answer in per.items():
            words = CONTEXTS[item].split(" ")
            labels = ["O"] * len(words)
            for span in answer:
                parts = span.split(" ")
                for k in range(len(words) - len(parts) + 1):
                    if words[k : k + len(parts)] == parts:
                        labels[k : k + len(parts)] = ["B"] + ["I"] * (len(parts) - 1)
            rows += [(worker, f"{item}\x1f{j}", label) for j, label in enumerate(labels)]
    return pd.DataFrame(rows, columns=["worker", "task", "label"])


def test_bio_labels_round_trip_multi_word_spans():
    answer = ["Le Pen", "Paris", "Obama"]
    labels = fits.bio_labels(CONTEXTS["1"], answer)
    assert labels == ["B", "O", "B", "I", "O", "B", "O", "O", "O"]
    assert fits.decode_bio(CONTEXTS["1"], labels) == sorted(answer)
    assert fits.decode_bio(CONTEXTS["3"], ["O"] * 5 + ["I", "I", "I", "O"]) == ["New York Times"]  # I after O
    assert fits.bio_labels(CONTEXTS["3"], []) == ["O"] * 9


def test_ner_dawid_skene_reads_tokens_and_whole_answers_as_crowd_kit_does_on_the_same_matrix():
    """Three careful annotators and one who marks a span of their own on every item: on tokens, each unmarked word
    is a vote against, so the lone spans are out and the others' in; both readings are crowd-kit's output on the
    same matrix (built here by hand for the tokens)."""
    import pandas as pd

    gold = {"1": ["Le Pen", "Obama", "Paris"], "2": ["Kenya", "Paris", "Rome"], "3": ["New York Times"]}
    answers = {
        "a": dict(gold),
        "b": {"1": ["Le Pen", "Obama", "Paris"], "2": ["Kenya", "Paris", "Rome"], "3": ["New York Times"]},
        "c": {"1": ["Obama", "Paris"], "2": ["Kenya", "Paris", "Rome"], "3": ["New York Times"]},
        "d": {"1": ["Monday", "Obama"], "2": ["far"], "3": ["Nothing"]},
    }
    got = fits.dawid_skene(answers, "tokens", CONTEXTS)
    decided = crowdkit_aggregation.DawidSkene(n_iter=100).fit_predict(_token_frame(answers))
    by_hand = {
        item: fits.decode_bio(CONTEXTS[item], [decided[f"{item}\x1f{j}"] for j in range(len(CONTEXTS[item].split()))])
        for item in CONTEXTS
    }
    assert got == by_hand == gold  # no lone span kept: "Monday", "far", "Nothing" are out
    whole = fits.dawid_skene(answers, "answers")
    frame = pd.DataFrame(
        [(w, i, "\x1f".join(sorted(a))) for w, per in answers.items() for i, a in per.items()],
        columns=["worker", "task", "label"],
    )
    expected = crowdkit_aggregation.DawidSkene(n_iter=100).fit_predict(frame)
    assert whole == {i: [x for x in expected[i].split("\x1f") if x] for i in CONTEXTS}
    assert fits.crowd_readings(CLUES_TASKS["conll03"].answer_kind) == ["tokens", "answers"]
    assert fits.crowd_readings(CLUES_TASKS["sst2"].answer_kind) == ["labels"]
    assert fits.crowd_representation(CLUES_TASKS["record"].answer_kind) is None  # MRC: not fitted (the page says why)


def test_a_near_chance_annotators_lone_spans_do_not_survive_on_tokens():
    """Two careful annotators and one who marks a random word on most items: on tokens every word the careful two
    left unmarked is their vote against it, no lone span survives, and the aggregate is the careful answer."""
    rng = np.random.default_rng(0)
    contexts, answers = {}, {"a": {}, "b": {}, "c": {}}
    for i in range(40):
        words = [f"w{i}x{j}" for j in range(12)]
        contexts[str(i)] = " ".join(words)
        named = [words[3]] if i % 2 else []
        answers["a"][str(i)] = named
        answers["b"][str(i)] = named if i % 7 else []  # misses one name in seven
        answers["c"][str(i)] = [words[int(rng.integers(0, 12))]] if rng.random() < 0.8 else []
    got = fits.dawid_skene(answers, "tokens", contexts)
    lone = sum(1 for i in contexts if set(answers["c"][i]) - set(answers["a"][i]) & set(got[i]))
    assert lone == 0
    assert sum(got[i] == answers["a"][i] for i in contexts) >= 36
