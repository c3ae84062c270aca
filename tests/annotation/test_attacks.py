"""A dishonest worker's attacks (edited URLs, shared codes, new ids, forged sessions), replayed through the
real HTTP surface (join link + worker API + commands)."""

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command

from annotation.estimates import cohort_estimate
from annotation.models import Enrollment, Worker
from tests.annotation.factories import WorkerClient, cohort, gold_answer, make_study, pid_for, wrong_answer

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clues")]


def answer_training(worker: WorkerClient, wrong: set[int] = frozenset()) -> dict:
    """Answer the training step over the API (gold except at the given positions); returns the last state."""
    while True:
        state = worker.current().json()
        if state["step"] != "training":
            return state
        example = worker.example(state["item"]["id"])
        choose = wrong_answer if state["progress"]["done"] in wrong else gold_answer
        assert worker.answer(worker.handle(example), choose(example)).status_code in (200, 201)


def test_pid_case_variants_are_one_worker_and_cannot_enter_another_cohort_of_the_task():
    study = make_study(shots=[0, 10])
    pid = pid_for("caseworker")
    first = WorkerClient(cohort(study, "sst2", 10), params={"PROLIFIC_PID": pid.upper(), "SESSION_ID": "s1"})
    assert first.join_response.status_code == 302
    sst0 = cohort(study, "sst2", 0)
    same_browser = first.client.get(sst0.join_path, {"PROLIFIC_PID": pid, "SESSION_ID": "s2"})
    other_browser = WorkerClient(sst0, params={"PROLIFIC_PID": f" {pid.title()} ", "SESSION_ID": "s3"})
    assert same_browser.status_code == other_browser.join_response.status_code == 403
    assert Worker.objects.count() == 1 and Enrollment.objects.count() == 1


def test_a_filtered_worker_cannot_rejoin_under_a_new_pid_in_the_same_browser():
    study = make_study(shots=[10], filter_floor=0.9, workers_per_cohort=3)
    sst10 = cohort(study, "sst2", 10)
    worker = WorkerClient(sst10, "weak")
    assert answer_training(worker, wrong=set(range(10)))["step"] == "filtered"
    again = worker.client.get(sst10.join_path, {"PROLIFIC_PID": pid_for("weak-again"), "SESSION_ID": "new"})
    assert again.status_code == 403
    assert not Worker.objects.filter(external_id=pid_for("weak-again")).exists()
    # The browser is still bound to the filtered enrollment: no second training with the gold known.
    assert worker.current().json()["step"] == "filtered"


def test_withdrawn_sybils_do_not_lower_the_relative_filter():
    study = make_study(shots=[10], workers_per_cohort=8, filter_fraction=0.5)
    sst10 = cohort(study, "sst2", 10)
    # Made-up PIDs go first and answer training wrongly (nobody to be compared with yet, so they pass)...
    sybils = [WorkerClient(sst10, f"sybil-{i}") for i in range(4)]
    for sybil in sybils:
        assert answer_training(sybil, wrong=set(range(10)))["step"] == "test"
    for name in ("honest-1", "honest-2"):
        assert answer_training(WorkerClient(sst10, name))["step"] == "test"
    # ...then withdraw, giving their places back.
    for sybil in sybils:
        assert sybil.send("post", "/api/work/withdraw/", {"reason": "bye"}).status_code == 200
    # Training S1 0.3: above 0.5 x the mean with the sybils counted (2/6 = 0.33 -> bar 0.17), below without (bar 0.5).
    attacker = WorkerClient(sst10, "attacker")
    assert answer_training(attacker, wrong=set(range(7)))["step"] == "filtered"


def test_expired_sybils_do_not_lower_the_relative_filter_either():
    study = make_study(shots=[10], workers_per_cohort=8, filter_fraction=0.5, time_limit_minutes=30)
    sst10 = cohort(study, "sst2", 10)
    for i in range(4):  # low scorers who go first, then sit on their places until they expire
        assert answer_training(WorkerClient(sst10, f"idle-{i}"), wrong=set(range(10)))["step"] == "test"
    Enrollment.objects.update(enrolled_at=Enrollment.objects.first().enrolled_at - timedelta(minutes=31))
    call_command("expire_enrollments", stdout=StringIO())
    assert Enrollment.objects.filter(state="expired").count() == 4
    for name in ("honest-1", "honest-2"):
        assert answer_training(WorkerClient(sst10, name))["step"] == "test"
    attacker = WorkerClient(sst10, "attacker")
    assert answer_training(attacker, wrong=set(range(7)))["step"] == "filtered"


def test_squatted_places_expire_by_default_and_go_to_new_workers():
    study = make_study(shots=[0], workers_per_cohort=3, expected_minutes=20)  # no explicit time limit
    sst0 = cohort(study, "sst2", 0)
    limit = cohort_estimate(sst0).part(1).time_limit
    assert study.time_limit_minutes is None and 40 <= limit < 24 * 60, "a limit that fits a slow worker, not a day"
    for i in range(3):
        assert WorkerClient(sst0, f"squatter-{i}").join_response.status_code == 302
    assert WorkerClient(sst0, "honest").join_response.status_code == 409
    Enrollment.objects.update(enrolled_at=Enrollment.objects.first().enrolled_at - timedelta(minutes=limit + 1))
    out = StringIO()
    call_command("expire_enrollments", stdout=out)
    assert "expired 3" in out.getvalue()
    assert WorkerClient(sst0, "honest").join_response.status_code == 302


def test_the_beat_task_expires_squatters_too():
    from annotation import tasks

    study = make_study(shots=[0], workers_per_cohort=1, time_limit_minutes=5)
    sst0 = cohort(study, "sst2", 0)
    WorkerClient(sst0, "squatter")
    Enrollment.objects.update(enrolled_at=Enrollment.objects.get().enrolled_at - timedelta(minutes=6))
    assert tasks.expire_enrollments.apply().get() == 1
    assert Enrollment.objects.get().state == "expired"
