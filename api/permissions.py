"""Who may call which API endpoint.

Researchers: an authenticated user (session or token) in the ``researchers`` group, or a
superuser (``annotation.selectors.is_researcher``); anonymous requests get 401, other
users 403. Which studies a researcher sees is ``annotation.selectors.studies_visible_to``.

Workers have no account: the browser's binding to one enrollment, a signed cookie the join link
sets (``annotation.session``), is their only credential. ``WorkerSessionAuthentication`` reads
that binding and enforces CSRF for it, as DRF's SessionAuthentication does only for
logged-in users; a worker can therefore reach nothing but their own enrollment, and no
enrollment id is ever taken from the request.
"""

from __future__ import annotations

from dataclasses import dataclass

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, permissions

from annotation import session
from annotation.selectors import is_researcher


class IsResearcher(permissions.BasePermission):
    message = "this needs a researcher account (a superuser or a member of the 'researchers' group)"

    def has_permission(self, request, view) -> bool:
        return is_researcher(request.user)


@dataclass(frozen=True)
class BoundEnrollment:
    """``request.auth`` of a worker request: the enrollment the browser session is bound to."""

    enrollment_id: int


class WorkerSessionAuthentication(authentication.SessionAuthentication):
    """Authenticates the enrollment the browser is bound to (no session read); CSRF is always enforced.

    ``request.user`` stays whatever Django's session says (usually anonymous);
    ``request.auth`` is a ``BoundEnrollment``.
    """

    def authenticate(self, request):
        enrollment_id = session.bound_enrollment_id(request._request)
        if enrollment_id is None:
            return None
        self.enforce_csrf(request)
        return request._request.user, BoundEnrollment(enrollment_id)


class IsBoundWorker(permissions.BasePermission):
    message = "no enrollment in this browser session: open your study link (/join/...) first"

    def has_permission(self, request, view) -> bool:
        return isinstance(request.auth, BoundEnrollment)


class WorkerSessionScheme(OpenApiAuthenticationExtension):
    """Documents the worker's credential in the OpenAPI schema."""

    target_class = WorkerSessionAuthentication
    name = "workerSession"

    def get_security_definition(self, auto_schema):
        return {
            "type": "apiKey",
            "in": "cookie",
            "name": session.BINDING_COOKIE,
            "description": "The binding cookie the join link /join/<token>/ sets (signed by the site); unsafe "
            "methods also need the X-CSRFToken header (value of the csrftoken cookie).",
        }
