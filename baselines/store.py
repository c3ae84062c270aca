"""The answers a run's inference servers gave, kept in the database (``BaselineResponse``): the backends'
``ResponseStore`` for a run. A request answered once is answered from here when the run is started again, so
a run killed or failed half-way pays for nothing twice; the rows are also the run's transcript, for audit.

Each answer is written (and committed) as soon as it arrives, by the thread that runs the run. So is the run's
tally, at most once a second and when the backend closes: an attempt that is killed leaves what it cost, and
the next attempt counts it apart (``usage["killed_attempt_requests"]``).
"""

from __future__ import annotations

import time

from .models import BaselineResponse, BaselineRun

PROGRESS_EVERY = 1.0  # seconds between two writes of a running attempt's tally


class RunStore:
    def __init__(self, run: BaselineRun):
        self.run_id, self.attempt = run.pk, run.attempts
        self.killed = int((run.usage or {}).get("killed_attempt_requests") or 0)
        self._answers: dict[str, dict] = {
            key: BaselineResponse(data=data).record
            for key, data in BaselineResponse.objects.filter(run_id=run.pk).values_list("key", "data")
        }
        self._written = 0.0

    def __len__(self) -> int:
        return len(self._answers)

    def get(self, key: str) -> dict | None:
        return self._answers.get(key)

    def put(self, key: str, record: dict) -> None:
        # ignore_conflicts: a second worker that ran the same request (a duplicate delivery) keeps the first answer
        BaselineResponse.objects.bulk_create(
            [BaselineResponse(run_id=self.run_id, key=key, data=BaselineResponse.pack(record))], ignore_conflicts=True
        )
        self._answers.setdefault(key, record)

    def progress(self, tally: dict, *, final: bool = False) -> None:
        """This attempt's tally so far, on the run (only while this attempt owns it)."""
        now = time.monotonic()
        if not final and now - self._written < PROGRESS_EVERY:
            return
        self._written = now
        BaselineRun.objects.filter(pk=self.run_id, status=BaselineRun.Status.RUNNING, attempts=self.attempt).update(
            usage={**tally, "attempt": self.attempt, "killed_attempt_requests": self.killed}
        )
