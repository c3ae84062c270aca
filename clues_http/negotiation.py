"""How a client wants its answer: shared by the project's own responses (errors, refusals, rate limits)."""

from __future__ import annotations

from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails


def wants_json(request: HttpRequest) -> bool:
    """An API path or a client asking for JSON: answer ``{"detail": ...}`` rather than an HTML page."""
    return request.path.startswith("/api/") or "application/json" in request.headers.get("Accept", "")


class HtmxHttpRequest(HttpRequest):
    """A request that went through django-htmx's middleware (settings MIDDLEWARE): it has ``request.htmx``.
    Only a type for the checker; views that read ``request.htmx`` take it."""

    htmx: HtmxDetails
