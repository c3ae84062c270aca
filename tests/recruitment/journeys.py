"""A participant's way through Prolific (the fake in fake_prolific.py) and the platform, shared by the
recruitment tests: a published study, a participant arriving from Prolific, finishing, being approved; a forged
join while Prolific is down."""

from datetime import timedelta

from annotation.models import Enrollment
from recruitment.publish import publish
from tests.annotation.factories import (
    WorkerClient,
    cohort,
    gold_answer,
    make_study,
    pid_for,
    trim_test_set,
    wrong_answer,
)

SITE = "https://clues.example"


def published(fake, researcher, *, shots=(0,), **options):
    trim_test_set("sst2", 3)
    study = make_study(
        shots=list(shots),
        launch=False,
        created_by=researcher,
        completion_code="CDONE",
        screenout_code="CSOUT",
        **options,
    )
    publish(study, site_url=SITE)
    return study


def arrive(fake, cohort_, name):
    """A participant takes a place on Prolific and follows the study link."""
    pid = pid_for(name)
    sid = fake.start_submission(cohort_.prolific.prolific_study_id, pid)
    worker = WorkerClient(
        cohort_, params={"PROLIFIC_PID": pid, "STUDY_ID": cohort_.prolific.prolific_study_id, "SESSION_ID": sid}
    )
    return worker, pid, sid


def finish(worker, choose=gold_answer):
    """Answer every item (the gold by default) through the worker API; returns the last state."""

    while True:
        state = worker.current().json()
        if state.get("item") is None:
            return state
        example = worker.example(state["item"]["id"])
        assert worker.answer(worker.handle(example), choose(example)).status_code in (200, 201)


def approved_worker(fake, study, name):
    c = cohort(study, "sst2", 0)
    worker, pid, sid = arrive(fake, c, name)
    finish(worker)
    fake.submit(sid, fake.code(sid))
    # A slow worker: an hour of recorded active time (answers spread out; idle cap raised below).
    enrolled_at = Enrollment.objects.get(worker__external_id=pid).enrolled_at
    Enrollment.objects.filter(worker__external_id=pid).update(enrolled_at=enrolled_at - timedelta(hours=1))
    return pid


FORGED = "0123456789abcdef0123{:04d}"


def forged_join(fake, c, name, n):
    """Someone who knows (or makes up) a PID joins with a made-up SESSION_ID while Prolific is down."""
    fake.down = True
    try:
        return WorkerClient(
            c,
            params={
                "PROLIFIC_PID": pid_for(name),
                "STUDY_ID": c.prolific.prolific_study_id,
                "SESSION_ID": FORGED.format(n),
            },
        )
    finally:
        fake.down = False


def finish_by_position(worker, wrong_positions=frozenset(), *, step="training"):
    """Answer the items of ``step``: the gold except at the given 0-based positions; returns the last state."""

    while True:
        state = worker.current().json()
        if state.get("item") is None or state.get("step") != step:
            return state
        example = worker.example(state["item"]["id"])
        choose = wrong_answer if state["progress"]["done"] in wrong_positions else gold_answer
        assert worker.answer(worker.handle(example), choose(example)).status_code in (200, 201)


def age(pid, minutes):
    """Move the enrollment's join back by ``minutes`` (rather than wait)."""
    e = Enrollment.objects.get(worker__external_id=pid)
    Enrollment.objects.filter(pk=e.pk).update(enrolled_at=e.enrolled_at - timedelta(minutes=minutes))
