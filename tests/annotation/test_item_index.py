"""The worker's test-item query reads an index in its own order: an index scan that stops at the item, no sort of the
test step (``tasks_data.Example``'s ``example_item_order``; timings: benchmarks/item_query.py)."""

from __future__ import annotations

import json

import pytest
from django.db import connection

from annotation.services.hot_paths import hot_path
from tasks_data.models import Example, Task

pytestmark = pytest.mark.django_db


def _nodes(plan: dict) -> list[tuple[str, str | None]]:
    out = []
    while plan:
        out.append((plan["Node Type"], plan.get("Index Name")))
        plan = (plan.get("Plans") or [None])[0]
    return out


@pytest.mark.parametrize("position", [30, 520])
def test_the_item_query_is_an_index_scan_in_its_order_with_no_sort(position):
    if connection.vendor != "postgresql":
        pytest.skip("the plan is PostgreSQL's: set DATABASE_URL=postgres://...")
    task = Task.objects.create(slug="conll03", source="index test", fingerprint="-")
    Example.objects.bulk_create(
        Example(task=task, role=role, identity=f"{role}{i}", clues_id=str(i), position=i, context="c", gold=[])
        for role in (Example.Role.TEST, Example.Role.TRAIN)
        for i in range(600)
    )
    sent = []

    def capture(execute, sql, params, many, context):
        sent.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(capture):
        assert hot_path().test_item(task.pk, position).position == position
    ((sql, params),) = sent
    with connection.cursor() as cursor:
        # Whatever the planner would pick for so small a table, asked: can an index give the rows in the query's
        # order? Sorting, scanning the table and bitmap scans (unordered) are all but ruled out, so a sort shows in
        # the plan only where no index is in that order.
        cursor.execute(f"ANALYZE {Example._meta.db_table}")
        for setting in ("enable_seqscan", "enable_bitmapscan", "enable_sort", "enable_incremental_sort"):
            cursor.execute(f"SET LOCAL {setting} = off")
        cursor.execute(f"EXPLAIN (FORMAT JSON) {sql}", params)
        explained = cursor.fetchone()[0]
    plan = (json.loads(explained) if isinstance(explained, str) else explained)[0]["Plan"]
    assert _nodes(plan) == [("Limit", None), ("Index Scan", "example_item_order")]
