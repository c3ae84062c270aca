"""The researcher API: every permission boundary, and studies, cohorts, enrollments and the audit log."""

import pytest
from django.test import Client
from rest_framework.authtoken.models import Token

from annotation import services
from annotation.models import AuditEvent, Cohort, Enrollment, Study
from tests.annotation.factories import answer_all, cohort, gold_answer, join, make_study, name_of, trim_test_set

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clues")]

CREATE = {"name": "new", "tasks": ["sst2"], "shots": [0]}


def endpoints(study, enrollment):
    c = cohort(study, "sst2", 0)
    s, e = study.pk, enrollment.pk
    return [
        ("get", f"/api/studies/{s}/", None),
        ("post", f"/api/studies/{s}/launch/", {}),
        ("post", f"/api/studies/{s}/close/", {"reason": "done"}),
        ("get", f"/api/studies/{s}/enrollments/", None),
        ("get", f"/api/studies/{s}/results/", None),
        ("get", f"/api/studies/{s}/export/table/?fmt=json", None),
        ("get", f"/api/studies/{s}/export/annotators/?fmt=csv", None),
        ("get", f"/api/studies/{s}/export/predictions/", None),
        ("get", f"/api/studies/{s}/audit/", None),
        ("post", f"/api/cohorts/{c.pk}/launch/", {}),
        ("post", f"/api/cohorts/{c.pk}/close/", {"reason": "enough"}),
        ("post", f"/api/cohorts/{c.pk}/reopen/", {"reason": "more"}),
        ("get", f"/api/enrollments/{e}/", None),
        ("post", f"/api/enrollments/{e}/filter/", {"reason": "bad"}),
        ("post", f"/api/enrollments/{e}/reinstate/", {"reason": "ok"}),
        ("get", f"/api/enrollments/{e}/predictions/", None),
    ]


def call(client, method, url, body):
    if method == "get":
        return client.get(url)
    return client.post(url, body, content_type="application/json")


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def owned(researcher):
    study = make_study(shots=[0], created_by=researcher)
    return study, join(cohort(study, "sst2", 0), "P1")


def snapshot():
    return (
        list(Study.objects.values_list("pk", "closed_at")),
        list(Cohort.objects.values_list("pk", "closed_at")),
        list(Enrollment.objects.values_list("pk", "state")),
    )


def test_anonymous_requests_get_401_with_a_message(owned):
    before = snapshot()
    for method, url, body in [("get", "/api/studies/", None), ("post", "/api/studies/", CREATE), *endpoints(*owned)]:
        response = call(Client(), method, url, body)
        assert response.status_code == 401, url
        assert response.json()["detail"] and response["WWW-Authenticate"].startswith("Token")
    assert snapshot() == before


def test_a_logged_in_non_researcher_gets_403(owned, plain_user):
    before = snapshot()
    client = logged_in(plain_user)
    for method, url, body in [("get", "/api/studies/", None), ("post", "/api/studies/", CREATE), *endpoints(*owned)]:
        response = call(client, method, url, body)
        assert response.status_code == 403, url
        assert "researcher" in response.json()["detail"]
    assert snapshot() == before


def test_a_researcher_of_another_study_gets_404_and_does_not_see_it_listed(owned, other_researcher):
    before = snapshot()
    client = logged_in(other_researcher)
    assert client.get("/api/studies/").json() == []
    for method, url, body in endpoints(*owned):
        response = call(client, method, url, body)
        assert response.status_code == 404, url
        assert response.json()["detail"]
    assert snapshot() == before


def test_the_owning_researcher_reaches_every_endpoint(owned, researcher):
    client = logged_in(researcher)
    assert [s["id"] for s in client.get("/api/studies/").json()] == [owned[0].pk]
    for method, url, body in endpoints(*owned):
        response = call(client, method, url, body)
        # 409 where the protocol's state forbids the action (reinstating a worker who is not filtered...).
        assert response.status_code in (200, 201, 409), (url, response.status_code)
        if response.status_code == 409:
            assert response.json()["detail"]


