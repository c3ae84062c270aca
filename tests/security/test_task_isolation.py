"""A task of one's own is its owner's: another researcher finds no trace of it on any route that lists or uses
tasks (the home page, the dashboard's tasks page and new-study form, the study API, launch_study, the baseline
runs and their transcripts, sharing), until its owner shares it with them or an operator makes it public.

Played as the second researcher would: through the real HTTP surface, with the first researcher's slug typed in.
"""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from annotation.models import Study
from baselines.models import BaselineRun
from tasks_data.card_import import import_task
from tasks_data.importer import CluesImportError
from tests.annotation.factories import baseline_runs
from tests.tasks_data.own_tasks import write_task

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clues")]


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def secret(own_task):
    """rita's own task "secret-reviews", with a baseline run (its transcript holds her items)."""
    task = own_task(slug="secret-reviews", name="Secret reviews", kind="label")
    (run,) = baseline_runs("secret-reviews", 0, "empty", "", [0.5])
    return task, run


def _sees(client: Client, run: BaselineRun) -> dict:
    """What each route that lists or uses tasks shows of rita's task to ``client``."""
    new_form = client.get("/dashboard/studies/new/").content.decode()
    runs = client.get("/api/baselines/runs/").json()["runs"]
    created = client.post(
        "/api/studies/",
        {"name": "probe", "tasks": ["secret-reviews"], "shots": [0], "platform": "generic"},
        content_type="application/json",
    )
    return {
        "home": "Secret reviews" in client.get("/").content.decode(),
        "tasks page": "Secret reviews" in client.get("/dashboard/tasks/").content.decode(),
        "new-study form": 'value="secret-reviews"' in new_form,
        "run list": any(r["task"] == "secret-reviews" for r in runs),
        "transcript": client.get(f"/api/baselines/runs/{run.pk}/transcript/").status_code == 200,
        "study API": created.status_code == 201,
    }


def test_another_researcher_finds_no_trace_of_a_task_until_it_is_shared(secret, researcher, other_researcher):
    task, run = secret
    everywhere = dict.fromkeys(("home", "tasks page", "new-study form", "run list", "transcript", "study API"), True)
    assert _sees(_client(researcher), run) == everywhere
    oscar = _client(other_researcher)
    assert _sees(oscar, run) == dict.fromkeys(everywhere, False)
    assert oscar.get(f"/api/baselines/runs/{run.pk}/transcript/").status_code == 404  # as a run that does not exist
    refused = oscar.post(
        "/api/studies/", {"name": "x", "tasks": ["secret-reviews"], "shots": [0]}, content_type="application/json"
    )
    assert refused.json()["tasks"] == ["unknown task(s): secret-reviews"]
    # A slug typed near hers: the known tasks he is told of, and the one he likely meant, are never hers.
    typo = oscar.post(
        "/api/studies/", {"name": "x", "tasks": ["secret-review"], "shots": [0]}, content_type="application/json"
    )
    assert typo.status_code == 400 and "secret-reviews" not in typo.content.decode()
    assert "known tasks: sst2, mnli, conll03, wikiann, squad2, record" in typo.json()["tasks"][0]
    # The form, posted with the slug typed in: refused as a choice that does not exist.
    form = oscar.post(
        "/dashboard/studies/new/", {"name": "x", "tasks": ["secret-reviews"], "shots": ["0"], "chain": "1"}
    )
    assert form.status_code == 400 and "secret-reviews is not one of the available choices" in form.content.decode()
    # Neither can he share it, nor take its slug by importing a task of his own under it.
    assert oscar.post("/dashboard/tasks/secret-reviews/share/", {"username": "oscar"}).status_code == 404
    assert not task.shared_with.exists()
    assert Study.objects.filter(created_by=other_researcher).count() == 0
    # Shared by rita: every route shows it to him, and he may use it.
    rita = _client(researcher)
    assert rita.post("/dashboard/tasks/secret-reviews/share/", {"username": "oscar"}).status_code == 302
    assert _sees(oscar, run) == everywhere
    assert (
        rita.post("/dashboard/tasks/secret-reviews/share/", {"username": "oscar", "action": "unshare"}).status_code
        == 302
    )
    assert _sees(oscar, run)["new-study form"] is False
    # Made public by an operator: every researcher sees it; an anonymous visitor of the home page too.
    task.public = True
    task.save()
    assert _sees(oscar, run) == everywhere
    assert "Secret reviews" in Client().get("/").content.decode()


def test_the_owner_is_held_on_the_command_line_too(secret, other_researcher, tmp_path):
    # launch_study as oscar: the task does not exist for him.
    with pytest.raises(CommandError, match="unknown task"):
        call_command(
            "launch_study", "--name", "x", "--tasks", "secret-reviews", "--owner", "oscar", stdout=io.StringIO()
        )
    # import_task as oscar, with rita's slug: refused, her task untouched.
    folder = write_task(tmp_path, slug="secret-reviews", kind="spans")
    with pytest.raises(CluesImportError, match="'secret-reviews' is taken by another task"):
        import_task(folder, owner=other_researcher)
    task, _ = secret
    task.refresh_from_db()
    assert task.spec.answer_kind.name == "label" and task.owner.username == "rita"


def test_sharing_takes_only_a_researcher_and_only_from_the_owner(secret, researcher, plain_user, superuser):
    task, _ = secret
    rita = _client(researcher)
    response = rita.post("/dashboard/tasks/secret-reviews/share/", {"username": "paula"}, follow=True)
    assert "Not shared: no researcher is called &#x27;paula&#x27;" in response.content.decode()
    response = rita.post("/dashboard/tasks/secret-reviews/share/", {"username": "nobody"}, follow=True)
    assert "no researcher is called &#x27;nobody&#x27;" in response.content.decode()
    assert not task.shared_with.exists()
    # A CLUES task is nobody's to share.
    assert rita.post("/dashboard/tasks/sst2/share/", {"username": "root"}).status_code == 404
    # An operator sees every task.
    assert 'value="secret-reviews"' in _client(superuser).get("/dashboard/studies/new/").content.decode()
