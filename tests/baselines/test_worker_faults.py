"""A Celery worker killed in the middle of a baseline run (SECURITY.md: baseline runs)."""

import os
import signal
import subprocess

import pytest

from baselines import services
from baselines.models import BaselineRun
from baselines.tasks import execute_run_task
from tests.baselines.conftest import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def _pool_children(worker: subprocess.Popen) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(worker.pid)], capture_output=True, text=True).stdout
    return [int(pid) for pid in out.split()]


def test_killed_worker_run_is_retried_and_stored_once_while_others_go_on(demo_data, celery_worker_process):
    # A real fine-tuning run (default encoder, a few seconds on CPU) to kill, and a quick one behind it.
    (slow,), _ = services.plan_runs(
        tasks=["sst2"], methods=["ft"], shots=[10], splits=[1], config={"extra": {"epochs": 3}}
    )
    (quick,), _ = services.plan_runs(tasks=["squad2"], methods=["empty"], shots=[10], splits=[1])
    execute_run_task.apply_async(args=[slow.pk, "cpu"], queue="gpu")
    execute_run_task.apply_async(args=[quick.pk, "cpu"], queue="gpu")

    wait_for(lambda: BaselineRun.objects.get(pk=slow.pk).status == "running", 60, "the run to start")
    children = _pool_children(celery_worker_process)
    assert children, "the worker has no pool process to kill"
    for pid in children:
        os.kill(pid, signal.SIGKILL)  # the process running the task dies mid-run

    wait_for(
        lambda: BaselineRun.objects.get(pk=slow.pk).status in ("completed", "failed"),
        240,
        "the killed run to be retried",
    )
    wait_for(lambda: BaselineRun.objects.get(pk=quick.pk).status == "completed", 60, "the other run")
    slow.refresh_from_db()
    assert slow.status == "completed", slow.error
    assert slow.attempts == 2  # the first attempt died with its process; the retry finished
    assert slow.s1 is not None and len(slow.predictions) == len(slow.item_scores) == 12
    assert BaselineRun.objects.filter(task=slow.task, method="ft").count() == 1


def test_a_run_whose_worker_keeps_dying_is_marked_failed_and_the_command_still_retries_it(demo_data):
    """One queued message whose worker died MAX_ATTEMPTS times is given up (not delivered for ever); the run is
    not: the command (or a new message) runs it again, as one more attempt."""
    (run,), _ = services.plan_runs(tasks=["sst2"], methods=["majority"], shots=[10], splits=[1])
    BaselineRun.objects.filter(pk=run.pk).update(status="running", attempts=1 + services.MAX_ATTEMPTS)
    result = services.execute_run(run.pk, queued_at=1)  # queued after one attempt, delivered three times since
    assert result.status == "failed" and "gave up after 3 attempts of one queued message" in result.error
    assert "run the command again" in result.error and result.predictions is None
    again = services.execute_run(run.pk)  # the command: always tried
    assert again.status == "completed" and again.attempts == 2 + services.MAX_ATTEMPTS and not again.error
