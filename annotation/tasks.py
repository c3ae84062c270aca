"""Celery tasks of the protocol: free the places of enrollments past their time limit (beat, settings)."""

from celery import shared_task

from . import services


@shared_task(name="annotation.tasks.expire_enrollments")
def expire_enrollments() -> int:
    return services.expire_stale()
