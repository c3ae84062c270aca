"""Small HTTP helpers shared by the project's own responses (errors, refusals, rate limits)."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest


def wants_json(request: HttpRequest) -> bool:
    """An API path or a client asking for JSON: answer ``{"detail": ...}`` rather than an HTML page."""
    return request.path.startswith("/api/") or "application/json" in request.headers.get("Accept", "")


def site_link(path: str) -> str:
    """``path`` on this platform's address (settings.SITE_URL: SITE_URL, else the HOST and PORT served on), for
    links written where no request says which address the reader uses."""
    return settings.SITE_URL + path