def test_a_superuser_sees_every_study(owned, superuser):
    client = logged_in(superuser)
    assert owned[0].pk in [s["id"] for s in client.get("/api/studies/").json()]
    assert client.get(f"/api/studies/{owned[0].pk}/").status_code == 200


def test_token_authentication(owned, researcher, plain_user):
    token = Token.objects.create(user=researcher).key
    response = Client().get("/api/studies/", HTTP_AUTHORIZATION=f"Token {token}")
    assert response.status_code == 200 and len(response.json()) == 1
    other = Token.objects.create(user=plain_user).key
    assert Client().get("/api/studies/", HTTP_AUTHORIZATION=f"Token {other}").status_code == 403
    assert Client().get("/api/studies/", HTTP_AUTHORIZATION="Token nope").status_code == 401


def test_session_researchers_need_the_csrf_token(researcher):
    client = Client(enforce_csrf_checks=True)
    client.force_login(researcher)
    response = client.post("/api/studies/", CREATE, content_type="application/json")
    assert response.status_code == 403 and "CSRF" in response.json()["detail"]
    assert not Study.objects.exists()


def test_create_a_study_validates_through_the_service(researcher):
    client = logged_in(researcher)
    response = client.post(
        "/api/studies/", {"name": "bad", "tasks": ["sst2", "nope"], "shots": [0, 5]}, content_type="application/json"
    )
    assert response.status_code == 400
    body = response.json()
    assert "unknown task: nope; known tasks: sst2, mnli, conll03, wikiann, squad2, record" in body["tasks"][0]
    assert "shots must be among" in body["shots"][0]
    assert "tasks:" in body["detail"] and "shots:" in body["detail"]
    response = client.post(
        "/api/studies/", {"name": "typed", "tasks": "sst2", "workers_per_cohort": "x"}, content_type="application/json"
    )
    assert response.status_code == 400 and "workers_per_cohort" in response.json()
    assert not Study.objects.exists()


def test_create_launch_and_close(researcher):
    client = logged_in(researcher)
    response = client.post(
        "/api/studies/",
        {"name": "pilot", "tasks": ["sst2", "conll03"], "shots": [0, 10], "pay_rate": "15.00", "filter_floor": 0.3},
        content_type="application/json",
    )
    assert response.status_code == 201
    study = response.json()
    assert study["created_by"] == "rita" and study["pay_rate"] == "15.00"
    assert [(c["task"], c["shots"]) for c in study["cohorts"]] == [
        ("sst2", 0),
        ("sst2", 10),
        ("conll03", 0),
        ("conll03", 10),
    ]
    assert all(c["join_path"].startswith("/join/") and not c["accepting"] for c in study["cohorts"])
    first = study["cohorts"][0]["id"]
    assert client.post(
        f"/api/studies/{study['id']}/launch/", {"cohorts": [first]}, content_type="application/json"
    ).json() == {"launched": 1}
    assert (
        client.post(
            f"/api/studies/{study['id']}/launch/", {"cohorts": [999999]}, content_type="application/json"
        ).status_code
        == 400
    )
    for ids in ([2**63], [-1], [10**30], list(range(1, 1002))):  # beyond a 64-bit key, or too many: 400, not 500
        response = client.post(f"/api/studies/{study['id']}/launch/", {"cohorts": ids}, content_type="application/json")
        assert response.status_code == 400 and "cohorts" in response.json()
    assert client.post(f"/api/studies/{study['id']}/launch/", {}, content_type="application/json").json() == {
        "launched": 3
    }
    detail = client.get(f"/api/studies/{study['id']}/").json()
    assert all(c["accepting"] for c in detail["cohorts"])
    assert client.post(
        f"/api/cohorts/{first}/close/", {"reason": "enough"}, content_type="application/json"
    ).json() == {"closed": True}
    assert not client.get(f"/api/studies/{study['id']}/").json()["cohorts"][0]["accepting"]
    reopen = f"/api/cohorts/{first}/reopen/"
    no_reason = client.post(reopen, {}, content_type="application/json")
    assert no_reason.status_code == 400 and "reason" in no_reason.json()["detail"]
    assert client.post(reopen, {"reason": "one more"}, content_type="application/json").json() == {"closed": False}
    assert client.get(f"/api/studies/{study['id']}/").json()["cohorts"][0]["accepting"]
    assert client.post(reopen, {"reason": "again"}, content_type="application/json").status_code == 409  # not closed
    closed = client.post(f"/api/studies/{study['id']}/close/", {"reason": "over"}, content_type="application/json")
    assert closed.json()["is_open"] is False
    assert client.post(f"/api/studies/{study['id']}/launch/", {}, content_type="application/json").status_code == 409


