"""Error pages: a database outage is a short 503 that asks the client to retry, never a 500 page."""

import sys

from django.db import DatabaseError, InterfaceError, OperationalError
from django.http import HttpResponse, JsonResponse
from django.views.defaults import server_error as django_server_error

RETRY_AFTER_SECONDS = "5"
UNAVAILABLE = "The service is briefly unavailable (database connection lost). Please retry in a few seconds."


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
    if _database_down(sys.exc_info()[1]):
        if request.path.startswith("/api/") or "application/json" in request.headers.get("Accept", ""):
            response = JsonResponse({"detail": UNAVAILABLE}, status=503)
        else:
            response = HttpResponse(f"<!doctype html><title>Briefly unavailable</title><p>{UNAVAILABLE}</p>",
                                    status=503)
        response["Retry-After"] = RETRY_AFTER_SECONDS
        return response
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Internal server error."}, status=500)
    return django_server_error(request, *args, **kwargs)
