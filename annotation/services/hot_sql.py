"""The worker's hot path, written in SQL.

GET /api/work/current/ and POST /api/work/answer/ are most of the platform's traffic. Their
statements are few and constant (tests/hardening/test_query_counts.py), and written in SQL: building
and compiling the ORM's equivalent cost several times running the statement, and was most of a
request's CPU (benchmarks/README.md). Table and column names come from the models' meta, and the SQL
is plain enough for PostgreSQL and SQLite alike (the protocol tests run on both), but for the answer's
INSERT, which clears the serving time in its own statement on PostgreSQL only.

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
from django.db.models import Field

from tasks_data.models import Example, Task, TrainingSetItem

from ..models import Answer, AttentionAnswer, Cohort, Enrollment, Study

_ENROLLMENT, _ANSWER = Enrollment._meta.db_table, Answer._meta.db_table
_EXAMPLE, _ITEM = Example._meta.db_table, TrainingSetItem._meta.db_table
# The item's columns named in the model's field order (what ``_instance`` reads), not the table's.
_EXAMPLE_COLUMNS = ", ".join(f"e.{f.column}" for f in Example._meta.concrete_fields)
# The item at a position ({}: the OFFSET) of a step, in the file's order.
_TEST_ITEM_SQL = (
    f"SELECT {_EXAMPLE_COLUMNS} FROM {_EXAMPLE} e WHERE e.task_id = %s AND e.role = %s "
    "ORDER BY e.position, e.id LIMIT 1 OFFSET {}"
)
_TRAINING_ITEM_SQL = (
    f"SELECT {_EXAMPLE_COLUMNS} FROM {_EXAMPLE} e INNER JOIN {_ITEM} i ON i.example_id = e.id "
    "WHERE i.training_set_id = %s ORDER BY i.position, i.id LIMIT 1 OFFSET {}"
)
_ANSWERS_IN_STEP_SQL = f"SELECT COUNT(*) FROM {_ANSWER} WHERE enrollment_id = %s AND step = %s"
# The answers of a step and the item after them ({}: the item's query), in one statement and so one snapshot. The
# count is written twice: the item's OFFSET cannot name a column of the query around it.
_NEXT_ITEM_SQL = (
    f"SELECT n.done, x.* FROM (SELECT COUNT(*) AS done FROM {_ANSWER} WHERE enrollment_id = %s AND step = %s) n "
    "LEFT JOIN ({}) x ON 1 = 1"
)
# Each statement written out once, at import: the item at a position given as a parameter, and the count with the
# item after it, per step.
_ITEM_AT: dict[str, str] = {
    Answer.Step.TRAINING: _TRAINING_ITEM_SQL.format("%s"),
    Answer.Step.TEST: _TEST_ITEM_SQL.format("%s"),
}
_NEXT_ITEM: dict[str, str] = {
    step: _NEXT_ITEM_SQL.format(item.format(f"({_ANSWERS_IN_STEP_SQL})"))
    for step, item in ((Answer.Step.TRAINING, _TRAINING_ITEM_SQL), (Answer.Step.TEST, _TEST_ITEM_SQL))
}


def _example(row) -> Example | None:
    """An Example from its columns, or None for a missing row: what ``raw()`` builds, for less CPU."""
    return None if row is None or row[0] is None else _instance(Example, list(row))


def _one_example(sql: str, params: list) -> Example | None:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return _example(cursor.fetchone())


def training_item(training_set_id: int, position: int) -> Example | None:
    return _one_example(_ITEM_AT[Answer.Step.TRAINING], [training_set_id, position])


def test_item(task_id: int, position: int) -> Example | None:
    return _one_example(_ITEM_AT[Answer.Step.TEST], [task_id, Example.Role.TEST.value, position])


def answers_in_step(enrollment_id: int, step: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute(_ANSWERS_IN_STEP_SQL, [enrollment_id, step])
        return cursor.fetchone()[0]


def next_item(
    enrollment_id: int, step: str, *, training_set_id: int | None, task_id: int
) -> tuple[int, Example | None]:
    """The answers the enrollment gave in ``step`` and the item after them in the file's order (None past the end):
    ``answers_in_step`` and ``training_item`` / ``test_item`` in one statement, run once the caller holds the
    enrollment's lock (so the count includes every answer committed before it)."""
    counted: list = [enrollment_id, step]
    params: list = [training_set_id] if step == Answer.Step.TRAINING else [task_id, Example.Role.TEST.value]
    with connection.cursor() as cursor:
        cursor.execute(_NEXT_ITEM[step], [*counted, *params, *counted])
        done, *columns = cursor.fetchone()
    return done, _example(columns)


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


@functools.cache  # per model, on first use (the connection's vendor)
def _insert_sql(model, clear_served: bool) -> tuple[str, list[Field]]:
    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    columns = ", ".join(cast(str, f.column) for f in fields)
    table = model._meta.db_table
    insert = f"INSERT INTO {table} ({columns}) VALUES ({', '.join(['%s'] * len(fields))}) RETURNING id"
    if clear_served and connection.vendor == "postgresql":
        # The serving time is cleared in the INSERT's own statement: one round trip less per answer.
        return f"WITH cleared AS (UPDATE {_ENROLLMENT} SET current_served_at = NULL WHERE id = %s) {insert}", fields
    return insert, fields


def insert(answer: Answer | AttentionAnswer, *, clear_served: bool) -> None:
    """INSERT an answer (its id set from ``RETURNING``), and clear its enrollment's serving time when
    ``clear_served``: what ``save()`` and ``mark_served(None)`` do, in one statement on PostgreSQL (two on SQLite,
    whose INSERT cannot carry an UPDATE). Raises IntegrityError for a second answer to an item or a position."""
    sql, fields = _insert_sql(type(answer), clear_served)
    values = [f.get_db_prep_save(f.pre_save(answer, True), connection) for f in fields]  # pre_save: auto_now_add
    together = clear_served and connection.vendor == "postgresql"
    with connection.cursor() as cursor:
        cursor.execute(sql, [answer.enrollment_id, *values] if together else values)
        answer.pk = cursor.fetchone()[0]
    answer._state.adding, answer._state.db = False, connection.alias
    if clear_served and not together:
        mark_served(answer.enrollment_id, None)


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
