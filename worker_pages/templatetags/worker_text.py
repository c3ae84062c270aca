"""``{{ text|as_read }}``: a text written for workers (a task's description, an answer kind's notes, a question)
with the data's markers as the worker reads them on the item: ReCoRD's ``@placeholder`` as the blank the question
shows, ``@highlight`` as the bullet the passage shows. Everything else is escaped."""

from __future__ import annotations

from django import template
from django.utils.html import conditional_escape
from django.utils.safestring import SafeString

from worker_pages.text import markers_as_read

register = template.Library()


@register.filter
def as_read(text: str) -> SafeString:
    return markers_as_read(conditional_escape(str(text or "")))  # escaped first; the markers are ours
