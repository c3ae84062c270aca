"""The worker's hot path, written in SQL.

GET /api/work/current/ and POST /api/work/answer/ are most of the platform's traffic. Their
statements are few and constant (tests/hardening/test_query_counts.py), and all but the INSERT
are written in SQL: building and compiling the ORM's equivalent cost several times running the
statement, and was most of a request's CPU (benchmarks/README.md). Table and column names come
from the models' meta, and the SQL is plain enough for PostgreSQL and SQLite alike (the
protocol tests run on both).

Still needed (benchmarks/README.md "Hand-written SQL or the ORM"): the same functions written with
querysets (benchmarks/hot_orm.py, the oracle tests/annotation/test_hot_path.py checks this module
against) cost gunicorn about twice the CPU per worker request (9.05 against 4.7 ms) and lower the
throughput ratio to the ceiling. The statements are built on first use (``_load_sql`` is cached),
not at import. ``settings.CLUES_HOT_PATH`` chooses the implementation by name (this one, "sql", by default:
hot_paths.py).
"""

from __future__ import annotations

import functools
from datetime import datetime
from typing import cast

from django.db import connection

from tasks_data.models import Example, Task, TrainingSetItem

from ..models import Answer, Cohort, Enrollment, Study

_ENROLLMENT, _ANSWER = Enrollment._meta.db_table, Answer._meta.db_table
_EXAMPLE, _ITEM = Example._meta.db_table, TrainingSetItem._meta.db_table
_TEST_ITEM_SQL = f"SELECT * FROM {_EXAMPLE} WHERE task_id = %s AND role = %s ORDER BY position, id LIMIT 1 OFFSET %s"
_TRAINING_ITEM_SQL = (
    f"SELECT e.* FROM {_EXAMPLE} e INNER JOIN {_ITEM} i ON i.example_id = e.id "
    "WHERE i.training_set_id = %s ORDER BY i.position, i.id LIMIT 1 OFFSET %s"
)


def training_item(training_set_id: int, position: int) -> Example | None:
    return next(iter(Example.objects.raw(_TRAINING_ITEM_SQL, [training_set_id, position])), None)


def test_item(task_id: int, position: int) -> Example | None:
    return next(iter(Example.objects.raw(_TEST_ITEM_SQL, [task_id, Example.Role.TEST.value, position])), None)


def answers_in_step(enrollment_id: int, step: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*) FROM {_ANSWER} WHERE enrollment_id = %s AND step = %s", [enrollment_id, step])
        return cursor.fetchone()[0]


def mark_served(enrollment_id: int, now: datetime | None) -> bool:
    """Record when the current item was first served (``now``), or clear it (None); True if a row changed."""
    value = connection.ops.adapt_datetimefield_value(now)
    with connection.cursor() as cursor:
        if now is None:
            cursor.execute(f"UPDATE {_ENROLLMENT} SET current_served_at = NULL WHERE id = %s", [enrollment_id])
        else:
            cursor.execute(
                f"UPDATE {_ENROLLMENT} SET current_served_at = %s WHERE id = %s AND current_served_at IS NULL",
                [value, enrollment_id],
            )
        return cursor.rowcount == 1


def _quoted(*names: str) -> str:
    return ".".join(connection.ops.quote_name(n) for n in names)


_JOINED = ((Enrollment, "e"), (Cohort, "c"), (Study, "s"), (Task, "t"))
_COUNTS = {
    # The answers given in each step: read in the statement that reads the state (see current_item).
    "training_done": (
        f"SELECT COUNT(*) FROM {_ANSWER} a WHERE a.enrollment_id = e.id AND a.step = %s",
        [Answer.Step.TRAINING.value],
    ),
    "test_done": (
        f"SELECT COUNT(*) FROM {_ANSWER} a WHERE a.enrollment_id = e.id AND a.step = %s",
        [Answer.Step.TEST.value],
    ),
    # The items of each step: static data, so also safe to read in a locking statement.
    "training_total": (f"SELECT COUNT(*) FROM {_ITEM} i WHERE i.training_set_id = c.training_set_id", []),
    "test_total": (
        f"SELECT COUNT(*) FROM {_EXAMPLE} x WHERE x.task_id = c.task_id AND x.role = %s",
        [Example.Role.TEST.value],
    ),
}


@functools.cache  # built on first use (the connection's quoting), once per process
def _load_sql(counts: tuple[str, ...]) -> tuple[str, list]:
    # A concrete field always has its column (Field.set_attributes_from_name); the stubs allow None.
    columns = [_quoted(alias, cast(str, f.column)) for model, alias in _JOINED for f in model._meta.concrete_fields]
    columns += [f"({_COUNTS[name][0]})" for name in counts]
    joins = (
        f"{_quoted(Enrollment._meta.db_table)} e "
        f"INNER JOIN {_quoted(Cohort._meta.db_table)} c ON c.id = e.cohort_id "
        f"INNER JOIN {_quoted(Study._meta.db_table)} s ON s.id = c.study_id "
        f"INNER JOIN {_quoted(Task._meta.db_table)} t ON t.id = c.task_id"
    )
    return f"SELECT {', '.join(columns)} FROM {joins} WHERE e.id = %s", [p for n in counts for p in _COUNTS[n][1]]


_CONVERTERS: dict = {}


def _instance(model, values: list):
    """A model instance from its columns, converted as the ORM converts them (JSON, dates on SQLite...)."""
    fields = model._meta.concrete_fields
    if model not in _CONVERTERS:
        _CONVERTERS[model] = [
            (i, f.get_col(model._meta.db_table), converter)
            for i, f in enumerate(fields)
            for converter in (
                connection.ops.get_db_converters(f.get_col(model._meta.db_table)) + f.get_db_converters(connection)
            )
        ]
    for i, column, converter in _CONVERTERS[model]:
        values[i] = converter(values[i], column, connection)
    return model.from_db(connection.alias, [f.attname for f in fields], values)


def fetch(enrollment_id: int, *, lock: bool) -> Enrollment:
    """The enrollment with its cohort, study and task and the item counts of each step, in one statement.

    Unlocked, it also counts the answers of each step in that statement, so that state and counts
    agree. Locked (``SELECT ... FOR UPDATE OF e``), it does not: a locking read that waited for
    the lock would count as of before the wait, so the caller counts once it holds the lock.
    What ``Enrollment.objects.select_related(...).annotate(...).get()`` gives, by hand: the ORM
    spends more CPU building that query than the database spends running it.
    """
    counts = ("training_total", "test_total") if lock else tuple(_COUNTS)
    sql, params = _load_sql(counts)
    if lock and connection.features.has_select_for_update:
        sql += " FOR UPDATE OF e" if connection.features.has_select_for_update_of else " FOR UPDATE"
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, enrollment_id])
        row = cursor.fetchone()
    if row is None:
        raise Enrollment.DoesNotExist(f"no enrollment {enrollment_id}")
    objects, at = [], 0
    for model, _ in _JOINED:
        width = len(model._meta.concrete_fields)
        objects.append(_instance(model, list(row[at : at + width])))
        at += width
    enrollment, cohort, study, task = objects
    cohort.study, cohort.task = study, task
    enrollment.cohort, enrollment.task = cohort, task
    for name, value in zip(counts, row[at:], strict=True):
        setattr(enrollment, name, value)
    return enrollment
