"""The worker's test-item query at given positions, on PostgreSQL: what the planner does, and how long it takes.

The hot path reads the item at a worker's position in the test file's order (``LIMIT 1 OFFSET n``, ordered as
``annotation.services.answering.item_order``). The script captures the SQL and parameters that
``hot_path().test_item`` sends (so it measures whatever the hot path's query is), then runs
``EXPLAIN (ANALYZE, FORMAT JSON)`` of it ``--repeats`` times per position and prints the plan's nodes, the
rows the scan read, and the median execution time (the server's, without the round trip), and the median
round trip of the query itself from Python.

    DATABASE_URL=postgres://... .venv/bin/python benchmarks/item_query.py [--task conll03] [--positions 30 520]
        [--repeats 51]

The database must hold the CLUES data (``manage.py import_clues``; else, or on SQLite, the script says it skipped);
it changes nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _nodes(plan: dict) -> list[str]:
    """The plan's nodes, outermost first: "Limit", "Index Scan using <index>", "Sort (position, id)"..."""
    out = []
    while plan:
        name = plan["Node Type"]
        if plan.get("Index Name"):
            name += f" using {plan['Index Name']}"
        if plan.get("Sort Key"):
            name += f" ({', '.join(plan['Sort Key'])})"
        if plan.get("Presorted Key"):
            name += f" presorted ({', '.join(plan['Presorted Key'])})"
        out.append(f"{name} [rows {plan.get('Actual Rows')}]")
        plan = (plan.get("Plans") or [None])[0]
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", default="conll03", help="a task with more test items than the largest position")
    parser.add_argument("--positions", nargs="+", type=int, default=[30, 520])
    parser.add_argument("--repeats", type=int, default=51)
    args = parser.parse_args(argv)

    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "clues_platform.settings")
    import django

    django.setup()
    from django.db import connection

    from annotation.services.hot_paths import hot_path
    from tasks_data.models import Example, Task

    # Skipped, not failed, so that `make bench` on the embedded default runs the other scripts.
    if connection.vendor != "postgresql":
        print("skipped: EXPLAIN ANALYZE as measured here needs PostgreSQL (DATABASE_URL=postgres://...)")
        return 0
    task = Task.objects.filter(slug=args.task).first()
    if task is None:
        print(f"skipped: no task {args.task!r} in the database (manage.py import_clues first)")
        return 0
    items = Example.objects.filter(task=task, role=Example.Role.TEST).count()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexdef FROM pg_indexes WHERE tablename = %s ORDER BY indexname", [Example._meta.db_table]
        )
        indexes = [row[0] for row in cursor.fetchall()]
    print(f"task {task.slug}: {items} test items; indexes of {Example._meta.db_table}:")
    for index in indexes:
        print(f"  {index}")
    for position in args.positions:
        sent: list[tuple[str, tuple]] = []

        def capture(execute, sql, params, many, context, sent=sent):
            sent.append((sql, params))
            return execute(sql, params, many, context)

        with connection.execute_wrapper(capture):
            found = hot_path().test_item(task.pk, position)
        assert found is not None and len(sent) == 1, f"position {position}: one query and an item expected"
        sql, params = sent[0]
        timings: list[float] = []
        plan: dict = {}
        with connection.cursor() as cursor:
            for _ in range(args.repeats):
                cursor.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}", params)
                explained = cursor.fetchone()[0]
                explained = json.loads(explained) if isinstance(explained, str) else explained
                timings.append(explained[0]["Execution Time"])
                plan = explained[0]["Plan"]
            trips = []
            cursor.execute(sql, params)  # once untimed: the connection's first use of the statement
            cursor.fetchall()
            for _ in range(args.repeats):
                began = time.perf_counter()
                cursor.execute(sql, params)
                cursor.fetchall()
                trips.append((time.perf_counter() - began) * 1000)
        print(f"\nposition {position}: {sql % tuple(repr(p) for p in params)}")
        for depth, node in enumerate(_nodes(plan)):
            print(f"  {'  ' * depth}{node}")
        print(
            f"  execution (EXPLAIN ANALYZE): median {statistics.median(timings):.3f} ms, "
            f"min {min(timings):.3f}, max {max(timings):.3f} ({args.repeats} runs); "
            f"round trip: median {statistics.median(trips):.3f} ms"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
