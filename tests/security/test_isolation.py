"""Isolation: a worker reaches only their own enrollment; a join link or worker id cannot take over someone else's;
sessions cannot be fixed; researcher endpoints need an account with the researcher role.

(tests/annotation covers the basics: another worker's items through the API, the refused stranger on
Prolific, anonymous and non-researcher API calls; this extends them to every platform, the worker pages,
session fixation and every researcher route.)
"""

from __future__ import annotations

import pytest
from django.conf import settings
from django.test import Client, override_settings

from annotation.models import Answer, Enrollment
from annotation.session import BINDING_COOKIE, binding
from tasks_data.models import Example
from tests.annotation.factories import (
    WorkerClient,
    baseline_runs,
    bound_enrollment_id,
    cohort,
    make_study,
    pid_for,
    prolific,
)
from tests.security.urls import concrete, routes

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clues")]


def session_key(client: Client) -> str | None:
    cookie = client.cookies.get(settings.SESSION_COOKIE_NAME)
    return cookie.value if cookie else None


# ---------------------------------------------------------------- replaying a join link or a worker id


@pytest.mark.parametrize(
    "platform, first, replay, back",
    [
        (
            "prolific",
            {"PROLIFIC_PID": pid_for("W1"), "SESSION_ID": "S-1"},
            {"PROLIFIC_PID": pid_for("W1"), "SESSION_ID": "S-forged"},
            {"PROLIFIC_PID": pid_for("W1"), "SESSION_ID": "S-1"},
        ),
        ("prolific", {"PROLIFIC_PID": pid_for("W1"), "SESSION_ID": "S-1"}, {"PROLIFIC_PID": pid_for("W1")}, None),
        (
            "mturk",
            {"workerId": "W1", "assignmentId": "A-1", "hitId": "H"},
            {"workerId": "W1", "assignmentId": "A-other", "hitId": "H"},
            {"workerId": "W1", "assignmentId": "A-1"},
        ),
        ("generic", {"wid": "W1"}, {"wid": "W1"}, None),
    ],
)
def test_a_worker_id_from_another_browser_cannot_take_over_the_enrollment(platform, first, replay, back):
    study = make_study(shots=[10], platform=platform, worker_id_param="wid")
    target = cohort(study, "sst2", 10)
    owner = WorkerClient(target, params=first)
    assert owner.join_response.status_code == 302
    item = owner.current().json()["item"]["id"]
    assert owner.answer(item, ["positive"]).status_code == 201
    # A fresh browser replaying the link with the same worker id, without the platform's session of that worker.
    thief = WorkerClient(target, params=replay)
    assert thief.join_response.status_code == 403
    assert "cannot take part" in thief.join_response.content.decode()
    assert bound_enrollment_id(thief.client) is None
    assert thief.current().status_code == 403
    # The owner is untouched; the platform's own session (Prolific SESSION_ID, MTurk assignment) is the way back.
    assert Enrollment.objects.count() == 1 and Answer.objects.count() == 1
    assert owner.current().json()["progress"]["done"] == 1
    if back is not None:
        returning = WorkerClient(target, params=back)
        assert returning.join_response.status_code == 302
        assert returning.current().json()["progress"]["done"] == 1


def test_a_worker_cannot_act_on_another_enrollment_through_the_worker_pages():
    sst10 = cohort(make_study(shots=[10], workers_per_cohort=5), "sst2", 10)
    alice, bob = WorkerClient(sst10, "ALICE"), WorkerClient(sst10, "BOB")
    for worker in (alice, bob):
        worker.client.defaults["HTTP_X_CSRFTOKEN"] = worker.csrf
    alice_item = alice.current().json()["item"]["id"]
    assert alice.answer(alice_item, ["positive"]).status_code == 201
    alice_answer = Answer.objects.get()
    # Bob's page, fed Alice's ids, acts on Bob's enrollment only.
    bob.client.post("/work/start/")
    second = alice.current().json()["item"]["id"]
    response = bob.client.post("/work/answer/", {"item": second, "label": "negative"})
    assert response.status_code == 409
    bob.client.post("/work/next/", {"item": alice.handle(alice_answer.example_id)})
    bob.client.post("/work/next/", {"item": alice_item})
    assert bob.client.session.get("work_feedback_seen") is None
    assert list(Answer.objects.values_list("enrollment__worker__external_id", flat=True)) == [pid_for("ALICE")]
    # A session key made up by the client is no session at all.
    forged = Client()
    forged.cookies[settings.SESSION_COOKIE_NAME] = "x" * 32
    assert forged.get("/api/work/current/").status_code == 403
    assert forged.get("/work/").status_code == 403
    # Nor is a binding the client wrote or altered: Alice's own, with Bob's id put in, unsigned, or signed by
    # another key; an empty one.
    alice_binding = alice.client.cookies[BINDING_COOKIE].value
    bob_id = str(bound_enrollment_id(bob.client))
    for value in (
        alice_binding.replace(str(bound_enrollment_id(alice.client)), bob_id, 1),
        bob_id,
        binding(int(bob_id)) + "x",
        "",
    ):
        forged.cookies[BINDING_COOKIE] = value
        assert forged.get("/api/work/current/").status_code == 403, value
        assert forged.get("/work/").status_code == 403, value
    with override_settings(SECRET_KEY="another-site-" + "k" * 40):
        other_key = binding(int(bob_id))
    forged.cookies[BINDING_COOKIE] = other_key
    assert forged.get("/api/work/current/").status_code == 403


