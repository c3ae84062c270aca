"""One estimate per cohort (``annotation.estimates``): the description page, the Prolific listing, the dashboard and the
planner show the same figure; the defaults of launch_study and of the dashboard form give no cohort whose parts
outrun their time limit, for each of the six tasks; a researcher's own figure far off the estimate is warned about."""

from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client

from annotation.estimates import cohort_estimate, duration_text
from annotation.models import Study
from recruitment.publish import publish
from results.cells import table_cells
from tasks_data.registry import TASKS
from tests.annotation.factories import WorkerClient, cohort, gold_answer, make_study, pid_for, trim_test_set

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clues")]
SITE = "https://clues.example"


def arrive(fake, c, name: str) -> WorkerClient:
    sid = fake.start_submission(c.prolific.prolific_study_id, pid_for(name))
    return WorkerClient(
        c, params={"PROLIFIC_PID": pid_for(name), "STUDY_ID": c.prolific.prolific_study_id, "SESSION_ID": sid}
    )


def test_every_surface_shows_the_cohorts_one_estimate(fake, researcher):
    trim_test_set("sst2", 40)
    study = make_study(
        shots=[10], launch=False, created_by=researcher, completion_code="CDONE", screenout_code="CSOUT", pay_rate=15
    )
    publish(study, site_url=SITE)
    c = cohort(study, "sst2", 10)
    first = arrive(fake, c, "first")  # an annotator, so that the planner prices the cohort
    while (state := first.current().json())["item"] is not None:
        first.answer(state["item"]["id"], gold_answer(first.example(state["item"]["id"])))
    assert state["step"] == "done"
    estimate = cohort_estimate(c)
    (part,) = estimate.parts
    assert not estimate.measured and estimate.training_items + estimate.test_items == 50
    assert part.listed_minutes == 7 and estimate.reward(1) == Decimal("1.75")  # 50 x 8 s = 6.7 min -> 7 at 15/h

    listing = fake.studies[c.prolific.prolific_study_id]  # Prolific
    assert listing["estimated_completion_time"] == part.listed_minutes and listing["reward"] == 175
    assert listing["maximum_allowed_time"] == part.time_limit

    html = arrive(fake, c, "second").client.get("/work/").content.decode()  # the description page
    assert f"Time: about {duration_text(part.listed_minutes)} in all" in html
    assert "pays about 1.75 USD" in html and f"{part.time_limit} minutes</span> of opening the study link" in html

    researcher_client = Client()  # the dashboard's study page and the Prolific page
    researcher_client.force_login(researcher)
    for url in (f"/dashboard/studies/{study.pk}/", f"/dashboard/studies/{study.pk}/prolific/"):
        page = researcher_client.get(url).content.decode()
        assert f'data-minutes="{part.listed_minutes}"' in page and f"{part.time_limit} min</td>" in page
        assert "1.75 USD" in page

    (cell,) = table_cells(study)  # the planner
    assert cell["expected_minutes"] == pytest.approx(estimate.minutes)
    assert cell["planned"] is None or cell["planned_cost"] >= cell["planned"] * estimate.total_pay


def _fits(study: Study) -> list[str]:
    """What does not fit: a cohort part whose estimate outruns its time limit or the sitting cap."""
    problems = []
    for c in study.cohorts.select_related("task", "study"):
        for part in cohort_estimate(c).parts:
            if not part.listed_minutes <= min(study.sitting_minutes, part.time_limit):
                problems.append(f"{c.task.slug} {c.shots}-shot part {part.number}: {part}")
    return problems


@pytest.mark.parametrize("slug", sorted(TASKS))
def test_launch_study_with_defaults_fits_every_task(slug, researcher):
    out, err = StringIO(), StringIO()
    name = f"paper {slug}"
    call_command(
        "launch_study", "--name", name, "--tasks", slug, "--owner", "rita", stdout=out, stderr=err, verbosity=2
    )
    study = Study.objects.get(name=f"paper {slug}")
    assert study.cohorts.count() == 4 and study.expected_minutes is None and study.time_limit_minutes is None
    assert _fits(study) == []
    assert f"{slug} 0-shot: about" in err.getvalue() and "warning" not in err.getvalue()


