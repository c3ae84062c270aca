"""A scripted study through the real HTTP API, checked against S1 computed independently.

A researcher creates and launches a study over the API; simulated workers arrive through the
join link with Prolific's parameters (session cookie, CSRF header from the csrftoken cookie,
CSRF checks enforced), answer with varied quality (the gold with probability p, from a
seeded RNG), one per 10-shot cohort is filtered after training and replaced; the exported
Table 5 cells (export_results --format json) must equal the mean and sample std of S1
computed here from the answers sent and the gold read from the database.
"""

import io
import json
import random

import numpy as np
import pytest
from django.core.management import call_command
from django.test import Client

from annotation.models import Enrollment
from tasks_data.models import Example
from tasks_data.s1 import item_s1
from tests.annotation.factories import (
    FORBIDDEN_KEYS,
    WorkerClient,
    gold_answer,
    keys_anywhere,
    name_of,
    prolific,
    trim_test_set,
    wrong_answer,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clues")]

TEST_ITEMS = 20  # per task: the first 20 test items (all of them in the demo data)


def noisy_answer(example: Example, rng: random.Random, p: float) -> list:
    """The gold with probability p; otherwise part of it (several spans) or a wrong answer."""
    if rng.random() < p:
        return gold_answer(example)
    gold = gold_answer(example)
    if len(gold) > 1 and rng.random() < 0.5:
        return gold[:-1]
    return wrong_answer(example)


def join(cohort: dict, pid: str) -> WorkerClient:
    """A worker follows the cohort's join link with Prolific's parameters."""
    worker = WorkerClient(params=None)
    joined = worker.client.get(cohort["join_path"], prolific(pid))
    assert joined.status_code == 302 and joined["Location"] == "/work/"
    assert worker.csrf, "the join response sets the csrftoken cookie"
    return worker


def work(worker: WorkerClient, pid: str, p_training: float, p_test: float, seed: int) -> dict:
    """One worker's whole journey over HTTP; returns what they sent (test step) and where they ended."""
    rng = random.Random(seed)
    sent: dict[int, list[str]] = {}
    while True:
        current = worker.current()
        assert current.status_code == 200
        body = current.json()
        assert not keys_anywhere(body) & FORBIDDEN_KEYS, "no gold before the answer"
        if body["item"] is None:
            return {"pid": pid, "step": body["step"], "completion": body["completion"], "test": sent}
        example = worker.example(body["item"]["id"])
        training = body["step"] == "training"
        answer = noisy_answer(example, rng, p_training if training else p_test)
        response = worker.answer(worker.handle(example), answer)
        assert response.status_code == 201, response.json()
        result = response.json()
        if training:
            assert result["gold"] == example.gold
            assert result["s1"] == pytest.approx(
                item_s1(_texts(example, answer), example.gold, alternatives=example.gold_is_alternatives)
            )
        else:
            assert "gold" not in result and "s1" not in result
            sent[example.pk] = _texts(example, answer)
        assert worker.answer(worker.handle(example), answer).status_code == 409  # answers are final


def _texts(example: Example, answer: list) -> list[str]:
    spec = example.task.spec
    return spec.answer_kind.validate(spec, example, answer).texts


def independent_s1(sent: dict[int, list[str]]) -> float:
    examples = Example.objects.select_related("task").in_bulk(list(sent))
    return float(
        np.mean(
            [
                item_s1(texts, examples[pk].gold, alternatives=examples[pk].gold_is_alternatives)
                for pk, texts in sent.items()
            ]
        )
    )


def test_a_study_end_to_end_over_http(researcher):
    test_items = {slug: trim_test_set(slug, TEST_ITEMS) for slug in ("sst2", "conll03")}
    lab = Client(enforce_csrf_checks=True)
    lab.force_login(researcher)
    csrf = lab.get("/admin/login/").cookies["csrftoken"].value  # any page that sets the cookie
    created = lab.post(
        "/api/studies/",
        {
            "name": "e2e",
            "platform": "prolific",  # the workers below come with Prolific's parameters
            "tasks": ["sst2", "conll03"],
            "shots": [0, 10],
            "filter_floor": 0.5,
            "completion_code": "CDONE",
            "screenout_code": "CSOUT",
            "launch": True,
        },
        content_type="application/json",
        HTTP_X_CSRFTOKEN=csrf,
    )
    assert created.status_code == 201, created.json()
    study = created.json()
    cohorts = {(c["task"], c["shots"]): c for c in study["cohorts"]}

    finished: dict[tuple[str, int], list[dict]] = {}
    codes: dict[tuple[str, int], set[str]] = {}
    seed = 0
    for key, plan in {
        ("sst2", 10): [("S10-A", 0.9, 0.9), ("S10-B", 0.8, 0.7), ("S10-BAD", 0.0, 0.9)],
        ("conll03", 10): [("C10-A", 0.9, 0.9), ("C10-B", 0.8, 0.6), ("C10-BAD", 0.0, 0.9)],
        ("sst2", 0): [("S0-A", 0.0, 0.95), ("S0-B", 0.0, 0.8), ("S0-C", 0.0, 0.5)],
    }.items():
        workers = [(join(cohorts[key], pid), pid, p_training, p_test) for pid, p_training, p_test in plan]
        extra = WorkerClient(params=None).client.get(cohorts[key]["join_path"], prolific(f"{key}-EXTRA"))
        assert extra.status_code == 409 and "full" in extra.content.decode()
        outcomes = []
        for worker, pid, p_training, p_test in workers:
            seed += 1
            outcomes.append(work(worker, pid, p_training, p_test, seed))
        if key[1] == 10:
            # The filtered worker freed a slot: a new worker joins and does the whole study.
            pid = f"{key[0]}-NEW"
            seed += 1
            outcomes.append(work(join(cohorts[key], pid), pid, 0.9, 0.75, seed))
        bad = [o for o in outcomes if o["pid"].endswith("-BAD")]
        assert len(bad) == (1 if key[1] == 10 else 0)
        for o in bad:
            assert o["step"] == "filtered" and not o["test"], "a filtered worker never enters the test step"
            code = o["completion"]["code"]
            assert code.startswith("CSOUT") and len(code) == len("CSOUT") + 10, "the study's prefix, then random"
            assert o["completion"]["redirect_url"] == f"https://app.prolific.com/submissions/complete?cc={code}"
        done = [o for o in outcomes if not o["pid"].endswith("-BAD")]
        for o in done:
            assert o["step"] == "done", o["pid"]
            code = o["completion"]["code"]
            assert code.startswith("CDONE") and code not in {c["completion"]["code"] for c in bad}
            assert o["completion"]["redirect_url"] == f"https://app.prolific.com/submissions/complete?cc={code}"
            assert len(o["test"]) == test_items[key[0]]
        finished[key] = done
        # One completion code per cohort: every worker of the cohort got the same, and no other cohort's.
        codes[key] = {o["completion"]["code"] for o in done}
        assert len(codes[key]) == 1
    assert len(set().union(*codes.values())) == len(codes), "each cohort has codes of its own"

    # The researcher's view: the filtered workers are there, marked filtered.
    rows = lab.get(f"/api/studies/{study['id']}/enrollments/").json()
    assert {name_of(r["worker"]) for r in rows if r["state"] == "filtered"} == {"S10-BAD", "C10-BAD"}
    assert {name_of(r["worker"]) for r in rows if r["state"] == "completed"} >= {"sst2-NEW", "conll03-NEW"}
    assert sum(r["state"] == "completed" for r in rows) == 9

    out = io.StringIO()
    call_command("export_results", "--study", str(study["id"]), "--format", "json", stdout=out)
    exported = json.loads(out.getvalue())
    assert exported["std_ddof"] == 1
    assert exported == json.loads(lab.get(f"/api/studies/{study['id']}/export/table/?fmt=json").content)
    cells = {(c["task"], c["shots"]): c for c in exported["cells"]}
    assert set(cells) == {("sst2", 0), ("sst2", 10), ("conll03", 0), ("conll03", 10)}
    assert cells[("conll03", 0)] == {"task": "conll03", "shots": 0, "mean": None, "std": None, "n": 0}
    for key, outcomes in finished.items():
        scores = [100 * independent_s1(o["test"]) for o in outcomes]
        assert len(set(scores)) > 1, "the workers' quality varied"
        cell = cells[key]
        assert cell["n"] == 3
        assert cell["mean"] == pytest.approx(np.mean(scores), abs=1e-9)
        assert cell["std"] == pytest.approx(np.std(scores, ddof=1), abs=1e-9)
    # And the per-annotator export agrees with each worker's own S1.
    annotators = json.loads(lab.get(f"/api/studies/{study['id']}/export/annotators/?fmt=json").content)["rows"]
    by_worker = {name_of(r["worker"]): r["test_s1_percent"] for r in annotators}
    for outcomes in finished.values():
        for o in outcomes:
            assert by_worker[o["pid"]] == pytest.approx(100 * independent_s1(o["test"]), abs=1e-9)
    assert Enrollment.objects.filter(cohort__study_id=study["id"]).count() == 11
