"""The dashboard's tasks page: a researcher uploads a task of their own (a zip of its folder), reads every problem
with its file and line when it is refused, and then launches cohorts at its own shot sizes from the new-study form."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.models import Study
from tasks_data.models import Task
from tests.tasks_data.own_tasks import read_jsonl, write_jsonl, write_task, zip_task

pytestmark = pytest.mark.django_db
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "reviews"


def _zip(folder: Path, dest: Path) -> SimpleUploadedFile:
    return SimpleUploadedFile(dest.name, zip_task(folder, dest).read_bytes(), content_type="application/zip")


def test_a_researcher_uploads_a_task_and_launches_cohorts_at_its_sizes(researcher_client, researcher, tmp_path):
    page = researcher_client.get("/dashboard/tasks/")
    assert page.status_code == 200 and 'enctype="multipart/form-data"' in page.content.decode()
    response = researcher_client.post(
        "/dashboard/tasks/", {"file": _zip(EXAMPLE, tmp_path / "reviews.zip")}, follow=True
    )
    html = response.content.decode()
    assert "Imported \u201cProduct reviews\u201d (reviews): 10 test items, training files of 4, 8 shots" in html
    assert Task.objects.get(slug="reviews").owner == researcher
    assert "Product reviews" in html and "yours" in html
    # The new-study form offers it, with its sizes; the study gets a cohort per size.
    form = researcher_client.get("/dashboard/studies/new/").content.decode()
    assert 'value="reviews"' in form and 'value="4"' in form and 'value="8"' in form
    created = researcher_client.post(
        "/dashboard/studies/new/",
        {
            "name": "reviews pilot",
            "tasks": ["reviews"],
            "shots": ["0", "4", "8"],
            "chain": "2",
            "workers_per_cohort": "2",
            "pay_rate": "12",
            "idle_cap_seconds": "300",
            "filter_fraction": "0.5",
            "platform": "generic",
            "worker_id_param": "worker_id",
            "test_order": "file",
            "launch": "on",
        },
    )
    assert created.status_code == 302, created.content.decode()[:2000]
    study = Study.objects.get(name="reviews pilot")
    cohorts = {
        (c.shots, c.training_set.split if c.training_set else None)
        for c in study.cohorts.select_related("training_set")
    }
    assert cohorts == {(0, None), (4, 2), (8, 2)}
    # A size the task does not have is refused by name.
    refused = researcher_client.post(
        "/dashboard/studies/new/",
        {
            "name": "bad",
            "tasks": ["reviews"],
            "shots": ["10"],
            "chain": "1",
            "workers_per_cohort": "2",
            "pay_rate": "12",
            "idle_cap_seconds": "300",
            "platform": "generic",
            "worker_id_param": "worker_id",
            "test_order": "file",
        },
    )
    assert refused.status_code == 400 and "shots must be among (0, 4, 8), got [10]" in refused.content.decode()


def test_a_refused_upload_lists_every_problem_and_stores_nothing(researcher_client, tmp_path):
    folder = write_task(tmp_path, kind="label")
    test = read_jsonl(folder / "test.jsonl")
    test[2]["answer"] = ["perhaps"]
    write_jsonl(folder / "test.jsonl", test)
    (folder / "task.toml").write_text((folder / "task.toml").read_text() + "colour = 1\n")
    response = researcher_client.post("/dashboard/tasks/", {"file": _zip(folder, tmp_path / "mine.zip")})
    html = response.content.decode()
    assert response.status_code == 400 and "1 problem; nothing was imported" in html
    assert "mine.zip/task.toml, field &#x27;colour&#x27;: not a field of a task card" in html
    assert "/tmp" not in html  # problems name the uploaded file, not where the server put it
    (folder / "task.toml").write_text((folder / "task.toml").read_text().replace("colour = 1\n", ""))
    html = researcher_client.post("/dashboard/tasks/", {"file": _zip(folder, tmp_path / "mine.zip")}).content.decode()
    assert "mine.zip/test.jsonl, line 3, field &#x27;answer&#x27;: &#x27;perhaps&#x27; is not a label" in html
    not_zip = SimpleUploadedFile("notes.zip", b"hello", content_type="application/zip")
    assert (
        "notes.zip: not a zip file" in researcher_client.post("/dashboard/tasks/", {"file": not_zip}).content.decode()
    )
    assert researcher_client.post("/dashboard/tasks/", {}).status_code == 400
    assert not Task.objects.filter(card__isnull=False).exists()


def test_an_upload_may_be_larger_than_an_answer_but_only_there(researcher_client, tmp_path, settings):
    """The request limit (DATA_UPLOAD_MAX_MEMORY_SIZE) stays for every other route; the upload takes up to
    UPLOAD_MAX_SIZE."""
    folder = write_task(tmp_path, kind="label")
    (folder / "padding.md").write_bytes(bytes(range(256)) * 1200)  # ~300 KB that does not compress
    archive = tmp_path / "big.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_STORED) as z:
        for f in folder.iterdir():
            z.write(f, f"toy/{f.name}")
    body = archive.read_bytes()
    assert len(body) > settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    upload = SimpleUploadedFile("big.zip", body, content_type="application/zip")
    assert researcher_client.post("/dashboard/tasks/", {"file": upload}).status_code == 302
    assert Task.objects.filter(slug="toy").exists()
    other = researcher_client.post("/dashboard/studies/new/", {"file": SimpleUploadedFile("big.zip", body)})
    assert other.status_code == 413
    settings.UPLOAD_MAX_SIZE = len(body) // 2
    too_big = researcher_client.post("/dashboard/tasks/", {"file": SimpleUploadedFile("big.zip", body)})
    assert too_big.status_code == 413