# ---------------------------------------------------------------- session fixation


def test_joining_never_keeps_a_session_id_chosen_beforehand():
    study = make_study(tasks=["sst2", "mnli"], shots=[0], workers_per_cohort=5)
    sst0, mnli0 = cohort(study, "sst2", 0), cohort(study, "mnli", 0)
    # An id planted in the browser that the server never issued: the join issues a new one.
    planted = Client()
    planted.cookies[settings.SESSION_COOKIE_NAME] = "plantedsessionid0123456789abcdef"
    assert planted.get(sst0.join_path, prolific("VICTIM1")).status_code == 302
    assert session_key(planted) not in (None, "plantedsessionid0123456789abcdef")
    # A real session of the attacker's and their binding, planted in the victim's browser: joining cycles the
    # session, binds the victim's own enrollment, and the attacker's copies reach nothing of the victim's.
    attacker = WorkerClient(sst0, "ATTACKER")
    old_key = session_key(attacker.client)
    victim = Client()
    victim.cookies[settings.SESSION_COOKIE_NAME] = old_key
    victim.cookies[BINDING_COOKIE] = attacker.client.cookies[BINDING_COOKIE].value
    # (A browser bound on a task cannot join that task under another id, so the victim joins another task.)
    assert victim.get(mnli0.join_path, prolific("VICTIM2")).status_code == 302
    assert session_key(victim) != old_key
    victim_enrollment = Enrollment.objects.get(worker__external_id=pid_for("VICTIM2"))
    assert bound_enrollment_id(victim) == victim_enrollment.pk
    assert bound_enrollment_id(attacker.client) != victim_enrollment.pk
    state = attacker.current()
    assert state.status_code == 403 or state.json()["progress"]["done"] == 0


# ---------------------------------------------------------------- researcher endpoints


def researcher_routes(values) -> list[tuple[str, str]]:
    """(name, path) of every researcher-only route: the API (not the worker's, the schema, the docs), the dashboard."""
    found = []
    for route in routes():
        path = concrete(route.pattern, values)
        if path.startswith("/dashboard/") or (
            path.startswith("/api/") and not path.startswith(("/api/work/", "/api/schema/", "/api/docs/"))
        ):
            found.append((route.name, path))
    return found


def test_every_researcher_route_needs_an_account_with_the_researcher_role(
    researcher, other_researcher_user, plain_user
):
    study = make_study(shots=[0], created_by=researcher)
    sst0 = cohort(study, "sst2", 0)
    worker = WorkerClient(sst0, "P1")
    enrollment = Enrollment.objects.get()
    (run, *_) = baseline_runs("sst2", 0, "empty", "", [0.5])  # every researcher may read the reference runs
    item = Example.objects.filter(task__slug="sst2", role=Example.Role.TEST).order_by("position").first()
    values = {
        "pk": str(study.pk),
        "study_id": str(study.pk),
        "cohort_id": str(sst0.pk),
        "enrollment_id": str(enrollment.pk),
        "kind": "table",
        "fmt": "csv",
        "run_id": str(run.pk),
        "clues_id": str(item.clues_id),
    }
    paths = researcher_routes(values)
    assert len(paths) >= 25
    plain = Client()
    plain.force_login(plain_user)
    other = Client()
    other.force_login(other_researcher_user)
    owner = Client()
    owner.force_login(researcher)
    owned = (f"/studies/{study.pk}/", f"/cohorts/{sst0.pk}/", f"/enrollments/{enrollment.pk}/")
    for name, path in paths:
        api = path.startswith("/api/")
        served = owner.get(path)  # GET routes are served to their owner; the others take only POST
        assert served.status_code in (200, 405, 409), (name, path, served.status_code)  # 409: nothing to export yet
        method = "post" if served.status_code == 405 else "get"

        def send(client, method=method, path=path):
            return client.post(path, {"reason": "probe"}) if method == "post" else client.get(path)

        anonymous = send(Client())
        assert anonymous.status_code == (401 if api else 302), (name, path, anonymous.status_code)
        if not api:
            assert anonymous["Location"].startswith("/accounts/login/")
        # A worker's bound browser is anonymous to these routes (its POSTs, which carry no CSRF token here, may
        # be refused for that first).
        as_worker = send(worker.client)
        refused = {401 if api else 302} | ({403} if method == "post" else set())
        assert as_worker.status_code in refused, (name, path, as_worker.status_code)
        # An account without the researcher role: 403.
        assert send(plain).status_code == 403, (name, path)
        # Another researcher: the study, its cohorts and enrollments do not exist for them.
        if any(part in path for part in owned):
            assert send(other).status_code == 404, (name, path)
    assert Enrollment.objects.get().state == Enrollment.State.TESTING  # no POST went through


def test_the_admin_needs_a_superuser(plain_user, researcher):  # every model: tests/security/test_admin.py
    for user in (None, plain_user, researcher):
        client = Client()
        if user:
            client.force_login(user)
        response = client.get("/admin/annotation/answer/")
        assert response.status_code == 302 and response["Location"].startswith("/admin/login/")


@pytest.fixture
def other_researcher_user(db):
    from django.contrib.auth.models import Group, User

    user = User.objects.create_user("olga", password="pw-olga-123")
    user.groups.add(Group.objects.get_or_create(name="researchers")[0])
    return user
