"""Threads released together, for the race tests (each thread has its own database connection)."""

import threading

from django.db import connection

from tasks_data.models import Example, Task


def run_together(n: int, work) -> list:
    """Run ``work(i)`` in n threads released at the same instant; each returns a value or the exception."""
    barrier = threading.Barrier(n)
    results: list = [None] * n

    def target(i: int):
        try:
            barrier.wait(timeout=30)
            results[i] = work(i)
        except Exception as exc:  # noqa: BLE001 - the test inspects it
            results[i] = exc
        finally:
            connection.close()  # this thread's own connection

    threads = [threading.Thread(target=target, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    return results


def tiny_sst2(source: str, *, items: int = 3, context: str = "review {i}") -> Task:
    """A tiny SST-2 test set (every gold "positive"), to be committed so that every thread's connection sees it."""
    task = Task.objects.create(slug="sst2", source=source, fingerprint="-")
    Example.objects.bulk_create(
        Example(
            task=task,
            role=Example.Role.TEST,
            identity=f"t{i}",
            clues_id=str(i),
            position=i,
            context=context.format(i=i),
            question="positive or negative?",
            gold=["positive"],
        )
        for i in range(items)
    )
    return task
