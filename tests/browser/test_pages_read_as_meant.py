"""Pages read as meant, at 1366x800 and 390x844:

* ReCoRD's instructions show the data's ``@placeholder`` as the blank the question shows, on the description, the
  item (instructions open) and the feedback, never the raw marker;
* the feedback's progress line names the part ("Part 1 of 2") as the item pages around it do;
* Table 5 says why a task's block is empty, and every annotator's prediction file is listed in view (not folded
  away).
"""

from __future__ import annotations

import pytest

from annotation.models import Enrollment
from tests.annotation.factories import pid_for
from tests.browser.conftest import SCREENSHOTS
from tests.browser.dashboard_pages import WIDTHS, log_in, make_researcher
from tests.browser.journeys import LAPTOP, PHONE, wait_view
from tests.worker_pages.factories import answer_current, cohort_of, enroll, make_study

expect = pytest.importorskip("playwright.sync_api").expect
pytestmark = pytest.mark.django_db(transaction=True)

PROLIFIC = "?PROLIFIC_PID={pid}&STUDY_ID=STUDY1&SESSION_ID=SESS-{pid}"


def _shown(page, selector: str) -> str:
    return page.locator(selector).first.inner_text()


@pytest.mark.parametrize("size", [PHONE, LAPTOP], ids=["phone", "laptop"])
def test_record_reads_a_blank_everywhere_and_the_feedback_names_the_part(pages, demo_data, size):
    # ReCoRD at a minute an item in 15-minute sittings: the demo's 10 training and 12 test items in parts.
    study = make_study(tasks=("record",), shots=(10,), sitting_minutes=15, filter_fraction=None)
    cohort = cohort_of(study, "record", 10)
    touch = {"has_touch": True, "is_mobile": True} if size is PHONE else {}
    page = pages.new(viewport=size, **touch)
    name = "phone" if size is PHONE else "laptop"
    page.goto(f"/join/{cohort.join_token}/" + PROLIFIC.format(pid=pid_for(f"BLANK-{name}")))
    wait_view(page, "description")
    description = _shown(page, ".task-description")
    assert "@placeholder" not in description and "blank" in description
    expect(page.locator(".task-description .blank")).to_be_visible()
    page.screenshot(path=str(SCREENSHOTS / f"25-record-description-{name}.png"))
    page.get_by_role("button", name="Start").click()
    wait_view(page, "item")
    part = _shown(page, '.progress-text [data-role="part-of"]')
    assert part.startswith("Part 1 of ")
    details = page.locator("details.instructions")
    if details.get_attribute("open") is None:  # closed on a phone until the worker opens them
        details.locator("summary").click()
    expect(details.locator(".blank")).to_be_visible()
    assert "@placeholder" not in _shown(page, "details.instructions")
    assert "@placeholder" not in page.locator("#stage").inner_text()
    page.screenshot(path=str(SCREENSHOTS / f"25-record-item-{name}.png"))
    page.locator(".cand").first.click()
    page.locator('[data-role="submit"]').click()
    wait_view(page, "feedback")
    expect(page.locator('.progress-text [data-role="part-of"]')).to_have_text(part)  # as on the item pages
    assert "@placeholder" not in page.locator("#stage").inner_text()
    assert Enrollment.objects.get(worker__external_id=pid_for(f"BLANK-{name}")).answers.count() == 1


def _study_with_an_empty_task(user):
    """SST-2 with three completed annotators; CoNLL03 with a model row and no completed human; WikiANN with nothing."""
    from baselines.models import BaselineRun
    from tasks_data.models import Task

    study = make_study(tasks=("sst2", "conll03", "wikiann"), shots=(0, 10), created_by=user, workers_per_cohort=3)
    for i in range(3):
        worker = enroll(cohort_of(study, "sst2", 0), f"DONE-{i}")
        while Enrollment.objects.get(pk=worker.pk).state != Enrollment.State.COMPLETED:
            answer_current(worker)
    for split in (1, 2):
        BaselineRun.objects.create(
            task=Task.objects.get(slug="conll03"),
            method="FT",
            model="BERT-Base",
            shots=10,
            split=split,
            seed=0,
            status=BaselineRun.Status.COMPLETED,
            s1=0.4,
        )
    return study


@pytest.mark.parametrize("size", WIDTHS)
def test_results_say_why_a_task_is_empty_and_list_every_prediction_file(pages, demo_data, size):
    study = _study_with_an_empty_task(make_researcher())
    page = pages.new(viewport=WIDTHS[size])
    log_in(page, f"/dashboard/studies/{study.pk}/results/")
    blocks = page.locator(".table5 .task-block")
    # A model row is never beside a cohort with no completed annotator: CoNLL03's block is as empty as WikiANN's,
    # and its model row is listed apart.
    expect(blocks.locator('[data-role="empty-task"]')).to_have_count(2)
    for slug, name in (("wikiann", "WikiANN"), ("conll03", "CoNLL03")):
        expect(page.locator(f'.task-block[data-task="{slug}"] [data-role="empty-task"]')).to_have_text(
            f"No annotator of {name} has completed yet: its cells fill as its cohorts complete."
        )
    expect(page.locator('.unpaired-models [data-unpaired="conll03-10"]')).to_have_count(1)
    expect(page.locator('.task-block[data-task="sst2"] tbody tr').first.locator("th")).to_have_text("Human")
    files = page.locator(".prediction-files li a")
    expect(files).to_have_count(3)
    for i in range(3):
        files.nth(i).scroll_into_view_if_needed()
        expect(files.nth(i)).to_be_visible()  # in view, not folded into a closed block
    page.locator(".table5").screenshot(path=str(SCREENSHOTS / f"25-table5-empty-task-{WIDTHS[size]['width']}.png"))
