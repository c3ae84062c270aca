"""The answers a run's inference servers gave, kept in the database (``BaselineResponse``): the backends'
``ResponseStore`` for a run. A request answered once is answered from here when the run is started again, so
a run killed or failed half-way pays for nothing twice; the rows are also the run's transcript, for audit.

The client hands the answers over in batches (those that came back within 100 ms of the first), and each batch is
written in one transaction, before the client counts its answers as done: a run killed at any moment
has kept every answer it counted, and re-sends only what was in flight. So is the run's tally, at most once a
second (in a batch's transaction) and when the backend closes: an attempt that is killed leaves what it cost,
and the next attempt counts it apart (``usage["killed_attempt_requests"]``). Used from one thread (the client's
calling thread), the one whose database connection runs the run.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from django.db import IntegrityError, connection, models, transaction
from django.utils import timezone

from .models import BaselineResponse, BaselineRun

PROGRESS_EVERY = 1.0  # seconds between two writes of a running attempt's tally


def _columns() -> list[str]:
    meta = BaselineResponse._meta
    fields = [meta.get_field(name) for name in ("run", "key", "data", "created_at")]
    return [f.column for f in fields if isinstance(f, models.Field) and f.column]


# Written by hand, not by ``bulk_create``: a run keeps answers as fast as a server gives them
# (benchmarks/llm_client.py), and the ORM's per-object work (and, with DEBUG, the SQL it renders for the log) took 3
# times the CPU, in the client's process. PostgreSQL takes a batch by COPY, one statement where INSERTs are one a
# row (9 us of the client's CPU an answer against 17, 100 answers a batch); an answer another process kept
# meanwhile (a duplicate delivery) makes that batch go again as INSERTs that keep the first answer (ON CONFLICT DO
# NOTHING), as SQLite's always do.
_TABLE = BaselineResponse._meta.db_table
_INSERT = f"INSERT INTO {_TABLE} ({', '.join(_columns())}) VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING"
_COPY = f"COPY {_TABLE} ({', '.join(_columns())}) FROM STDIN"


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
        self.put_many([(key, record)], tally=None)

    def put_many(self, records: Sequence[tuple[str, dict]], *, tally: dict | None) -> None:
        """The answers in one transaction (and the tally, when a second has passed since it was last written). A
        request asked twice (two test items with the same prompt) is kept once."""
        new: dict[str, dict] = {}
        for key, record in records:
            if key not in self._answers and key not in new:
                new[key] = record
        now = timezone.now()
        rows = [(self.run_id, key, BaselineResponse.pack(record), now) for key, record in new.items()]
        with transaction.atomic():
            if rows:
                _write(rows)
            if tally is not None:
                self.progress(tally)
        for key, record in new.items():
            self._answers[key] = record

    def progress(self, tally: dict, *, final: bool = False) -> None:
        """This attempt's tally so far, on the run (only while this attempt owns it)."""
        now = time.monotonic()
        if not final and now - self._written < PROGRESS_EVERY:
            return
        self._written = now
        BaselineRun.objects.filter(pk=self.run_id, status=BaselineRun.Status.RUNNING, attempts=self.attempt).update(
            usage={**tally, "attempt": self.attempt, "killed_attempt_requests": self.killed}
        )


def _write(rows: list[tuple]) -> None:
    if connection.vendor == "postgresql":
        try:
            with transaction.atomic(), connection.cursor() as cursor, connection.wrap_database_errors:
                with cursor.cursor.copy(_COPY) as copy:  # psycopg's own cursor: Django's has no copy
                    for row in rows:
                        copy.write_row(row)
            return
        except IntegrityError:  # an answer already kept (see above): these rows again, keeping the first
            pass
    with connection.cursor() as cursor:
        cursor.executemany(_INSERT, rows)
