"""Rule 4, filtering: the study's rule after training, researcher filter/reinstate, and its consequences."""

import io
import zipfile

import pytest
from django.test import Client

from annotation import selectors, services
from annotation.models import AuditEvent, Enrollment
from results import agreement, exports
from results.cells import human_cells
from tasks_data.models import Example
from tests.annotation.factories import (
    WorkerClient,
    answer_all,
    cohort,
    gold_answer,
    join,
    make_study,
    name_of,
    pid_for,
    screen_out_code,
    trim_test_set,
    wrong_answer,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clues")]


def train(enrollment, correct: int):
    """Answer the training step, the first ``correct`` items right and the rest wrong; returns the state."""
    count = {"n": 0}

    def choose(example):
        count["n"] += 1
        return gold_answer(example) if count["n"] <= correct else wrong_answer(example)

    while True:
        state = services.current_item(enrollment_id=enrollment.pk)
        if state.step != "training":
            return state
        services.submit_answer(enrollment_id=enrollment.pk, item=state.item_handle, answer=choose(state.item))


def test_the_floor_filters_a_worker_at_the_end_of_training_who_then_gets_the_screen_out_code():
    study = make_study(shots=[10], filter_floor=0.5, filter_fraction=None, screenout_code="SOUT")
    sst10 = cohort(study, "sst2", 10)
    worker = WorkerClient(sst10, "LOW")
    enrollment = Enrollment.objects.get()
    for _ in range(10):
        item = worker.current().json()["item"]
        last = worker.answer(item["id"], wrong_answer(worker.example(item["id"]))).json()
    assert last["next_step"] == "filtered"
    assert last["completion"]["code"] == screen_out_code(sst10) and screen_out_code(sst10).startswith("SOUT")
    assert last["completion"]["redirect_url"].endswith(f"cc={screen_out_code(sst10)}")
    current = worker.current().json()
    assert current["step"] == "filtered" and current["item"] is None
    enrollment.refresh_from_db()
    assert enrollment.state == "filtered" and enrollment.training_s1 == 0.0
    event = AuditEvent.objects.get(enrollment=enrollment, action="filter")
    assert "below the floor" in event.reason and event.actor == "system"
    # Never enters the test step.
    test_item = Example.objects.filter(task__slug="sst2", role="test").order_by("position").first()
    assert worker.answer(worker.handle(test_item), ["positive"]).status_code == 409


def test_the_fraction_rule_applies_once_two_others_finished_training():
    study = make_study(shots=[10], workers_per_cohort=4, filter_fraction=0.5)
    sst10 = cohort(study, "sst2", 10)
    # First finisher: 0.3, with nobody to compare to: passes.
    assert train(join(sst10, "A"), correct=3).step == "test"
    # Second: only one other finished: passes whatever the score.
    assert train(join(sst10, "B"), correct=10).step == "test"
    # Third: others' mean is 0.65; 0.3 < 0.5 x 0.65 is false (0.3 < 0.325 is true) -> filtered.
    third = join(sst10, "C")
    assert train(third, correct=3).step == "filtered"
    assert "0.5 x the mean 0.650 of 2 other" in AuditEvent.objects.get(enrollment=third, action="filter").reason
    # Fourth: 0.4 against the mean of A, B and C (0.3, 1.0, 0.3 -> 0.533): 0.4 >= 0.267 passes.
    assert train(join(sst10, "D"), correct=4).step == "test"


def test_a_filtered_worker_frees_the_slot_for_a_new_worker():
    study = make_study(shots=[10], workers_per_cohort=1, filter_floor=0.5)
    sst10 = cohort(study, "sst2", 10)
    low = join(sst10, "LOW")
    with pytest.raises(services.JoinRefused):
        join(sst10, "NEW")
    train(low, correct=0)
    assert join(sst10, "NEW").state == "training"


def api(researcher):
    client = Client()
    client.force_login(researcher)
    return client


def test_a_researcher_filters_and_reinstates_with_a_reason_until_the_test_step_started(researcher):
    trim_test_set("sst2", 4)
    study = make_study(shots=[10], created_by=researcher)
    sst10 = cohort(study, "sst2", 10)
    client = api(researcher)
    enrollment = join(sst10, "P1")
    url = f"/api/enrollments/{enrollment.pk}/"
    # A reason is required.
    response = client.post(url + "filter/", {}, content_type="application/json")
    assert response.status_code == 400 and "reason" in response.json()["detail"]
    response = client.post(url + "filter/", {"reason": "answers at random"}, content_type="application/json")
    assert response.status_code == 200 and response.json()["state"] == "filtered"
    event = AuditEvent.objects.filter(enrollment=enrollment).last()
    assert (event.actor, event.action, event.reason) == ("rita", "filter by researcher", "answers at random")
    # A researcher-filtered worker cannot answer.
    assert services.current_item(enrollment_id=enrollment.pk).step == "filtered"
    with pytest.raises(services.Conflict):
        handle = services.item_handle(enrollment_id=enrollment.pk, item_id=1)
        services.submit_answer(enrollment_id=enrollment.pk, item=handle, answer=["positive"])
    # Reinstated mid-training: back to training.
    response = client.post(url + "reinstate/", {"reason": "mistake"}, content_type="application/json")
    assert response.status_code == 200 and response.json()["state"] == "training"
    assert client.post(url + "reinstate/", {"reason": "again"}, content_type="application/json").status_code == 409
    # Waiting for the test step: still filterable; once a test answer exists, no more.
    assert train(enrollment, correct=10).step == "test"
    assert client.post(url + "filter/", {"reason": "r"}, content_type="application/json").status_code == 200
    client.post(url + "reinstate/", {"reason": "r"}, content_type="application/json")
    assert Enrollment.objects.get(pk=enrollment.pk).state == "testing"
    item = services.current_item(enrollment_id=enrollment.pk).item
    handle = services.item_handle(enrollment_id=enrollment.pk, item_id=item.pk)
    services.submit_answer(enrollment_id=enrollment.pk, item=handle, answer=["positive"])
    response = client.post(url + "filter/", {"reason": "late"}, content_type="application/json")
    assert response.status_code == 409 and "test step has started" in response.json()["detail"]


def test_reinstating_needs_a_free_slot(researcher):
    study = make_study(shots=[10], workers_per_cohort=1, filter_floor=0.5, created_by=researcher)
    sst10 = cohort(study, "sst2", 10)
    low = join(sst10, "LOW")
    train(low, correct=0)
    join(sst10, "NEW")
    response = api(researcher).post(
        f"/api/enrollments/{low.pk}/reinstate/", {"reason": "appeal"}, content_type="application/json"
    )
    assert response.status_code == 409 and "full" in response.json()["detail"]


def test_filtered_workers_are_left_out_of_every_result(researcher):
    trim_test_set("sst2", 5)
    study = make_study(shots=[10], workers_per_cohort=3, filter_floor=0.5, created_by=researcher)
    sst10 = cohort(study, "sst2", 10)
    good = [join(sst10, f"G{i}") for i in range(2)]
    low = join(sst10, "LOW")
    train(low, correct=1)
    late = join(sst10, "LATE")
    for e in (*good, late):
        answer_all(e.pk, gold_answer)
    assert Enrollment.objects.get(pk=low.pk).state == "filtered"
    cell = next(c for c in human_cells(study) if c["shots"] == 10)
    assert cell["n"] == 3 and cell["mean"] == 100.0 and cell["std"] == 0.0
    assert low.pk not in {r["enrollment_id"] for r in selectors.annotator_rows(study)}
    assert low.pk not in {r["enrollment_id"] for r in agreement.learning_curves(study)}
    assert next(a for a in agreement.cohort_agreement(study) if a["shots"] == 10)["n"] == 3
    assert pid_for("LOW") not in " ".join(zipfile.ZipFile(io.BytesIO(exports.predictions_zip(study))).namelist())
    # The progress view and the "all" annotator export still show them (and what they are owed).
    assert "LOW" in {name_of(r["worker"]) for r in selectors.cohort_enrollments(sst10)}
    everyone = selectors.annotator_rows(study, include_all=True)
    assert next(r for r in everyone if name_of(r["worker"]) == "LOW")["state"] == "filtered"
    response = api(researcher).get(f"/api/enrollments/{low.pk}/predictions/")
    assert response.status_code == 409
