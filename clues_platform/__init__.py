# Named clues_platform, not platform: a package importable as `platform` would shadow the
# standard library module that uuid, Django, kombu and torch import.
from .celery import app as celery_app

__all__ = ("celery_app",)
