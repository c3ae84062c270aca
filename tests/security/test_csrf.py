"""CSRF is enforced on every state-changing request a browser can send with its cookies.

Every URL pattern of the project (API, worker pages, dashboard, login and logout, the admin) is
enumerated from the resolver and sent POST, PUT, PATCH and DELETE without the CSRF token, from a
logged-in superuser's browser and from a worker's bound browser: from the browser holding the
route's credential, each answer is a CSRF 403 or a 405 (from the other, a 4xx), and nothing in
the database changes. A control shows the same browsers do change things
when they send the token. (Token-authenticated API clients send no cookies and need no CSRF token.)
"""

from __future__ import annotations

import json

import pytest
from django.contrib.sessions.models import Session
from django.test import Client

from annotation.models import Answer, AuditEvent, Cohort, Enrollment, Study
from tests.annotation.factories import WorkerClient, cohort, make_study
from tests.security.urls import concrete, routes

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clues")]

UNSAFE = ("post", "put", "patch", "delete")
# Routes whose callers authenticate by a signature, not by a browser's cookies (no CSRF token to send): a browser
# request is refused for the missing signature instead (401), and changes nothing.
SIGNED = {"prolific-hook"}


def snapshot() -> dict:
    return {
        "answers": list(Answer.objects.order_by("pk").values_list("pk", flat=True)),
        "audit": AuditEvent.objects.count(),
        "studies": list(Study.objects.order_by("pk").values_list("pk", "closed_at")),
        "cohorts": list(Cohort.objects.order_by("pk").values_list("pk", "launched_at", "closed_at")),
        "enrollments": list(Enrollment.objects.order_by("pk").values_list("pk", "state")),
    }


def csrf_refused(response) -> bool:
    body = response.content.decode(errors="replace")
    return response.status_code == 405 or (response.status_code == 403 and "CSRF" in body)


def implements(callback, method: str) -> bool:
    """False only for a class-based view known not to handle the method (e.g. GET-only API docs)."""
    view_class = getattr(callback, "cls", None) or getattr(callback, "view_class", None)
    return view_class is None or hasattr(view_class, method)


def test_every_state_changing_route_refuses_a_browser_request_without_the_csrf_token(superuser):
    study = make_study(shots=[0], created_by=superuser)
    sst0 = cohort(study, "sst2", 0)
    worker = WorkerClient(sst0, "P1")
    enrollment = Enrollment.objects.get()
    values = {
        "pk": str(study.pk),
        "study_id": str(study.pk),
        "cohort_id": str(sst0.pk),
        "enrollment_id": str(enrollment.pk),
        "token": sst0.join_token,
        "kind": "table",
        "fmt": "csv",
        "app_label": "annotation",
        "object_id": str(study.pk),
    }
    researcher = Client(enforce_csrf_checks=True)
    researcher.force_login(superuser)
    researcher.get("/dashboard/")  # the csrftoken cookie is set, as in a real browser; only the header is missing
    browsers = {"researcher": researcher, "worker": worker.client}
    before = snapshot()
    sessions = Session.objects.count()
    checked = []
    for route in routes():
        path = concrete(route.pattern, values)
        # The browser holding the credential this route takes must be refused for the missing token; the other
        # browser may be refused for that or for having no credential here, and must change nothing either.
        holder = "worker" if path.startswith(("/api/work/", "/work/")) else "researcher"
        for who, client in browsers.items():
            for method in UNSAFE:
                body = json.dumps({"reason": "csrf probe", "item": 1, "answer": ["positive"]})
                response = getattr(client, method)(path, body, content_type="application/json")
                strict = who == holder and implements(route.callback, method)
                if route.name in SIGNED:
                    refused = response.status_code in (401, 405)
                else:
                    refused = csrf_refused(response) if strict else 400 <= response.status_code < 500
                assert refused, (method.upper(), path, who, response.status_code, response.content[:300])
                checked.append((route.name, method))
    assert snapshot() == before
    assert Session.objects.count() == sessions  # logout without the token logged nobody out
    # Every route was tried (the API's, the worker pages', the dashboard's, the admin's...).
    names = {name for name, _ in checked}
    for expected in (
        "protocol:work-answer",
        "protocol:study-close",
        "protocol:enrollment-filter",
        "work-answer",
        "work-next",
        "dashboard-study-close",
        "dashboard-filter",
        "login",
        "logout",
        "admin:index",
    ):
        assert expected in names, expected

    # Control: the same browsers, with the token, do change things.
    token = researcher.cookies["csrftoken"].value
    closed = researcher.post(
        f"/api/studies/{study.pk}/close/", {"reason": "done"}, content_type="application/json", HTTP_X_CSRFTOKEN=token
    )
    assert closed.status_code == 200 and Study.objects.get().closed_at is not None
    item = worker.current().json()["item"]["id"]
    assert worker.answer(item, ["positive"]).status_code == 201


def test_token_clients_need_no_csrf_token_and_send_no_cookie(researcher):
    """The API's token authentication is not a browser credential: no CSRF token needed, none accepted in lieu."""
    from rest_framework.authtoken.models import Token

    study = make_study(shots=[0], created_by=researcher)
    token = Token.objects.create(user=researcher).key
    client = Client(enforce_csrf_checks=True)
    response = client.post(
        f"/api/studies/{study.pk}/close/",
        {"reason": "x"},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Token {token}",
    )
    assert response.status_code == 200
    assert not client.cookies.get("sessionid")
