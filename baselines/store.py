"""The responses a run's inference servers gave, kept in the database (``BaselineResponse``): the backends'
``ResponseStore`` for a run. A request answered once is answered from here when the run is started again, so
a run killed or failed half-way pays for nothing twice; the rows are also the run's transcript, for audit.

Each answer is written (and committed) as soon as it arrives, by the thread that runs the run."""

from __future__ import annotations

from .models import BaselineResponse, BaselineRun


class RunStore:
    def __init__(self, run: BaselineRun):
        self.run_id = run.pk
        self._answers: dict[str, dict] = dict(
            BaselineResponse.objects.filter(run_id=run.pk).values_list("key", "response")
        )

    def __len__(self) -> int:
        return len(self._answers)

    def get(self, key: str) -> dict | None:
        return self._answers.get(key)

    def put(self, key: str, request: dict, response: dict) -> None:
        # ignore_conflicts: a second worker that ran the same request (a duplicate delivery) keeps the first answer
        BaselineResponse.objects.bulk_create(
            [BaselineResponse(run_id=self.run_id, key=key, request=request, response=response)], ignore_conflicts=True
        )
        self._answers.setdefault(key, response)
