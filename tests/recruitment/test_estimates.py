"""One estimate per cohort (``annotation.estimates``): the description page, the Prolific listing, the dashboard and the
planner show the same figure; the defaults of launch_study and of the dashboard form give no cohort whose parts
outrun their time limit, for each of the six tasks; a researcher's own figure far off the estimate is warned about."""

import re
from decimal import Decimal
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client

from annotation.estimates import cohort_estimate, duration_text, estimate, test_items_of
from annotation.models import Enrollment, Study
from recruitment.publish import REACH_MINUTES, publish
from results.cells import table_cells
from tasks_data.models import Task
from tasks_data.registry import CLUES_TASKS
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
    # Prolific's clock runs from the start there to the code's submission: the limit here and the minutes around it.
    assert listing["maximum_allowed_time"] == part.time_limit + REACH_MINUTES

    html = arrive(fake, c, "second").client.get("/work/").content.decode()  # the description page
    assert f"Time: about {duration_text(part.listed_minutes)} in all" in html
    assert "pays 1.75 USD" in html and "(as listed on Prolific)" in html
    assert f"{part.time_limit} minutes</span> of opening the study link" in html

    researcher_client = Client()  # the dashboard's study page and the Prolific page
    researcher_client.force_login(researcher)
    for url in (f"/dashboard/studies/{study.pk}/", f"/dashboard/studies/{study.pk}/prolific/"):
        page = researcher_client.get(url).content.decode()
        assert f'data-minutes="{part.listed_minutes}"' in page and f"{part.time_limit} min</td>" in page
        assert "1.75 USD" in page

    (cell,) = table_cells(study)  # the planner
    assert cell["expected_minutes"] == estimate.listed_minutes
    assert cell["planned"] is None or cell["planned_cost"] >= cell["planned"] * estimate.total_pay


def _fits(study: Study) -> list[str]:
    """What does not fit: a cohort part whose estimate outruns its time limit or the sitting cap."""
    problems = []
    for c in study.cohorts.select_related("task", "study"):
        for part in cohort_estimate(c).parts:
            if not part.listed_minutes <= min(study.sitting_minutes, part.time_limit):
                problems.append(f"{c.task.slug} {c.shots}-shot part {part.number}: {part}")
    return problems


@pytest.mark.parametrize("slug", sorted(CLUES_TASKS))
def test_launch_study_with_defaults_fits_every_clues_task(slug, researcher):
    out, err = StringIO(), StringIO()
    name = f"paper {slug}"
    call_command(
        "launch_study", "--name", name, "--tasks", slug, "--owner", "rita", stdout=out, stderr=err, verbosity=2
    )
    study = Study.objects.get(name=f"paper {slug}")
    assert study.cohorts.count() == 4 and study.expected_minutes is None and study.time_limit_minutes is None
    assert _fits(study) == []
    assert f"{slug} 0-shot: about" in err.getvalue() and "warning" not in err.getvalue()


def test_the_dashboard_form_with_defaults_fits_every_clues_task_and_warns_of_a_figure_far_off(researcher):
    client = Client()
    client.force_login(researcher)
    form = {"name": "paper", "tasks": sorted(CLUES_TASKS), "shots": ["0", "10", "20", "30"], "chain": "1"}
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


README = Path(__file__).resolve().parents[2] / "README.md"
README_COLUMNS = ["Task", "Shots", "Items", "Parts (minutes each)", "Time", "Time limit of each part", "Pay at $12/h"]


def readme_table() -> list[dict[str, str]]:
    """The README's table of a paper-sized study, a dict per row (its header's columns)."""
    text = README.read_text()
    table = text[text.index("<!-- estimate-table") : text.index("<!-- /estimate-table -->")]
    lines = [line for line in table.splitlines() if line.startswith("| ")]
    header, rows = [c.strip() for c in lines[0].split("|")[1:-1]], lines[2:]
    assert header == README_COLUMNS
    return [dict(zip(header, (c.strip() for c in row.split("|")[1:-1]), strict=True)) for row in rows]


def estimate_row(study: Study, slug: str, shots: int, test_items: int) -> dict[str, str]:
    """A row of the README's table as the estimate function (what every page and listing reads) gives it."""
    spec = CLUES_TASKS[slug]
    e = estimate(study=study, spec=spec, training_items=shots * spec.train_rows_per_shot, test_items=test_items)
    return {
        "Task": spec.name,
        "Shots": str(shots),
        "Items": str(e.items),
        "Parts (minutes each)": f"{len(e.parts)} ({' + '.join(str(p.listed_minutes) for p in e.parts)})",
        "Time": f"{e.listed_minutes} min",
        "Time limit of each part": f"{' / '.join(str(p.time_limit) for p in e.parts)} min",
        "Pay at $12/h": f"${e.total_pay}",
    }


