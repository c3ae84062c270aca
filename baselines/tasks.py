"""Celery tasks: baseline runs on the ``gpu`` queue (``celery -A clues_platform worker -Q gpu -c 1``)."""

from celery import shared_task

from . import services

GPU_QUEUE = "gpu"


@shared_task(name="baselines.execute_run", acks_late=True, reject_on_worker_lost=True)
def execute_run_task(run_id: int, device: str = "auto", queued_at: int = 0) -> str:
    # acks_late + reject_on_worker_lost: a worker that dies mid-run gives the message back, and
    # services.execute_run bounds the deliveries of this message (``queued_at``: the run's attempts when it was
    # sent; a message from before that argument counts from 0) and stores a result once.
    return services.execute_run(run_id, device=device, queued_at=queued_at).status
