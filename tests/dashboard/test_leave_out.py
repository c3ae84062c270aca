"""The at-or-below-chance flag has an action at every moment: Filter while filtering is open, then "Leave out of
results" (audited, with a reason; the worker keeps their place and pay) once the test step has started.

Through the real HTTP surface: the cohort page, the dashboard's POST routes, the researcher API and the results
API that every export reads; a second researcher is refused everywhere.
"""

from __future__ import annotations

import pytest
from django.test import Client

from annotation.models import AuditEvent, Enrollment
from tests.annotation.factories import cohort as cohort_of
from tests.annotation.factories import complete, join, make_study


@pytest.fixture
def cohort_with_a_guesser(demo_data, researcher):
    """Three workers completed a 10-shot SST-2 cohort: two answer gold, one gets every training item wrong
    (training S1 0, at or below chance) and half the test. Filtering is off so the guesser reaches the test."""
    study = make_study(tasks=("sst2",), shots=(10,), created_by=researcher, workers_per_cohort=4, filter_fraction=None)
    cohort = cohort_of(study, "sst2", 10)
    good = [complete(cohort, f"good-{i}") for i in range(2)]
    guesser = complete(cohort, "guesser", wrong_training=set(range(1000)), wrong_test=set(range(0, 1000, 2)))
    return study, cohort, good, guesser


def _table_n(client: Client, study) -> int:
    response = client.get(f"/api/studies/{study.pk}/results/")
    assert response.status_code == 200, response.content
    (cell,) = [c for c in response.json()["cells"] if c["task"] == "sst2" and c["shots"] == 10]
    return cell["n"], cell["mean"]


def _row(html: str, enrollment: Enrollment) -> str:
    start = html.index(f'id="enrollment-{enrollment.pk}"')
    return html[start : html.index("</tr>", start)]


def test_a_flagged_worker_past_filtering_can_be_left_out_of_every_result_and_counted_again(
    client, researcher, cohort_with_a_guesser
):
    study, cohort, good, guesser = cohort_with_a_guesser
    client.force_login(researcher)
    assert guesser.state == "completed" and guesser.training_s1 == 0
    page = client.get(f"/dashboard/cohorts/{cohort.pk}/").content.decode()
    row = _row(page, guesser)
    assert "≤ chance" in row and "Leave out of results" in row and "Filter</button>" not in row
    assert "once their test step has started, filtering is closed" in page.replace("<strong>", "").replace(
        "</strong>", ""
    ).replace("Once", "once")
    n_before, mean_before = _table_n(client, study)
    assert n_before == 3

    url = f"/dashboard/enrollments/{guesser.pk}/leave-out/"
    response = client.post(url, {"reason": " "})
    assert response.status_code == 400 and "give a reason" in response.content.decode()
    assert not Enrollment.objects.get(pk=guesser.pk).left_out
    response = client.post(url, {"reason": "guessed through training"})
    assert response.status_code == 302
    guesser.refresh_from_db()
    assert guesser.left_out and guesser.state == "completed"  # keeps the place and the completion (pay)
    event = AuditEvent.objects.get(enrollment=guesser, action="leave out of results")
    assert event.reason == "guessed through training" and event.actor == researcher.username
    n_after, mean_after = _table_n(client, study)
    assert n_after == 2 and mean_after > mean_before  # the results read it at once (no stale cache)
    annotators = client.get(f"/api/studies/{study.pk}/results/").json()["annotators"]
    assert guesser.pk not in {a["enrollment_id"] for a in annotators}
    assert client.get(f"/api/enrollments/{guesser.pk}/").json()["left_out"] is True
    row = _row(client.get(f"/dashboard/cohorts/{cohort.pk}/").content.decode(), guesser)
    assert "left out of results" in row and "Count in results again" in row

    assert client.post(url, {"reason": "twice"}).status_code == 409  # already left out: says so
    response = client.post(
        f"/api/enrollments/{guesser.pk}/put-back/",
        {"reason": "read the answers again"},
        content_type="application/json",
    )
    assert response.status_code == 200 and response.json()["left_out"] is False
    assert _table_n(client, study)[0] == 3
    assert AuditEvent.objects.filter(enrollment=guesser, action="put back in results").count() == 1


def test_leave_out_is_refused_while_filtering_is_open_and_to_another_researcher(
    client, researcher, other_researcher, cohort_with_a_guesser
):
    study, cohort, _, guesser = cohort_with_a_guesser
    training = join(cohort, "still-training")
    client.force_login(researcher)
    response = client.post(
        f"/api/enrollments/{training.pk}/leave-out/", {"reason": "early"}, content_type="application/json"
    )
    assert response.status_code == 409 and "filter them instead" in response.json()["detail"]
    assert not Enrollment.objects.get(pk=training.pk).left_out

    client.force_login(other_researcher)
    for url in (f"/dashboard/enrollments/{guesser.pk}/leave-out/", f"/dashboard/enrollments/{guesser.pk}/put-back/"):
        assert client.post(url, {"reason": "not mine"}).status_code == 404
    for url in (f"/api/enrollments/{guesser.pk}/leave-out/", f"/api/enrollments/{guesser.pk}/put-back/"):
        assert client.post(url, {"reason": "not mine"}, content_type="application/json").status_code == 404
    assert not Enrollment.objects.get(pk=guesser.pk).left_out
    assert not AuditEvent.objects.filter(enrollment=guesser, action="leave out of results").exists()
