"""``{{ text|as_read }}``: a text written for workers (a task's description, an answer kind's notes, a question)
with the data's markers as the worker reads them on the item: ReCoRD's ``@placeholder`` as the blank the question
shows, ``@highlight`` as the bullet the passage shows. Everything else is escaped."""

from __future__ import annotations

from django import template
from django.utils.html import conditional_escape
from django.utils.safestring import SafeString, mark_safe

from worker_pages.text import HIGHLIGHT, PLACEHOLDER

register = template.Library()

BLANK = mark_safe('<span class="blank" role="img" aria-label="blank"><span class="blank-empty">?</span></span>')
BULLET = mark_safe('<span class="hl-bullet" aria-hidden="true">▸</span>')


@register.filter
def as_read(text: str) -> SafeString:
    out: list[str] = []
    for i, part in enumerate(str(text or "").split(PLACEHOLDER)):
        if i:
            out.append(BLANK)
        out.append(BULLET.join(conditional_escape(p) for p in part.split(HIGHLIGHT)))
    return mark_safe("".join(out))  # every piece escaped above; the markers are ours
