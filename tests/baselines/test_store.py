"""A run's store (baselines/store.py): the answers a batch hands it, each kept once, in one transaction, whatever
else kept one meanwhile; on PostgreSQL and SQLite alike."""

from __future__ import annotations

import pytest

from baselines.models import BaselineResponse, BaselineRun
from baselines.store import RunStore
from tasks_data.models import Task

pytestmark = pytest.mark.django_db


@pytest.fixture
def run():
    task = Task.objects.create(slug="sst2", source="test", fingerprint="-")
    return BaselineRun.objects.create(
        task=task, method="worker", model="m", backend="openai", server="http://h/v1", shots=10, split=1, seed=1,
        status=BaselineRun.Status.RUNNING, attempts=1,
    )  # fmt: skip


def answer(text: str) -> dict:
    return {"answer": text, "usage": {"prompt_tokens": 3}}


def kept(run) -> list[tuple[str, str]]:
    return [(r.key, r.record["answer"]) for r in BaselineResponse.objects.filter(run=run).order_by("pk")]


def test_a_batch_is_kept_in_order_each_request_once(run):
    store = RunStore(run)
    # two test items with the same prompt: one request, asked twice in a batch
    store.put_many([("a", answer("x")), ("b", answer("y")), ("a", answer("x"))], tally={"requests": 3})
    store.put_many([("b", answer("y")), ("c", answer("z"))], tally=None)
    assert kept(run) == [("a", "x"), ("b", "y"), ("c", "z")]
    assert RunStore(run).get("c") == answer("z") and len(RunStore(run)) == 3
    run.refresh_from_db()
    assert run.usage == {"requests": 3, "attempt": 1, "killed_attempt_requests": 0}  # the tally, in the batch


def test_an_answer_another_process_kept_meanwhile_is_kept_first_and_the_batch_still_goes_in(run):
    store = RunStore(run)
    BaselineResponse.objects.create(run=run, key="b", data=BaselineResponse.pack(answer("first")))
    store.put_many([("a", answer("x")), ("b", answer("second")), ("c", answer("z"))], tally=None)
    assert sorted(kept(run)) == [("a", "x"), ("b", "first"), ("c", "z")]