def test_the_dashboard_form_with_defaults_fits_every_task_and_warns_of_a_figure_far_off(researcher):
    client = Client()
    client.force_login(researcher)
    form = {"name": "paper", "tasks": sorted(TASKS), "shots": ["0", "10", "20", "30"], "chain": "1"}
    form.update(workers_per_cohort="3", pay_rate="12", platform="generic", worker_id_param="worker_id")
    form.update(test_order="file", idle_cap_seconds="300", filter_fraction="0.5", launch="on")
    response = client.post("/dashboard/studies/new/", form, follow=True)
    study = Study.objects.get(name="paper")
    assert study.cohorts.count() == 24 and _fits(study) == []
    html = response.content.decode()
    assert 'data-role="estimates"' in html and 'data-role="override-warning"' not in html
    # The old default of 30 minutes, typed in: warned, far off every task's estimate.
    form.update(name="typed", expected_minutes="30", tasks=["record"], shots=["10"])
    html = client.post("/dashboard/studies/new/", form, follow=True).content.decode()
    assert "your expected duration of 30 minutes is -86% off the estimate of 210 minutes" in html


def test_the_readme_figures_are_the_estimate_functions(researcher):
    """The README's table of a paper-sized study is what ``annotation.estimates`` gives for the official test sets."""
    import math
    import re
    from pathlib import Path

    from annotation.estimates import estimate, test_items_of
    from tasks_data.models import Task

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    table = readme[readme.index("<!-- estimate-table") : readme.index("<!-- /estimate-table -->")]
    rows = [line.split("|")[1:-1] for line in table.splitlines() if line.startswith("| ") and "---" not in line][1:]
    names = {spec.name: slug for slug, spec in TASKS.items()}
    study = Study(pay_rate=Decimal(12), sitting_minutes=60)
    total = Decimal(0)
    for name, _shots, items, minutes, sittings, pay in (map(str.strip, r) for r in rows):
        slug = names[name]
        spec, test_items = TASKS[slug], test_items_of(Task.objects.get(slug=slug))
        shown = []
        for k in (0, 10, 30):
            e = estimate(
                study=study, task_slug=slug, training_items=k * spec.train_rows_per_shot, test_items=test_items
            )
            shown.append((e.training_items + e.test_items, math.ceil(e.minutes - 1e-9), len(e.parts), e))
        assert items == " / ".join(str(n) for n, *_ in shown)
        assert minutes == " / ".join(str(m) for _, m, *_ in shown) + " min"
        first = " / ".join(str(e.parts[0].listed_minutes) for *_, e in shown)
        assert sittings == f"{shown[0][2]} ({first})" and len({p for _, _, p, _ in shown}) == 1
        assert pay == " / ".join(f"${e.total_pay}" for *_, e in shown)
        for k in (0, 10, 20, 30):
            e = estimate(
                study=study, task_slug=slug, training_items=k * spec.train_rows_per_shot, test_items=test_items
            )
            total += 3 * e.total_pay
    assert len(rows) == 6 and f"${total:,}" in re.sub(r"\s+", " ", readme)


def test_launch_study_warns_of_a_duration_far_off_the_estimate(researcher):
    err = StringIO()
    call_command(
        "launch_study",
        *("--name", "typed", "--tasks", "conll03", "--shots", "0", "--expected-minutes", "30", "--owner", "rita"),
        stdout=StringIO(),
        stderr=err,
    )
    assert "warning: conll03 0-shot: your expected duration of 30 minutes is -80% off the estimate of 150" in (
        err.getvalue()
    )


def test_a_time_limit_shorter_than_a_part_is_warned_about(researcher):
    err = StringIO()
    options = ("--name", "tight", "--tasks", "record", "--shots", "10", "--time-limit", "20", "--owner", "rita")
    call_command("launch_study", *options, stdout=StringIO(), stderr=err)
    assert "your time limit of 20 minutes is shorter than a part's estimate of 53 minutes" in err.getvalue()