def test_the_readme_table_is_the_estimate_function_cell_by_cell(researcher):
    """Every cell of the README's table of a paper-sized study, minutes included, is what ``annotation.estimates``
    gives for the official test sets at the defaults; its time is the sum of its parts' minutes, as a worker and
    Prolific read them; and the study's total is the table's."""
    tests = {slug: test_items_of(Task.objects.get(slug=slug)) for slug in CLUES_TASKS}
    if tests["sst2"] != 210:
        pytest.skip("the README's table is of the official test sets (the demo data is imported)")
    study = Study(pay_rate=Decimal(12), sitting_minutes=60)
    rows = readme_table()
    expected = [estimate_row(study, slug, k, tests[slug]) for slug in CLUES_TASKS for k in Study.SHOT_CONDITIONS]
    assert [(r["Task"], r["Shots"]) for r in rows] == [(r["Task"], r["Shots"]) for r in expected]
    for shown, computed in zip(rows, expected, strict=True):
        for column in README_COLUMNS:
            assert shown[column] == computed[column], (
                f"README, {shown['Task']} {shown['Shots']}-shot, {column}: {shown[column]!r}; "
                f"the estimate: {computed[column]!r}"
            )
        parts = [int(m) for m in re.findall(r"\d+", shown["Parts (minutes each)"].split("(", 1)[1])]
        assert f"{sum(parts)} min" == shown["Time"], f"{shown['Task']} {shown['Shots']}-shot: the time is its parts'"
    total = sum((3 * Decimal(r["Pay at $12/h"].lstrip("$")) for r in rows), Decimal(0))
    assert f"72 annotators, ${total:,} in rewards" in re.sub(r"\s+", " ", README.read_text())


def test_a_figure_of_ones_own_is_listed_as_its_parts_add_up(researcher):
    """``--expected-minutes 100`` on ReCoRD 10-shot: the parts share out the 100 minutes (the README says so), on
    launch_study's lines, the study page and the worker's description page."""
    err = StringIO()
    options = ("--name", "own", "--tasks", "record", "--shots", "10", "--expected-minutes", "100", "--owner", "rita")
    call_command("launch_study", *options, stdout=StringIO(), stderr=err, verbosity=2)
    study = Study.objects.get(name="own")
    (c,) = study.cohorts.select_related("task", "study")
    est = cohort_estimate(c)
    minutes = [p.listed_minutes for p in est.parts]
    assert sum(minutes) == est.listed_minutes == 100 and max(minutes) - min(minutes) <= 1
    listed = " + ".join(map(str, minutes))
    assert f"record 10-shot: about 100 min (your figure) in {len(minutes)} part(s) of {listed} min" in err.getvalue()
    if len(minutes) == 4:  # the official test set (the README's example)
        assert f"ReCoRD 10-shot is listed as {listed} = 100 minutes" in re.sub(r"\s+", " ", README.read_text())
    client = Client()
    client.force_login(researcher)
    page = client.get(f"/dashboard/studies/{study.pk}/").content.decode()
    assert [int(m) for m in re.findall(r'data-minutes="(\d+)"', page)] == minutes
    assert est.total_pay == Decimal(12) * 100 / 60


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


def test_a_prolific_worker_never_gets_a_limit_past_the_maximum_prolific_listed(fake, researcher, clock):
    """Measured data lengthen a cohort's limit after its listing was published, with a maximum time Prolific keeps:
    a later worker is given the listed limit (the maximum less the minutes to reach the study and submit the code),
    on the page and on the clock, so that Prolific never times them out before the limit here."""
    trim_test_set("sst2", 3)
    study = make_study(
        shots=[0],
        launch=False,
        created_by=researcher,
        completion_code="CDONE",
        screenout_code="CSOUT",
        workers_per_cohort=5,
        filter_fraction=None,
    )
    publish(study, site_url=SITE)
    c = cohort(study, "sst2", 0)
    listed = cohort_estimate(c).part(1).time_limit
    assert fake.studies[c.prolific.prolific_study_id]["maximum_allowed_time"] == listed + REACH_MINUTES
    for name in ("slow1", "slow2", "slow3"):  # each takes 25 minutes for the three items, breaks included
        worker = arrive(fake, c, name)
        while (state := worker.current().json())["item"] is not None:
            clock.advance(25 * 60 / 3)
            worker.answer(state["item"]["id"], gold_answer(worker.example(state["item"]["id"])))
        assert state["step"] == "done"
    measured = cohort_estimate(c)
    assert measured.measured and measured.part(1).time_limit > listed
    later = arrive(fake, c, "later")
    assert Enrollment.objects.get(pk=later.enrollment_id).timer_minutes == listed
    html = later.client.get("/work/").content.decode()
    assert f"{listed} minutes</span> of opening the study link" in html
