"""The researcher dashboard through Django's test client: who may see it, the form, actions, results."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User
from django.test import Client

from annotation.models import AuditEvent, Cohort, Enrollment, Study
from baselines.models import BaselineRun
from dashboard.presentation import sparkline
from results.presentation import chart
from tests.worker_pages.factories import answer_current, cohort_of, enroll, fake_model_rows, make_study


def _urls(study, cohort, enrollment):
    return {
        "get": [
            "/dashboard/",
            "/dashboard/studies/new/",
            f"/dashboard/studies/{study.pk}/",
            f"/dashboard/studies/{study.pk}/grid/",
            f"/dashboard/studies/{study.pk}/results/",
            f"/dashboard/studies/{study.pk}/results/download.csv",
            f"/dashboard/cohorts/{cohort.pk}/",
        ],
        "post": [
            f"/dashboard/studies/{study.pk}/launch/",
            f"/dashboard/studies/{study.pk}/close/",
            f"/dashboard/cohorts/{cohort.pk}/close/",
            f"/dashboard/enrollments/{enrollment.pk}/filter/",
        ],
    }


@pytest.fixture
def setup(demo_data, researcher):
    study = make_study(tasks=("sst2",), shots=(0, 10), created_by=researcher, workers_per_cohort=2)
    cohort = cohort_of(study, "sst2", 10)
    enrollment = enroll(cohort, "W-1")
    return study, cohort, enrollment


def test_anonymous_visitors_are_sent_to_the_login_page(client, setup):
    urls = _urls(*setup)
    for url in urls["get"]:
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/?next="), url
    for url in urls["post"]:
        response = client.post(url, {"reason": "x"})
        assert response.status_code == 302 and "/accounts/login/" in response["Location"], url
    study, _, enrollment = setup
    assert Study.objects.get(pk=study.pk).is_open and Enrollment.objects.get(pk=enrollment.pk).state == "training"
    # An htmx poll whose session ended sends the whole page to the login.
    response = client.get(f"/dashboard/studies/{study.pk}/grid/", HTTP_HX_REQUEST="true")
    assert response.status_code == 204 and response["HX-Redirect"].startswith("/accounts/login/")


def test_logged_in_non_researchers_get_403(client, setup, plain_user):
    client.force_login(plain_user)
    urls = _urls(*setup)
    for url in urls["get"]:
        response = client.get(url)
        assert response.status_code == 403 and "Researchers only" in response.content.decode(), url
    for url in urls["post"]:
        assert client.post(url, {"reason": "x"}).status_code == 403, url
    assert Enrollment.objects.get(pk=setup[2].pk).state == "training"


def test_researchers_see_their_studies_and_not_others(researcher_client, setup):
    urls = _urls(*setup)
    for url in urls["get"]:
        assert researcher_client.get(url).status_code == 200, url
    other = User.objects.create_user("bob", password="x")
    other.groups.add(*User.objects.get(username="rita").groups.all())
    theirs = make_study(tasks=("sst2",), shots=(0,), created_by=other, name="Bob's")
    assert researcher_client.get(f"/dashboard/studies/{theirs.pk}/").status_code == 404
    assert "Bob&#x27;s" not in researcher_client.get("/dashboard/").content.decode()
    boss = User.objects.create_superuser("boss", password="x")
    admin = Client()
    admin.force_login(boss)
    assert admin.get(f"/dashboard/studies/{theirs.pk}/").status_code == 200


def test_the_login_page_logs_a_researcher_in(client, researcher, db):
    response = client.get("/accounts/login/?next=/dashboard/")
    assert response.status_code == 200 and 'name="username"' in response.content.decode()
    response = client.post("/accounts/login/", {"username": "rita", "password": "pw-rita-123", "next": "/dashboard/"})
    assert response.status_code == 302 and response["Location"] == "/dashboard/"
    response = client.post("/accounts/login/", {"username": "rita", "password": "wrong"})
    assert "did not match" in response.content.decode()


# ---------------------------------------------------------------- the study form


def _form(**overrides):
    data = {
        "name": "Study A",
        "tasks": ["sst2"],
        "shots": ["0", "10"],
        "chain": "1",
        "workers_per_cohort": "3",
        "pay_rate": "12",
        "filter_floor": "",
        "filter_fraction": "0.5",
        "platform": "prolific",
        "worker_id_param": "worker_id",
        "completion_code": "",
        "screenout_code": "",
        "test_order": "file",
        "idle_cap_seconds": "300",
        "time_limit_minutes": "",
        "expected_minutes": "30",
    }
    data.update(overrides)
    return data


def _field_errors(html: str, field: str) -> str:
    start = html.index(f'id="field-{field}"')
    return html[
        start : html.index('<div class="field', start + 10) if '<div class="field' in html[start + 10 :] else len(html)
    ]


def test_the_study_form_shows_errors_at_their_fields(researcher_client, demo_data):
    response = researcher_client.post("/dashboard/studies/new/", _form(name="", tasks=[], shots=[], chain="x"))
    html = response.content.decode()
    assert response.status_code == 400
    assert "This field is required" in _field_errors(html, "name")
    assert "choose at least one task" in _field_errors(html, "tasks")
    assert "choose at least one shot condition" in _field_errors(html, "shots")
    assert "Enter a whole number" in _field_errors(html, "chain")
    # The services' own rules (ValidationError keys) land at the matching fields.
    response = researcher_client.post(
        "/dashboard/studies/new/", _form(chain="4", completion_code="SAME", screenout_code="SAME")
    )
    html = response.content.decode()
    assert response.status_code == 400
    assert "has no chain 4" in _field_errors(html, "chain")
    assert "must differ from the completion code" in _field_errors(html, "screenout_code")
    response = researcher_client.post("/dashboard/studies/new/", _form(filter_fraction="1.5", pay_rate="-1"))
    html = response.content.decode()
    assert "less than or equal to 1" in _field_errors(html, "filter_fraction")
    assert "greater than or equal to 0" in _field_errors(html, "pay_rate")
    assert not Study.objects.exists()


def test_the_study_form_creates_and_launches(researcher_client, researcher, demo_data):
    response = researcher_client.post(
        "/dashboard/studies/new/", _form(name="<Pilot> & co", launch="on", tasks=["sst2", "record"])
    )
    study = Study.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/dashboard/studies/{study.pk}/"
    assert study.created_by == researcher and study.tasks == ["sst2", "record"] and study.shots == [0, 10]
    assert Cohort.objects.filter(study=study, launched_at__isnull=False).count() == 4
    html = researcher_client.get(response["Location"]).content.decode()
    assert "&lt;Pilot&gt; &amp; co" in html and "<Pilot>" not in html
    assert "?PROLIFIC_PID={{%PROLIFIC_PID%}}&amp;STUDY_ID={{%STUDY_ID%}}&amp;SESSION_ID={{%SESSION_ID%}}" in html
    assert 'hx-trigger="every 3s' in html


def test_the_form_launches_by_default_and_says_when_links_refuse_workers(researcher_client, demo_data):
    html = researcher_client.get("/dashboard/studies/new/").content.decode()
    box = html[html.index('id="field-launch"') :]
    assert 'name="launch"' in box[:400] and "checked" in box[:400]  # ticked unless the researcher unticks it
    # Unticked (a checkbox left out of the POST): created, not launched, and every page says so.
    response = researcher_client.post("/dashboard/studies/new/", _form(), follow=True)
    html = response.content.decode()
    study = Study.objects.get()
    assert not Cohort.objects.filter(study=study, launched_at__isnull=False).exists()
    assert "Its cohorts are not launched: their join links refuse workers" in html
    assert "2 cohorts not launched:" in html and "Launch all cohorts" in html
    assert html.count("Not launched: this link refuses workers until you launch the cohort.") == 2
    assert html.count('class="join-link inactive"') == 2
    cohort = Cohort.objects.filter(study=study).first()
    page = researcher_client.get(f"/dashboard/cohorts/{cohort.pk}/").content.decode()
    assert "Not launched: this link refuses" in page
    researcher_client.post(f"/dashboard/studies/{study.pk}/launch/")
    html = researcher_client.get(f"/dashboard/studies/{study.pk}/").content.decode()
    assert "not launched" not in html and html.count("Takes workers now.") == 2 and "inactive" not in html


# ---------------------------------------------------------------- the study page and its actions


def test_grid_fragment_follows_progress(researcher_client, setup):
    study, cohort, enrollment = setup
    html = researcher_client.get(f"/dashboard/studies/{study.pk}/grid/").content.decode()
    assert html.lstrip().startswith('<div id="grid"') and 'class="enrolled">1 / 2<' in html
    zero = cohort_of(study, "sst2", 0)
    worker = enroll(zero, "Z-1")
    for _ in range(4):
        answer_current(worker)
    html = researcher_client.get(f"/dashboard/studies/{study.pk}/grid/").content.decode()
    cell = html[html.index(f'data-cohort="{zero.pk}"') :]
    assert 'class="test-done">4<' in cell[:2000] and "/ 24 answers" in cell[:2000]


def test_launch_and_close(researcher_client, demo_data, researcher):
    study = make_study(tasks=("sst2",), shots=(0, 10), created_by=researcher, launch=False)
    cohort = cohort_of(study, "sst2", 0)
    researcher_client.post(f"/dashboard/cohorts/{cohort.pk}/launch/")
    assert Cohort.objects.get(pk=cohort.pk).launched_at is not None
    assert Cohort.objects.get(study=study, shots=10).launched_at is None
    response = researcher_client.post(f"/dashboard/studies/{study.pk}/launch/", follow=True)
    assert "Launched 1 cohort." in response.content.decode()
    researcher_client.post(f"/dashboard/cohorts/{cohort.pk}/close/", {"reason": "pilot over"})
    assert Cohort.objects.get(pk=cohort.pk).closed_at is not None
    researcher_client.post(f"/dashboard/studies/{study.pk}/close/", {"reason": "enough"})
    assert not Study.objects.get(pk=study.pk).is_open
    assert AuditEvent.objects.filter(study=study, action="close study", reason="enough", actor="rita").exists()


def test_close_asks_for_confirmation_and_a_reason_then_reopen(researcher_client, setup):
    study, cohort, _ = setup
    close, reopen = f"/dashboard/cohorts/{cohort.pk}/close/", f"/dashboard/cohorts/{cohort.pk}/reopen/"
    # The study page offers "Close…" as a link to a confirmation page (no one-click close).
    html = researcher_client.get(f"/dashboard/studies/{study.pk}/").content.decode()
    assert f'href="{close}?back=study"' in html and f'action="{close}"' not in html
    page = researcher_client.get(close + "?back=study")
    html = page.content.decode()
    assert page.status_code == 200 and "Close SST-2 · 10 shots?" in html and 'name="reason"' in html
    assert "1 / 2 places taken" in html and f'href="/dashboard/studies/{study.pk}/">Cancel' in html.replace(
        'class="button secondary" ', ""
    )
    # htmx asks for the form alone (swapped in beside the links).
    fragment = researcher_client.get(close, HTTP_HX_REQUEST="true").content.decode()
    assert fragment.lstrip().startswith('<div class="confirm-box') and "<html" not in fragment
    # No reason: refused, nothing closed, the page says why.
    response = researcher_client.post(close, {"reason": "  ", "back": "study"})
    assert response.status_code == 400 and "give a reason" in response.content.decode()
    assert Cohort.objects.get(pk=cohort.pk).closed_at is None
    response = researcher_client.post(close, {"reason": "enough <pilot> data", "back": "cohort"})
    assert response.status_code == 302 and response["Location"] == f"/dashboard/cohorts/{cohort.pk}/"
    assert Cohort.objects.get(pk=cohort.pk).closed_at is not None
    event = AuditEvent.objects.get(study=study, action="close cohort")
    assert event.actor == "rita" and event.reason == "sst2 10-shot: enough <pilot> data"
    assert researcher_client.post(close, {"reason": "twice"}).status_code == 409
    # A stale page asks to close it again: told so (htmx reloads the whole page).
    stale = researcher_client.get(close, HTTP_HX_REQUEST="true")
    assert stale.status_code == 204 and stale["HX-Redirect"] == f"/dashboard/studies/{study.pk}/"
    assert researcher_client.get(close + "?back=cohort")["Location"] == f"/dashboard/cohorts/{cohort.pk}/"
    # The cohort page shows the event and offers to re-open (1 of 2 places taken).
    html = researcher_client.get(f"/dashboard/cohorts/{cohort.pk}/").content.decode()
    assert "enough &lt;pilot&gt; data" in html and f'href="{reopen}?back=cohort"' in html
    assert "Closed: this link takes no new workers." in html
    assert researcher_client.post(reopen, {"reason": ""}).status_code == 400
    response = researcher_client.post(reopen, {"reason": "need one more"})
    assert response.status_code == 302 and response["Location"] == f"/dashboard/studies/{study.pk}/"
    assert Cohort.objects.get(pk=cohort.pk).closed_at is None
    assert AuditEvent.objects.get(study=study, action="reopen cohort").reason == "sst2 10-shot: need one more"
    response = researcher_client.post(reopen, {"reason": "again"})
    assert response.status_code == 409 and "not closed" in response.content.decode()


def test_closing_with_htmx_answers_with_the_cohorts_part_of_the_page(researcher_client, setup):
    """The form swapped in beside the links posts with htmx: a refusal comes back in its place (the form again,
    with why), a success as what was done plus the cohort's part of the page it came from, out of band (the
    cohort page's recruitment, or the study page's row), and no message waits for the next page."""
    study, cohort, _ = setup
    close, reopen = f"/dashboard/cohorts/{cohort.pk}/close/", f"/dashboard/cohorts/{cohort.pk}/reopen/"
    htmx = {"HTTP_HX_REQUEST": "true"}
    form = researcher_client.get(close + "?back=cohort", **htmx).content.decode()
    assert f'hx-post="{close}"' in form and 'hx-target="#cohort-confirm"' in form
    assert "hx-post" not in researcher_client.get(close + "?back=cohort").content.decode()  # the page of its own
    refused = researcher_client.post(close, {"reason": " ", "back": "cohort"}, **htmx)
    html = refused.content.decode()
    assert refused.status_code == 400 and "give a reason" in html and f'hx-post="{close}"' in html
    assert "<html" not in html and Cohort.objects.get(pk=cohort.pk).closed_at is None
    done = researcher_client.post(close, {"reason": "enough", "back": "cohort"}, **htmx)
    html = done.content.decode()
    assert done.status_code == 200 and "<html" not in html
    assert '<p class="notice" role="status" data-role="confirm-done">Closed SST-2 10-shot.</p>' in html
    assert 'id="cohort-recruitment" hx-swap-oob="true"' in html and "Closed: this link takes no new workers." in html
    assert f'href="{reopen}?back=cohort"' in html and Cohort.objects.get(pk=cohort.pk).closed_at is not None
    done = researcher_client.post(reopen, {"reason": "one more", "back": "study"}, **htmx)
    html = done.content.decode()
    assert "Re-opened SST-2 10-shot." in html and "<template>" in html
    assert f'<tr id="cohort-row-{cohort.pk}" hx-swap-oob="true">' in html and "Takes workers now." in html
    page = researcher_client.get(f"/dashboard/studies/{study.pk}/").content.decode()
    assert "Re-opened SST-2" not in page and f'<tr id="cohort-row-{cohort.pk}">' in page


def test_reopen_is_refused_when_full_or_the_study_is_closed(researcher_client, setup):
    study, cohort, _ = setup
    enroll(cohort, "W-2")  # 2 / 2 places taken
    researcher_client.post(f"/dashboard/cohorts/{cohort.pk}/close/", {"reason": "full anyway"})
    html = researcher_client.get(f"/dashboard/studies/{study.pk}/").content.decode()
    assert "closed · full" in html and f"/dashboard/cohorts/{cohort.pk}/reopen/" not in html
    response = researcher_client.post(f"/dashboard/cohorts/{cohort.pk}/reopen/", {"reason": "try"})
    assert response.status_code == 409 and "no places left (2 of 2 taken)" in response.content.decode()
    zero = cohort_of(study, "sst2", 0)
    researcher_client.post(f"/dashboard/cohorts/{zero.pk}/close/", {"reason": "x"})
    researcher_client.post(f"/dashboard/studies/{study.pk}/close/", {"reason": "done"})
    response = researcher_client.post(f"/dashboard/cohorts/{zero.pk}/reopen/", {"reason": "try"})
    assert response.status_code == 409 and "the study is closed" in response.content.decode()
    assert Cohort.objects.get(pk=zero.pk).closed_at is not None


def test_another_researcher_cannot_close_or_reopen(client, setup):
    _, cohort, _ = setup
    other = User.objects.create_user("eve", password="x")
    other.groups.add(*User.objects.get(username="rita").groups.all())
    client.force_login(other)
    for action in ("close", "reopen"):
        url = f"/dashboard/cohorts/{cohort.pk}/{action}/"
        assert client.get(url).status_code == 404
        assert client.post(url, {"reason": "mine now"}).status_code == 404
    assert Cohort.objects.get(pk=cohort.pk).closed_at is None
    assert not AuditEvent.objects.filter(action__in=("close cohort", "reopen cohort")).exists()


# ---------------------------------------------------------------- the cohort page: filter and reinstate


def test_filter_needs_a_reason_and_errors_show_at_the_row(researcher_client, setup):
    _, cohort, enrollment = setup
    url = f"/dashboard/enrollments/{enrollment.pk}/filter/"
    response = researcher_client.post(url, {"reason": "  "})
    html = response.content.decode()
    assert response.status_code == 400 and "give a reason" in html
    assert html.index("give a reason") > html.index(f'id="enrollment-{enrollment.pk}"')
    assert Enrollment.objects.get(pk=enrollment.pk).state == "training"
    response = researcher_client.post(url, {"reason": "clicks at random"})
    assert response.status_code == 302 and response["Location"] == f"/dashboard/cohorts/{cohort.pk}/"
    assert Enrollment.objects.get(pk=enrollment.pk).state == "filtered"
    assert AuditEvent.objects.get(enrollment=enrollment, action="filter by researcher").reason == "clicks at random"
    # Filtering again: the services refuse (409), the page says why.
    response = researcher_client.post(url, {"reason": "again"})
    assert response.status_code == 409 and "only a worker in training" in response.content.decode()
    response = researcher_client.post(f"/dashboard/enrollments/{enrollment.pk}/reinstate/", {"reason": ""})
    assert response.status_code == 400
    response = researcher_client.post(f"/dashboard/enrollments/{enrollment.pk}/reinstate/", {"reason": "mistake"})
    assert response.status_code == 302 and Enrollment.objects.get(pk=enrollment.pk).state == "training"


def test_an_action_from_htmx_answers_with_its_row_alone(researcher_client, setup):
    """The page swaps the row in place (the researcher keeps their place in a long table): the answer is the row,
    with what was done or why not, never the whole page."""
    _, cohort, enrollment = setup
    url = f"/dashboard/enrollments/{enrollment.pk}/filter/"
    htmx = {"HTTP_HX_REQUEST": "true"}
    response = researcher_client.post(url, {"reason": ""}, **htmx)
    html = response.content.decode()
    assert response.status_code == 400
    assert html.count("<tr") == 1 and f'id="enrollment-{enrollment.pk}"' in html and "give a reason" in html
    assert "<h1" not in html and Enrollment.objects.get(pk=enrollment.pk).state == "training"
    response = researcher_client.post(url, {"reason": "clicks at random"}, **htmx)
    html = response.content.decode()
    assert response.status_code == 200 and html.count("<tr") == 1 and "<h1" not in html
    assert '<p class="row-done" role="status">Filtered.</p>' in html
    assert f'hx-post="/dashboard/enrollments/{enrollment.pk}/reinstate/"' in html  # the row's next action
    assert Enrollment.objects.get(pk=enrollment.pk).state == "filtered"
    # No message waits for the next page: the row said it.
    page = researcher_client.get(f"/dashboard/cohorts/{cohort.pk}/").content.decode()
    assert "Filtered." not in page


def test_cohort_page_shows_progress_and_escapes_worker_ids(researcher_client, setup):
    study, cohort, _ = setup
    nasty = enroll(cohort, "nasty")
    # A generic link without a pattern accepts any id: the page must escape it.
    type(nasty.worker).objects.filter(pk=nasty.worker_id).update(external_id="<img src=x onerror=alert(1)>")
    for _ in range(4):
        answer_current(nasty, right=False)
    html = researcher_client.get(f"/dashboard/cohorts/{cohort.pk}/").content.decode()
    assert "<img src=x" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    row = html[html.index(f'id="enrollment-{nasty.pk}"') :]
    assert '<svg class="sparkline"' in row[:3000] and "4 items" in row[:3000]
    assert "% so far" in row[:3000]


def test_chance_level_is_derived_from_the_registry():
    from tasks_data.registry import CLUES_TASKS

    assert CLUES_TASKS["sst2"].chance_item_s1(["positive"]) == 0.5
    assert abs(CLUES_TASKS["mnli"].chance_item_s1(["neutral"]) - 1 / 3) < 1e-12
    # Span tasks: the empty answer scores 1 on an item with no gold span, 0 otherwise.
    assert CLUES_TASKS["conll03"].chance_item_s1([]) == 1.0 and CLUES_TASKS["conll03"].chance_item_s1(["Paris"]) == 0.0
    assert (
        CLUES_TASKS["squad2"].chance_item_s1([]) == 1.0
        and CLUES_TASKS["squad2"].chance_item_s1(["1066", "in 1066"]) == 0.0
    )
    # ReCoRD: a uniform pick among the candidates (two of four spans name the answer).
    assert CLUES_TASKS["record"].chance_item_s1(["Obama"], ["Obama", "Paris", "Obama", "CNN"]) == 0.5


def test_cohort_page_flags_training_at_or_below_chance_and_idle_workers(researcher_client, setup):
    from datetime import timedelta

    from django.utils import timezone

    from annotation.models import Answer

    study, cohort, first = setup
    Study.objects.filter(pk=study.pk).update(filter_fraction=0.5, filter_floor=None)
    # The cohort's first worker answers every training item wrong (S1 0%, chance 50% on SST-2):
    # the fraction rule has no one to compare them with, so they pass; the dashboard flags them.
    while Enrollment.objects.get(pk=first.pk).state == Enrollment.State.TRAINING:
        answer_current(first, right=False)
    first.refresh_from_db()
    assert first.state == "testing" and first.training_s1 == 0.0
    good = enroll(cohort, "W-GOOD")
    answer_current(good)
    # The first worker went quiet an hour ago; the study's idle cap is 300 s.
    hour_ago = timezone.now() - timedelta(hours=1)
    Answer.objects.filter(enrollment=first).update(answered_at=hour_ago)
    Enrollment.objects.filter(pk=first.pk).update(enrolled_at=hour_ago, current_served_at=hour_ago)
    html = researcher_client.get(f"/dashboard/cohorts/{cohort.pk}/").content.decode()
    assert "Chance level of this cohort's training S1: <strong>50%</strong>" in html
    row = html[html.index(f'id="enrollment-{first.pk}"') :]
    row = row[: row.index("</tr>")]
    assert "≤ chance" in row and 'class="flag idle">idle<' in row and "1 h 00 min ago" in row
    row = html[html.index(f'id="enrollment-{good.pk}"') :]
    row = row[: row.index("</tr>")]
    assert "≤ chance" not in row and "idle<" not in row and " s ago" in row
    grid = researcher_client.get(f"/dashboard/studies/{study.pk}/grid/").content.decode()
    cell = grid[grid.index(f'data-cohort="{cohort.pk}"') :]
    cell = cell[: cell.index("</td>")]
    assert 'class="n-idle">1<' in cell and 'class="n-below-chance">1<' in cell and "last activity" in cell


def test_sparkline_geometry():
    spark = sparkline([1.0, 0.0, 0.5, 1.0])
    assert spark["n"] == 4 and spark["first"] == 100 and spark["last"] == 62
    assert len(spark["bars"]) == 4 and spark["points"].count(",") == 4
    assert sparkline([]) is None


# ---------------------------------------------------------------- results


def _complete(cohort, n, right=True):
    for i in range(n):
        worker = enroll(cohort)
        while Enrollment.objects.get(pk=worker.pk).state != Enrollment.State.COMPLETED:
            answer_current(worker, right=right or i % 2 == 0)


def test_results_page_table_charts_agreement(researcher_client, setup):
    study = setup[0]
    fake_model_rows(study)
    _complete(cohort_of(study, "sst2", 0), 2)
    response = researcher_client.get(f"/dashboard/studies/{study.pk}/results/")
    html = response.content.decode()
    assert response.status_code == 200
    assert "100.0 ± 0.0" in html and "n=2" in html
    assert "Sentence Classification" in html and 'class="chart"' in html
    assert "FT BERT-Base &lt;b&gt;" in html  # model rows drawn, escaped
    assert html.count("<svg") >= 1 and "S1 against shots" in html
    assert "Agreement per cohort" in html and "1.000" in html
    BaselineRun.objects.all().delete()
    html = researcher_client.get(f"/dashboard/studies/{study.pk}/results/").content.decode()
    assert "No model rows available" in html


def test_results_downloads(researcher_client, setup):
    study = setup[0]
    _complete(cohort_of(study, "sst2", 0), 2)
    expected = {"csv": "text/csv", "json": "application/json", "md": "text/markdown", "tex": "application/x-tex"}
    for fmt, content_type in expected.items():
        response = researcher_client.get(f"/dashboard/studies/{study.pk}/results/download.{fmt}")
        assert response.status_code == 200 and response["Content-Type"].startswith(content_type)
        assert response["Content-Disposition"] == f'attachment; filename="study{study.pk}_human_table.{fmt}"'
        text = response.content.decode()
        assert "100.0" in text
    assert json.loads(researcher_client.get(f"/dashboard/studies/{study.pk}/results/download.json").content)
    assert researcher_client.get(f"/dashboard/studies/{study.pk}/results/download.xls").status_code == 404


def _download_links(html: str) -> list[str]:
    import html as htmllib
    import re

    return [htmllib.unescape(h) for h in re.findall(r'href="([^"]+)"[^>]*\bdownload\b', html)]


def test_every_download_link_on_the_results_page_returns_its_file_and_only_to_the_owner(
    researcher_client, setup, client
):
    import io
    import zipfile

    import pandas as pd

    study, cohort, enrollment = setup
    zero = cohort_of(study, "sst2", 0)
    _complete(zero, 2)  # the cohort's target
    html = researcher_client.get(f"/dashboard/studies/{study.pk}/results/").content.decode()
    links = _download_links(html)
    base = f"/dashboard/studies/{study.pk}/results/"
    expected = (
        {base + f"download.{f}" for f in ("csv", "json", "md", "tex")}
        | {
            base + f"{kind}.{f}"
            for kind in ("annotators", "pay", "learning_curves", "agreement")
            for f in ("csv", "json", "md")
        }
        | {base + "predictions.zip"}
    )
    assert expected <= set(links)
    completed = list(Enrollment.objects.filter(cohort=zero, state="completed"))
    assert {f"/dashboard/enrollments/{e.pk}/predictions.jsonl" for e in completed} <= set(links)
    bodies = {}
    for url in links:
        response = researcher_client.get(url)
        assert response.status_code == 200, url
        assert response["Content-Disposition"].startswith("attachment; filename="), url
        bodies[url] = response.content
    # The table's CSV: a plain header row first (pandas reads it as is), the n of each cell as a column.
    # Rows: the human annotators' mean ± std, then the majority vote; index (Method, #Shots).
    frame = pd.read_csv(io.BytesIO(bodies[base + "download.csv"]), index_col=[0, 1])
    assert list(frame.index.names) == ["Method", "#Shots"] and list(frame.columns)[:2] == ["SST-2", "SST-2 n"]
    human = frame.loc["Human"]
    assert human.loc[0, "SST-2"] == "100.0 ± 0.0" and human.loc[0, "SST-2 n"] == 2 and human.loc[10, "SST-2 n"] == 0
    md, tex = bodies[base + "download.md"].decode(), bodies[base + "download.tex"].decode()
    # A cell of few annotators lists their values beside its model-based interval.
    assert "| Human | 0 | 100.0 ± 0.0 [100.0, 100.0] (values 100.0, 100.0) (n=2) |" in md
    assert "100.0 $\\pm$ 0.0 [" in tex and "(n=2)" in tex
    assert json.loads(bodies[base + "download.json"])["cells"][0]["n"] == 2
    # Rows: pay lists every worker who joined (the 10-shot worker still in training too).
    pay = pd.read_csv(io.BytesIO(bodies[base + "pay.csv"]))
    assert set(pay["state"]) == {"completed", "training"} and len(pay) == 3 and "pay" in pay.columns
    annotators = pd.read_csv(io.BytesIO(bodies[base + "annotators.csv"]))
    assert len(annotators) == 2 and (annotators["test_s1_percent"] == 100.0).all()
    assert len(pd.read_csv(io.BytesIO(bodies[base + "agreement.csv"]))) >= 1
    archive = zipfile.ZipFile(io.BytesIO(bodies[base + "predictions.zip"]))
    assert len(archive.namelist()) == 2
    one = bodies[f"/dashboard/enrollments/{completed[0].pk}/predictions.jsonl"].decode().splitlines()
    assert len(one) == completed[0].answers.filter(step="test").count() > 0
    assert {"id", "prediction"} <= set(json.loads(one[0]))
    # The cohort page links each completed annotator's file too.
    cohort_html = researcher_client.get(f"/dashboard/cohorts/{zero.pk}/").content.decode()
    assert f"/dashboard/enrollments/{completed[0].pk}/predictions.jsonl" in _download_links(cohort_html)
    # Not finished: no file.
    assert researcher_client.get(f"/dashboard/enrollments/{enrollment.pk}/predictions.jsonl").status_code == 409
    assert researcher_client.get(base + "table.csv").content == bodies[base + "download.csv"]
    assert researcher_client.get(base + "secrets.csv").status_code == 404
    assert researcher_client.get(base + "pay.xls").status_code == 404
    # Another researcher: 404 for every one of them.
    other = User.objects.create_user("eve", password="x")
    other.groups.add(*User.objects.get(username="rita").groups.all())
    client.force_login(other)
    for url in links:
        assert client.get(url).status_code == 404, url


def test_chart_coordinates_and_missing_points():
    cells = [
        {"task": "sst2", "shots": 0, "mean": 80.0, "std": 2.0, "n": 3},
        {"task": "sst2", "shots": 10, "mean": None, "std": None, "n": 0},
        {"task": "sst2", "shots": 20, "mean": 90.0, "std": None, "n": 1},
    ]
    c = chart(
        "sst2", cells, [{"method": "FT", "model": "m", "task": "sst2", "shots": 10, "mean": 30.0, "std": 1.0, "n": 5}]
    )
    human, model = c["series"]
    assert [m["label"] for m in human["marks"]] == ["0 shots: 80.0 ± 2.0 (n=3)", "20 shots: 90.0 (n=1)"]
    assert human["marks"][0]["err"] and "err" not in human["marks"][1]
    assert human["marks"][0]["y"] > human["marks"][1]["y"]  # higher S1 is drawn higher
    assert model["marks"][0]["x"] < human["marks"][1]["x"] and c["yticks"][0]["v"] <= 29
    assert Study.SHOT_CONDITIONS == (0, 10, 20, 30)


def test_grid_and_cohort_page_queries_do_not_grow_with_workers(researcher_client, setup):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    study, cohort, first = setup
    answer_current(first)

    def count(url):
        with CaptureQueriesContext(connection) as ctx:
            assert researcher_client.get(url).status_code == 200
        return len(ctx.captured_queries)

    urls = (f"/dashboard/studies/{study.pk}/grid/", f"/dashboard/cohorts/{cohort.pk}/")
    before = [count(u) for u in urls]
    second = enroll(cohort, "W-2")
    for _ in range(3):
        answer_current(second, right=False)
    zero = cohort_of(study, "sst2", 0)
    for i in range(2):
        answer_current(enroll(zero, f"Z-{i}"))
    assert [count(u) for u in urls] == before
