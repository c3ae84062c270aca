"""The Celery app. Without CELERY_BROKER_URL tasks run eagerly, in-process (see settings)."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "clues_platform.settings")

app = Celery("clues_platform")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# Periodic tasks (expiry, Prolific sync) are in settings.CELERY_BEAT_SCHEDULE: run `celery -A clues_platform beat`.
