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

Round trips cost more than anything else here (about 0.1 ms of the web process's CPU each on a small machine, as
much again in the database): a current-item read is one statement (``fetch``, which records the serving time on
PostgreSQL), an answer in the middle of a step that read and one INSERT (``insert_if_unchanged``).
"""

from __future__ import annotations

import contextlib
import functools
from datetime import datetime
from typing import cast

from django.db import connection, transaction
from django.db.models import Field
from django.db.models.base import ModelState
from django.db.models.signals import post_init, pre_init

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


def _answer_fields(model) -> list[Field]:
    return [f for f in model._meta.concrete_fields if not f.primary_key]


@functools.cache  # per model, on first use (the connection's vendor)
def _insert_sql(model, clear_served: bool) -> tuple[str, list[Field]]:
    fields = _answer_fields(model)
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


# The enrollment's columns an answer in the middle of a step relies on: unchanged since they were read, the answer
# is stored as the locking path would store it (``answering.submit_answer``).
UNCHANGED = ("state", "part", "timer_started_at", "timer_minutes")


@functools.cache  # on first use (the connection's vendor)
def _unchanged_sql() -> tuple[str, str, list[Field]]:
    """The UPDATE that locks the enrollment, checks it is as read and clears its serving time; the INSERT of the
    answer from it (PostgreSQL: one statement), or alone (SQLite, after the UPDATE in its transaction)."""
    same = "IS NOT DISTINCT FROM" if connection.vendor == "postgresql" else "IS"
    where = " AND ".join(f"{column} {same} %s" for column in UNCHANGED)
    update = f"UPDATE {_ENROLLMENT} SET current_served_at = NULL WHERE id = %s AND {where}"
    fields = _answer_fields(Answer)
    columns = ", ".join(cast(str, f.column) for f in fields)
    values = ", ".join(["%s"] * len(fields))
    if connection.vendor == "postgresql":
        insert = f"WITH locked AS ({update} RETURNING id) INSERT INTO {_ANSWER} ({columns}) SELECT {values} FROM locked"
    else:
        insert = f"INSERT INTO {_ANSWER} ({columns}) VALUES ({values})"
    return update, insert + " RETURNING id", fields


def insert_if_unchanged(answer: Answer, *, read: Enrollment) -> bool:
    """INSERT ``answer`` and clear the serving time, if the enrollment's ``UNCHANGED`` columns still hold what
    ``read`` holds; False, and nothing written, if they do not. One statement on PostgreSQL: its UPDATE takes the
    enrollment's row lock, and re-checks the row as a concurrent change left it, as the locking read does. Raises
    IntegrityError for a second answer to an item or a position."""
    update, insert, fields = _unchanged_sql()
    expected = [answer.enrollment_id, *(_db_value(read, column) for column in UNCHANGED)]
    values = [f.get_db_prep_save(f.pre_save(answer, True), connection) for f in fields]
    # A transaction where the statement is not alone (SQLite), a savepoint inside the caller's (the tests): a
    # duplicate's IntegrityError leaves it usable.
    together = connection.vendor == "postgresql" and not connection.in_atomic_block
    with contextlib.nullcontext() if together else transaction.atomic(), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(insert, [*expected, *values])
        else:  # the transaction holds SQLite's write lock from the UPDATE on
            cursor.execute(update, expected)
            if cursor.rowcount != 1:
                return False
            cursor.execute(insert, values)
        row = cursor.fetchone()
    if row is None:
        return False
    answer.pk = row[0]
    answer._state.adding, answer._state.db = False, connection.alias
    return True


_ENROLLMENT_FIELDS = {f.column: f for f in Enrollment._meta.concrete_fields}


def _db_value(enrollment: Enrollment, column: str):
    field = _ENROLLMENT_FIELDS[column]
    return field.get_db_prep_value(getattr(enrollment, field.attname), connection)


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


# The id of the item at the worker's place in the step their state is in, in the file's order (NULL past the end,
# outside a step, and for a shuffled test order, which is not the file's): what ``next_item`` reads, for the
# enrollment's own statement. Each OFFSET counts the step's answers (by the enrollment id: a parameter).
_PLACE = (
    f"CASE WHEN e.state = %s THEN (SELECT i.example_id FROM {_ITEM} i WHERE i.training_set_id = c.training_set_id "
    f"ORDER BY i.position, i.id LIMIT 1 OFFSET ({_ANSWERS_IN_STEP_SQL})) "
    f"WHEN e.state = %s AND s.test_order = %s THEN (SELECT p.id FROM {_EXAMPLE} p WHERE p.task_id = c.task_id "
    f"AND p.role = %s ORDER BY p.position, p.id LIMIT 1 OFFSET ({_ANSWERS_IN_STEP_SQL})) END"
)


def _place_params(enrollment_id: int) -> list:
    return [
        Enrollment.State.TRAINING.value,
        enrollment_id,
        Answer.Step.TRAINING.value,
        Enrollment.State.TESTING.value,
        Study.TestOrder.FILE.value,
        Example.Role.TEST.value,
        enrollment_id,
        Answer.Step.TEST.value,
    ]


# Marks the serving time in the read's own statement (PostgreSQL: a data-modifying WITH), where current_item would
# mark it: in a step, before the part's deadline (``filtering.is_stale``), not marked yet. Parameters: now, the
# enrollment id, now again (the deadline's check).
_SERVE = (
    f"WITH served AS (UPDATE {_ENROLLMENT} SET current_served_at = %s WHERE id = %s AND current_served_at IS NULL "
    "AND state IN (%s, %s) AND (timer_minutes IS NULL "
    "OR COALESCE(timer_started_at, enrolled_at) + timer_minutes * INTERVAL '1 minute' >= %s) "
    "RETURNING current_served_at) "
)


@functools.cache  # built on first use (the connection's quoting), once per process
def _load_sql(counts: tuple[str, ...], with_item: bool, serve: bool = False) -> tuple[str, list]:
    # A concrete field always has its column (Field.set_attributes_from_name); the stubs allow None.
    columns = [_quoted(alias, cast(str, f.column)) for model, alias in _JOINED for f in model._meta.concrete_fields]
    columns += [f"({_COUNTS[name][0]})" for name in counts]
    joins = (
        f"{_quoted(Enrollment._meta.db_table)} e "
        f"INNER JOIN {_quoted(Cohort._meta.db_table)} c ON c.id = e.cohort_id "
        f"INNER JOIN {_quoted(Study._meta.db_table)} s ON s.id = c.study_id "
        f"INNER JOIN {_quoted(Task._meta.db_table)} t ON t.id = c.task_id"
    )
    if with_item:
        columns += [f"x.{f.column}" for f in Example._meta.concrete_fields]
        joins += f" LEFT JOIN {_EXAMPLE} x ON x.id = ({_PLACE})"
    if serve:
        columns.append("(SELECT current_served_at FROM served)")
    select = f"{_SERVE if serve else ''}SELECT {', '.join(columns)} FROM {joins} WHERE e.id = %s"
    return select, [p for n in counts for p in _COUNTS[n][1]]


_ROWS: dict = {}  # per model: its columns' converters, and its fields' attribute names


def _instance(model, values: list):
    """A model instance from its columns, converted as the ORM converts them (JSON, dates on SQLite...)."""
    if model not in _ROWS:
        fields = model._meta.concrete_fields
        _ROWS[model] = (
            [
                (i, f.get_col(model._meta.db_table), converter)
                for i, f in enumerate(fields)
                for converter in (
                    connection.ops.get_db_converters(f.get_col(model._meta.db_table)) + f.get_db_converters(connection)
                )
            ],
            [f.attname for f in fields],
        )
    converters, attnames = _ROWS[model]
    for i, column, converter in converters:
        values[i] = converter(values[i], column, connection)
    if pre_init.has_listeners(model) or post_init.has_listeners(model):
        return model.from_db(connection.alias, attnames, values)
    # What from_db builds, without Model.__init__'s per-field work (no signal listens to these models' init).
    instance = model.__new__(model)
    instance.__dict__.update(zip(attnames, values, strict=True))
    instance._state = state = ModelState()
    state.adding, state.db = False, connection.alias
    return instance


def fetch(enrollment_id: int, *, lock: bool, serve_at: datetime | None = None) -> Enrollment:
    """The enrollment with its cohort, study and task and the item counts of each step, in one statement.

    Unlocked, it also counts the answers of each step in that statement, so that state and counts
    agree, and reads the item at the worker's place in the file's order (``place_read``: the step the state is in,
    the position and its item). Locked (``SELECT ... FOR UPDATE OF e``), it does neither: a locking read that
    waited for the lock would count as of before the wait, so the caller counts once it holds the lock.
    What ``Enrollment.objects.select_related(...).annotate(...).get()`` gives, by hand: the ORM
    spends more CPU building that query than the database spends running it.

    ``serve_at`` (unlocked, on PostgreSQL): the statement also records that time as the current item's serving time,
    where ``answering.current_item`` would (``_SERVE``); ``current_served_at`` then holds it. Elsewhere it is left
    to the caller (``mark_served``).
    """
    counts = ("training_total", "test_total") if lock else tuple(_COUNTS)
    serve = serve_at is not None and not lock and connection.vendor == "postgresql"
    sql, params = _load_sql(counts, not lock, serve)
    if lock and connection.features.has_select_for_update:
        sql += " FOR UPDATE OF e" if connection.features.has_select_for_update_of else " FOR UPDATE"
    if serve:
        steps = [Enrollment.State.TRAINING.value, Enrollment.State.TESTING.value]
        at_ = connection.ops.adapt_datetimefield_value(serve_at)
        params = [at_, enrollment_id, *steps, at_, *params]
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, *([] if lock else _place_params(enrollment_id)), enrollment_id])
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
    for name, value in zip(counts, row[at : at + len(counts)], strict=True):
        setattr(enrollment, name, value)
    if not lock:
        width = len(Example._meta.concrete_fields)
        enrollment.place_read = _place(enrollment, _example(row[at + len(counts) : at + len(counts) + width]))
    if serve and row[-1] is not None:
        enrollment.current_served_at = serve_at
    return enrollment


def _place(enrollment: Enrollment, item: Example | None) -> tuple[str, int, Example | None] | None:
    """What ``_PLACE`` read: (step, position, item), or None where it reads nothing."""
    if enrollment.state == Enrollment.State.TRAINING:
        return Answer.Step.TRAINING, enrollment.training_done, item
    if enrollment.state == Enrollment.State.TESTING and enrollment.cohort.study.test_order == Study.TestOrder.FILE:
        return Answer.Step.TEST, enrollment.test_done, item
    return None
