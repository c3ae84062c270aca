"""Error pages: a database outage is a short 503 that asks the client to retry, never a 500 page.

Under /api/ every error is JSON with a ``detail`` message, also those Django answers itself
before any API view runs (an unknown address, a malformed request).
"""

import sys

from django.db import DatabaseError, InterfaceError, OperationalError
from django.http import HttpResponse, JsonResponse
from django.views import defaults
from django.views.defaults import server_error as django_server_error

from clues_http.negotiation import wants_json

RETRY_AFTER_SECONDS = "5"
UNAVAILABLE = "The service is briefly unavailable (database connection lost). Please retry in a few seconds."
BUSY = "The service is busy (the database is locked by other requests). Please retry in a few seconds."


def _database_down(exc: BaseException | None) -> bool:
    while exc is not None:
        if isinstance(exc, (OperationalError, InterfaceError)):
            return True
        if isinstance(exc, DatabaseError) and "connection" in str(exc).lower():
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def server_error(request, *args, **kwargs):
    """handler500: Django calls it inside the except block, so the exception is at hand."""
    exc = sys.exc_info()[1]
    if _database_down(exc):
        message = BUSY if "database is locked" in str(exc) else UNAVAILABLE  # SQLite's lock wait ran out
        response: HttpResponse
        if wants_json(request):
            response = JsonResponse({"detail": message}, status=503)
        else:
            response = HttpResponse(f"<!doctype html><title>Briefly unavailable</title><p>{message}</p>", status=503)
        response["Retry-After"] = RETRY_AFTER_SECONDS
        return response
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Internal server error."}, status=500)
    return django_server_error(request, *args, **kwargs)


def _api(request) -> bool:
    return request.path.startswith("/api/")


def bad_request(request, exception, *args, **kwargs):
    """handler400 (a malformed request Django refused, e.g. too many form fields)."""
    if _api(request):
        return JsonResponse({"detail": "Bad request: the request could not be read."}, status=400)
    return defaults.bad_request(request, exception, *args, **kwargs)


def permission_denied(request, exception, *args, **kwargs):
    """handler403."""
    if _api(request):
        return JsonResponse({"detail": "You do not have permission to do this."}, status=403)
    return defaults.permission_denied(request, exception, *args, **kwargs)


def page_not_found(request, exception, *args, **kwargs):
    """handler404."""
    if _api(request):
        return JsonResponse({"detail": "Not found: no such API endpoint or object."}, status=404)
    return defaults.page_not_found(request, exception, *args, **kwargs)
