"""The gap rows on the results page in Chromium at 1366x800 and 390x844: a model row of three training splits,
its gap with both intervals, the like-for-like gap on the cohort's own split, the cohort's three values beside its
model-based interval, and two rows of one model name kept apart by their server paths; the page never scrolls
sideways. Screenshots in artifacts/screenshots/."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User

from annotation.models import RESEARCHERS_GROUP
from baselines.models import BaselineRun
from tasks_data.models import Example
from tests.annotation.factories import cohort, complete, make_study, sst2_run_answers, trim_test_set
from tests.browser.conftest import SCREENSHOTS
from tests.browser.dashboard_pages import WIDTHS, no_sideways_scroll

expect = pytest.importorskip("playwright.sync_api").expect
pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "gaps-pw-2024"


def _study():
    user = User.objects.create_user("grace", password=PASSWORD)
    user.groups.add(Group.objects.get_or_create(name=RESEARCHERS_GROUP)[0])
    assert trim_test_set("sst2", 12) == 12  # the demo data's SST-2 test set
    study = make_study(tasks=["sst2"], shots=[10], created_by=user, filter_floor=None, filter_fraction=None)
    ten = cohort(study, "sst2", 10)
    for name, wrong in (("A", set()), ("B", {0, 1, 2}), ("C", {3, 4})):
        complete(ten, name, wrong_test=wrong)
    tests = list(Example.objects.filter(task__slug="sst2", role="test").order_by("position"))
    for path, splits in (("/v1", (1, 2, 3)), ("/v2", (1,))):
        for split in splits:
            wrong = set(range(split, len(tests), 3))
            BaselineRun.objects.create(
                task=tests[0].task,
                method="worker",
                model="llama-7b",
                backend="openai",
                server=f"http://gpu-a:8000{path}",
                shots=10,
                split=split,
                seed=0,
                status=BaselineRun.Status.COMPLETED,
                **sst2_run_answers(tests, wrong),
            )
    return study


@pytest.mark.parametrize("size", WIDTHS)
def test_gap_rows_and_the_like_for_like_row_on_the_results_page(pages, demo_data, size):
    study = _study()
    split = study.cohorts.get(shots=10).training_set.split
    page = pages.new(viewport=WIDTHS[size])
    page.goto(f"/accounts/login/?next=/dashboard/studies/{study.pk}/results/")
    page.get_by_label("Username").fill("grace")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    table = page.locator('.table5 section[data-task="sst2"]')
    expect(table).to_be_visible()
    for path in ("v1", "v2"):
        expect(table.locator("tr.kind-model th")).to_contain_text([f"llama-7b (as a worker, gpu-a:8000/{path})"])
    expect(table.locator("tr.kind-model")).to_have_count(2)
    expect(table.locator("tr.kind-gap")).to_have_count(2)
    # The like-for-like row of the three-split row; the one-run row's runs are all on the humans' split already.
    matched = table.locator("tr.kind-gap_matched th")
    expect(matched).to_have_count(1)
    expect(matched.first).to_contain_text(f"(split {split}, as the humans)")
    human = table.locator("tr.kind-human td").first
    expect(human).to_contain_text("model-based")
    expect(human).to_contain_text("values 75.0, 83.3, 100.0")
    # The gap of the row of one run (the /v2 server) is flagged: its spread over splits cannot be measured.
    expect(page.locator(".results-notes")).to_contain_text("the model row has one run")
    no_sideways_scroll(page)
    width = WIDTHS[size]["width"]
    table.screenshot(path=str(SCREENSHOTS / f"gap-rows-{width}.png"))