def test_enrollments_with_progress_and_the_audit_log(researcher):
    n = trim_test_set("sst2", 4)
    study = make_study(shots=[0, 10], created_by=researcher)
    done = join(cohort(study, "sst2", 0), "DONE")
    answer_all(done.pk, gold_answer)
    training = join(cohort(study, "sst2", 10), "TRAIN")
    item = services.current_item(enrollment_id=training.pk).item
    handle = services.item_handle(enrollment_id=training.pk, item_id=item.pk)
    services.submit_answer(enrollment_id=training.pk, item=handle, answer=gold_answer(item))
    client = logged_in(researcher)
    rows = {name_of(r["worker"]): r for r in client.get(f"/api/studies/{study.pk}/enrollments/").json()}
    assert rows["DONE"]["state"] == "completed" and rows["DONE"]["test_done"] == rows["DONE"]["test_total"] == n
    assert rows["DONE"]["test_s1"] == 1.0
    assert rows["TRAIN"]["state"] == "training" and rows["TRAIN"]["learning_curve"] == [1.0]
    assert rows["TRAIN"]["training_s1"] is None and rows["TRAIN"]["test_s1"] is None
    for row in rows.values():
        assert row["active_seconds"] >= 0 and row["pay"] == "0.00"  # answered within the same second
    only = client.get(f"/api/studies/{study.pk}/enrollments/?state=training").json()
    assert [name_of(r["worker"]) for r in only] == ["TRAIN"]
    c10 = cohort(study, "sst2", 10).pk
    in_c10 = client.get(f"/api/studies/{study.pk}/enrollments/?cohort={c10}").json()
    assert [name_of(r["worker"]) for r in in_c10] == ["TRAIN"]
    assert client.get(f"/api/studies/{study.pk}/enrollments/?state=nope").status_code == 400
    client.post(f"/api/enrollments/{training.pk}/filter/", {"reason": "asked to stop"}, content_type="application/json")
    log = client.get(f"/api/studies/{study.pk}/audit/").json()
    actions = [(e["actor"], e["action"]) for e in log]
    assert actions[0] == ("system", "create study") or actions[0][1] == "create study"
    assert ("worker", "join") in actions and ("worker", "complete test step") in actions
    filtered = next(e for e in log if e["action"] == "filter by researcher")
    assert (filtered["actor"], name_of(filtered["worker"]), filtered["reason"]) == ("rita", "TRAIN", "asked to stop")
    assert (filtered["from_state"], filtered["to_state"]) == ("training", "filtered")
    assert [e["action"] for e in client.get(f"/api/studies/{study.pk}/audit/?q=asked").json()] == [
        "filter by researcher"
    ]
    assert AuditEvent.objects.filter(study=study).count() == len(log)


def test_the_schema_and_docs_are_served():
    assert Client().get("/api/schema/").status_code == 200
    assert Client().get("/api/docs/").status_code == 200
