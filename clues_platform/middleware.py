"""Project middleware: refuse what no view should have to handle, before anything reads it."""

from __future__ import annotations

import time
import weakref
from urllib.parse import unquote_to_bytes

from django.conf import settings
from django.db import connections
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import Resolver404, resolve
from django.utils.cache import add_never_cache_headers
from django.utils.html import escape

from clues_http.negotiation import wants_json
from clues_http.uploads import accepts_upload


def refusal(request: HttpRequest, status: int, title: str, message: str) -> HttpResponse:
    """A short refusal: JSON (``detail``) for the API and JSON clients, a small HTML page otherwise."""
    if wants_json(request):
        return JsonResponse({"detail": message}, status=status)
    return HttpResponse(
        f"<!doctype html><title>{escape(title)}</title><h1>{escape(title)}</h1><p>{escape(message)}</p>", status=status
    )


class RequestLimitsMiddleware:
    """413 for a body over DATA_UPLOAD_MAX_MEMORY_SIZE; 400 for a NUL character in the path or query string.

    Django enforces the size limit only where it parses a body itself (``request.body``, forms); DRF's
    JSON parser reads the stream and would parse a body of any size. This answers before the body is
    read, whatever the view. A NUL character is never part of a legitimate URL, and PostgreSQL cannot
    store one in a text column: refused here, it cannot reach a query. Nothing is stored either way.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if limit is not None and length > limit and _takes_upload(request):
            limit = settings.UPLOAD_MAX_SIZE  # a view that takes a file
        if limit is not None and length > limit:
            return refusal(
                request,
                413,
                "Request too large",
                f"the request body is {length} bytes; the most this site accepts is {limit} bytes",
            )
        if "\x00" in request.path or b"\x00" in unquote_to_bytes(request.META.get("QUERY_STRING", "")):
            return refusal(request, 400, "Bad request", "the address contains a NUL character")
        return self.get_response(request)


def _takes_upload(request: HttpRequest) -> bool:
    try:
        return accepts_upload(resolve(request.path_info).func)
    except Resolver404:
        return False


class NoStoreMiddleware:
    """``Cache-Control: no-store`` (Django's never-cache headers) on every page and API response.

    The worker's pages and API answers carry their enrollment's items and progress, the dashboard
    and the researcher API a study's workers and results: no browser or proxy cache keeps them (a
    shared lab computer, a back button after logging out). A view that sets Cache-Control itself
    keeps it; static files are served by WhiteNoise before this middleware, with their own caching.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest):
        response = self.get_response(request)
        if not response.has_header("Cache-Control"):
            add_never_cache_headers(response)
        return response


# When each kept database connection last served a request (monotonic seconds).
_LAST_USED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class RecentConnectionMiddleware:
    """Skips the database health check (CONN_HEALTH_CHECKS: a SELECT 1 round trip before a request's first query)
    on a connection the previous request used less than CONN_HEALTH_CHECK_IDLE seconds ago.

    The check is for a connection that died while idle (a database restart no request saw, an idle timeout). A
    connection in steady use finds a restart itself: the request that meets it gets a 503 (retried, nothing
    stored: benchmarks/README.md "Faults"), and Django closes the connection after it. Goes first in MIDDLEWARE:
    Django resets the check when the request starts (``request_started``), before any middleware runs.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest):
        now = time.monotonic()
        for conn in connections.all(initialized_only=True):
            used = _LAST_USED.get(conn)
            if used is not None and now - used < settings.CONN_HEALTH_CHECK_IDLE and conn.connection is not None:
                conn.health_check_done = True  # type: ignore[attr-defined]  # Django 4.1+, not in the stubs
        try:
            return self.get_response(request)
        finally:
            done = time.monotonic()
            for conn in connections.all(initialized_only=True):
                if conn.connection is not None and not conn.errors_occurred:
                    _LAST_USED[conn] = done
                else:  # a connection that failed is checked before its next request
                    _LAST_USED.pop(conn, None)
