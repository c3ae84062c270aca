"""Binding a browser session to one enrollment: the only way a worker reaches their work."""

from django.http import HttpRequest

from .models import Enrollment

SESSION_KEY = "enrollment_id"


def bind(request: HttpRequest, enrollment: Enrollment) -> None:
    if request.session.get(SESSION_KEY) != enrollment.pk:
        request.session.cycle_key()  # a new session id on binding: no fixation
    request.session[SESSION_KEY] = enrollment.pk


def bound_enrollment_id(request: HttpRequest) -> int | None:
    value = request.session.get(SESSION_KEY)
    return value if isinstance(value, int) else None
