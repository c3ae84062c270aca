"""The items page (humans against models) in Chromium at 1366x800 and 390x844: filter, sort, open an item;
the page never scrolls sideways (the table scrolls in its own box); screenshots in artifacts/screenshots/."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User

from annotation.models import RESEARCHERS_GROUP
from baselines.models import BaselineRun
from tasks_data.models import Example
from tests.annotation.factories import cohort, complete, make_study, pid_for
from tests.browser.conftest import SCREENSHOTS
from tests.browser.dashboard_pages import WIDTHS, no_sideways_scroll

expect = pytest.importorskip("playwright.sync_api").expect
pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "items-pw-2024"


def _study():
    user = User.objects.create_user("irene", password=PASSWORD)
    user.groups.add(Group.objects.get_or_create(name=RESEARCHERS_GROUP)[0])
    study = make_study(tasks=["sst2"], shots=[10], created_by=user, filter_floor=None, filter_fraction=None)
    ten = cohort(study, "sst2", 10)
    complete(ten, "A")
    complete(ten, "B", wrong_test={1})
    complete(ten, "C", wrong_test={1, 2})
    tests = list(Example.objects.filter(task__slug="sst2", role="test").order_by("position"))
    predictions = [
        {
            "id": e.clues_id,
            "prediction": [e.gold[0]] if i else [next(x for x in ("positive", "negative") if x != e.gold[0])],
        }
        for i, e in enumerate(tests)
    ]
    scores = [float(i > 0) for i in range(len(tests))]
    BaselineRun.objects.create(
        task=tests[0].task,
        method="icl",
        model="tiny-model",
        shots=10,
        split=1,
        seed=0,
        status=BaselineRun.Status.COMPLETED,
        s1=sum(scores) / len(scores),
        predictions=predictions,
        item_scores=scores,
    )
    return study, ten, tests


@pytest.mark.parametrize("size", WIDTHS)
def test_items_page_filters_sorts_and_opens_an_item(pages, demo_data, size):
    study, ten, tests = _study()
    page = pages.new(viewport=WIDTHS[size])
    page.goto(f"/accounts/login/?next=/dashboard/studies/{study.pk}/results/")
    page.get_by_label("Username").fill("irene")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.get_by_role("link", name="Items: where humans and models differ").click()
    expect(page.get_by_role("heading", name="Items: humans against models")).to_be_visible()
    table = page.locator("table.items")
    expect(table.locator("tbody tr")).to_have_count(len(tests))
    expect(page.locator(".correlations")).to_contain_text("tiny-model")
    no_sideways_scroll(page)
    page.screenshot(path=str(SCREENSHOTS / f"items-{WIDTHS[size]['width']}.png"), full_page=True)

    # Sort: fewest annotators right first (item 2: only A; then item 1: A alone is right too, B and C not).
    table.get_by_role("link", name="Annotators right").click()  # descending first
    table.get_by_role("link", name="Annotators right ▼").click()  # then ascending
    expect(table.locator("tbody tr").first.locator("td").nth(1)).to_have_text("33%")
    # Filter: humans solve, models miss: item 0 alone (the model is wrong there, every annotator right).
    page.get_by_label("Show").select_option("humans_solve_models_miss")
    page.get_by_role("button", name="Show").click()
    expect(table.locator("tbody tr")).to_have_count(1)
    expect(table.locator("tbody tr .flag")).to_have_text("humans solve, models miss")
    no_sideways_scroll(page)
    table.get_by_role("link", name=tests[0].clues_id, exact=True).click()
    expect(page.get_by_role("heading", name=f"SST-2 item {tests[0].clues_id}")).to_be_visible()
    expect(page.locator("code.gold")).to_have_text(tests[0].gold[0])
    answers = page.locator("table.answers tbody tr")
    expect(answers).to_have_count(3)
    expect(page.locator("table.answers")).to_contain_text(pid_for("B"))
    expect(page.locator("table.predictions")).to_contain_text("icl tiny-model")
    no_sideways_scroll(page)
    page.screenshot(path=str(SCREENSHOTS / f"item-{WIDTHS[size]['width']}.png"), full_page=True)
    assert ten.pk  # the cohort the page opened
