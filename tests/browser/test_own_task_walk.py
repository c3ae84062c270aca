"""The example task of one's own (examples/reviews), end to end in Chromium: a researcher uploads it on the
dashboard, launches a study at its sizes, a worker goes through the training step and the test step, Table 5
shows the cohort, an annotator's file downloaded in the official format is scored by the official eval/S1.py as
the platform scores it, and a baseline run stands beside the humans."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest
from django.core.management import call_command

from annotation.models import Answer, Enrollment, Study
from tasks_data.models import Task
from tests.browser.dashboard_pages import log_in, make_researcher, no_sideways_scroll
from tests.browser.journeys import PHONE, after_item, current_example, item_handle, view, wait_view
from tests.tasks_data.official_s1 import eval_S1

expect = pytest.importorskip("playwright.sync_api").expect
pytestmark = pytest.mark.django_db(transaction=True)
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "reviews"
WRONG = {2, 7}  # the test items the worker gets wrong (0-based)


def _zip(dest: Path) -> Path:
    with zipfile.ZipFile(dest, "w") as archive:
        for file in sorted(EXAMPLE.iterdir()):
            archive.write(file, f"reviews/{file.name}")
    return dest


def test_the_example_task_from_upload_to_table5_the_official_score_and_a_baseline(pages, shoot, tmp_path):
    researcher = make_researcher()
    page = pages.new()
    log_in(page, "/dashboard/tasks/")
    page.get_by_label("A task of your own (a zip of its folder)").set_input_files(str(_zip(tmp_path / "reviews.zip")))
    page.get_by_role("button", name="Import the task").click()
    expect(page.locator(".messages")).to_contain_text("Imported \u201cProduct reviews\u201d (reviews): 10 test items")
    assert Task.objects.get(slug="reviews").owner == researcher
    shoot(page, "40-tasks-own")
    no_sideways_scroll(page)

    # A study at the task's own sizes, from the form: the CLUES sizes unticked, 4 ticked.
    page.get_by_role("link", name="New study").first.click()
    page.get_by_label("Name").fill("Reviews pilot")
    page.get_by_label("Product reviews").check()
    for k in ("0 (description only)", "10 shots", "20 shots", "30 shots"):
        page.get_by_label(k, exact=True).uncheck()
    page.get_by_label("4 shots", exact=True).check()
    page.get_by_label("Workers per cohort").fill("1")
    page.get_by_label("Filter: fraction of the others' mean").fill("")
    page.get_by_role("button", name="Create the study").click()
    expect(page.locator(".messages")).to_contain_text("Created the study")
    study = Study.objects.get(name="Reviews pilot")
    assert study.shots == [4] and study.tasks == ["reviews"]
    cohort = study.cohorts.get()
    link = page.locator(f"#link-{cohort.pk}").input_value().replace("{WORKER_ID}", "REVIEWER-1")

    # The worker: the instructions as the researcher wrote them, then a number key and Enter for each item.
    worker = pages.new()
    worker.goto(link)
    wait_view(worker, "description")
    expect(worker.locator(".task-description strong").first).to_have_text("pleased")
    expect(worker.locator(".task-description")).to_contain_text("a complaint about the delivery")
    shoot(worker, "41-own-task-description")
    worker.get_by_role("button", name="Start").click()
    wait_view(worker, "item")
    expect(worker.locator('[data-widget="label"]')).to_be_visible()
    shoot(worker, "42-own-task-item")
    labels = ["positive", "negative"]
    test_position = 0
    while view(worker) == "item":
        example = current_example(worker)
        shown = item_handle(worker)
        label = example.gold[0]
        if example.role == "test":
            if test_position in WRONG:
                label = next(x for x in labels if x != label)
            test_position += 1
        worker.keyboard.press(str(labels.index(label) + 1))
        worker.keyboard.press("Enter")
        if after_item(worker, shown) == "feedback":  # the training step: the gold after each answer
            expect(worker.locator('[data-role="next"]')).to_be_focused()
            worker.keyboard.press("Enter")
            worker.wait_for_function("() => document.getElementById('stage').dataset.view !== 'feedback'")
    wait_view(worker, "done")
    enrollment = Enrollment.objects.get(worker__external_id="REVIEWER-1")
    assert enrollment.state == Enrollment.State.COMPLETED
    assert Answer.objects.filter(enrollment=enrollment, step="training").count() == 4
    assert Answer.objects.filter(enrollment=enrollment, step="test").count() == 10

    # A baseline run on the same test set, from the command line.
    call_command("run_baselines", "--tasks", "reviews", "--methods", "majority", stdout=io.StringIO())

    # Table 5 on the results page: the task, its 4-shot cell (80.0: 8 of 10), and the model row beside it.
    page.goto(f"/dashboard/studies/{study.pk}/results/")
    table = page.locator("#t5-reviews").locator("xpath=ancestor::table")
    expect(table).to_contain_text("Product reviews")
    expect(table).to_contain_text("80.0")
    expect(page.locator("body")).to_contain_text("majority")
    shoot(page, "43-own-task-results")
    no_sideways_scroll(page)

    # The annotator's file, downloaded: the official eval/S1.py gives the platform's number.
    expect(page.locator(".prediction-files h3")).to_have_text("The prediction file of each annotator (1)")
    with page.expect_download() as download:
        page.locator(f'a[href="/dashboard/enrollments/{enrollment.pk}/predictions.jsonl"]').click()
    lines = [json.loads(line) for line in Path(download.value.path()).read_text().splitlines()]
    gold = [json.loads(line)["answer"] for line in (EXAMPLE / "test.jsonl").read_text().splitlines()]
    assert [line["id"] for line in lines] == [
        json.loads(x)["id"] for x in (EXAMPLE / "test.jsonl").read_text().splitlines()
    ]
    assert eval_S1([line["prediction"] for line in lines], gold) == pytest.approx(0.8)
    page.set_viewport_size(PHONE)
    no_sideways_scroll(page)
