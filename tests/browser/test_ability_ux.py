"""The joint ability scale and the Dawid-Skene row on the results page in Chromium at 1366x800 and 390x844:
every annotator and the model runs on one axis, the page never scrolls sideways; screenshots in
artifacts/screenshots/."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import call_command

from annotation.models import RESEARCHERS_GROUP
from baselines.models import BaselineRun
from tasks_data.models import Example
from tests.annotation.factories import cohort, complete, make_study, sst2_run_answers
from tests.browser.conftest import SCREENSHOTS
from tests.browser.dashboard_pages import WIDTHS, no_sideways_scroll

expect = pytest.importorskip("playwright.sync_api").expect
pytest.importorskip("mirt")
pytest.importorskip("crowdkit")
pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "ability-pw-2024"


def _study():
    user = User.objects.create_user("ada", password=PASSWORD)
    user.groups.add(Group.objects.get_or_create(name=RESEARCHERS_GROUP)[0])
    study = make_study(
        tasks=["sst2"], shots=[10], created_by=user, filter_floor=None, filter_fraction=None, workers_per_cohort=4
    )
    ten = cohort(study, "sst2", 10)
    tests = list(Example.objects.filter(task__slug="sst2", role="test").order_by("position"))
    for name, step in (("A", 0), ("B", 5), ("C", 3), ("D", 2)):
        complete(ten, name, wrong_test=set(range(0, len(tests), step)) if step else set())
    for split, (server, every) in enumerate((("http://gpu-box:8000/v1", 4), ("", 3)), start=1):
        wrong = set(range(1, len(tests), every))
        BaselineRun.objects.create(
            task=tests[0].task,
            method="worker" if server else "icl",
            model="Qwen2.5-7B-Instruct" if server else "tiny-model",
            server=server,
            shots=10,
            split=split,
            seed=0,
            status=BaselineRun.Status.COMPLETED,
            **sst2_run_answers(tests, wrong),
        )
    call_command("fit_results", "--study", str(study.pk), stdout=io.StringIO())
    return study


@pytest.mark.parametrize("size", WIDTHS)
def test_the_ability_scale_and_the_dawid_skene_row_on_the_results_page(pages, demo_data, size):
    study = _study()
    page = pages.new(viewport=WIDTHS[size])
    page.goto(f"/accounts/login/?next=/dashboard/studies/{study.pk}/results/")
    page.get_by_label("Username").fill("ada")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="Humans and models on one ability scale")).to_be_visible()
    chart = page.locator("figure.ability-chart")
    expect(chart).to_have_count(1)
    expect(chart.locator("g.human")).to_have_count(4)
    expect(chart.locator("g.model")).to_have_count(2)
    expect(chart).to_contain_text("Qwen2.5-7B-Instruct (as a worker, gpu-box:8000)")
    expect(page.locator(".table5")).to_contain_text("Dawid-Skene (crowd-kit)")
    no_sideways_scroll(page)
    chart.scroll_into_view_if_needed()
    chart.screenshot(path=str(SCREENSHOTS / f"abilities-chart-{WIDTHS[size]['width']}.png"))
    page.screenshot(path=str(SCREENSHOTS / f"abilities-{WIDTHS[size]['width']}.png"), full_page=True)
