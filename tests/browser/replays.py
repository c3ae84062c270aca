"""Journeys through the pages that more than one browser test runs: the researcher's (tests/browser/test_dashboard.py)
and an SST-2 worker's by keyboard (test_worker_journeys.py), both replayed under a CSP listener by test_csp.py."""

from __future__ import annotations

import json

import pytest

from annotation.models import Answer, Enrollment, Study
from tests.annotation.factories import done_code, pid_for, screen_out_code
from tests.browser.dashboard_pages import make_researcher
from tests.browser.journeys import after_item, current_example, item_handle, stored_answer, view, wait_view
from tests.worker_pages.factories import answer_current, cohort_of, enroll, fake_model_rows, make_study

expect = pytest.importorskip("playwright.sync_api").expect


def _cell(page, task: str, shots: int):
    return page.locator(f'#grid td[data-task="{task}"][data-shots="{shots}"]')


def join_page(page, cohort, query: str):
    """Open the cohort's join link with ``query`` (the platform's parameters): the description page."""
    page.goto(f"/join/{cohort.join_token}/{query}")
    wait_view(page, "description")


def researcher_journey(pages, shoot, settings):
    """The researcher's whole way in Chromium (the demo data imported): log in, create a study, watch the grid,
    filter, download. tests/browser/test_dashboard.py runs it; test_csp.py replays it under a CSP listener."""
    make_researcher()
    page = pages.new()
    page.goto("/dashboard/")
    expect(page).to_have_url(page.url)  # redirected to the login page
    assert "/accounts/login/" in page.url
    shoot(page, "20-login")
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password").fill("alice-pw-2024")
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="Studies")).to_be_visible()

    # The form: errors from the form and from services.create_study, each at its field (answered 400).
    pages.expect_error(r"/dashboard/studies/new/: console\.error: Failed to load resource: .* status of 400")
    page.get_by_role("link", name="New study").first.click()
    # Without a Prolific token a new study recruits through the generic link; each platform's own fields
    # show only while it is chosen.
    manual_review = page.get_by_label("Prolific: review every submission by hand")
    expect(page.get_by_label("generic link", exact=True)).to_be_checked()
    expect(page.get_by_label("Worker-id pattern")).to_be_visible()
    expect(manual_review).to_be_hidden()
    page.get_by_label("Prolific", exact=True).check()
    expect(manual_review).to_be_visible()
    expect(page.get_by_label("Worker-id pattern")).to_be_hidden()
    shoot(page, "21-study-new-prolific")
    page.get_by_label("Name").fill("Pilot <SST-2> & friends")
    page.get_by_label("Chain").fill("5")
    page.get_by_label("Completion code").fill("SAME")
    page.get_by_label("Screen-out code").fill("SAME")
    page.get_by_role("button", name="Create the study").click()
    expect(page.locator("#field-tasks .errorlist")).to_contain_text("choose at least one task")
    page.get_by_label("SST-2").check()
    page.get_by_role("button", name="Create the study").click()
    expect(page.locator("#field-chain .errorlist")).to_contain_text("no chain 5")
    expect(page.locator("#field-screenout_code .errorlist")).to_contain_text("must differ")
    shoot(page, "21-study-new-errors")
    page.get_by_label("Chain").fill("1")
    page.get_by_label("Screen-out code").fill("SCREENED")
    for k in ("20 shots", "30 shots"):
        page.get_by_label(k).uncheck()
    page.get_by_label("Workers per cohort").fill("2")
    page.get_by_label("Filter: fraction of the others' mean").fill("")
    page.get_by_label("Launch every cohort now").check()
    page.get_by_role("button", name="Create the study").click()
    expect(page.locator(".messages")).to_contain_text("Created the study")
    expect(page.locator("h1")).to_contain_text("Pilot <SST-2> & friends")
    study = Study.objects.get(name="Pilot <SST-2> & friends")
    assert study.tasks == ["sst2"] and study.shots == [0, 10] and study.workers_per_cohort == 2
    expect(_cell(page, "sst2", 0).locator(".enrolled")).to_have_text("0 / 2")
    link = page.locator(f"#link-{cohort_of(study, 'sst2', 10).pk}").input_value()
    assert link.endswith("?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}")
    page.locator(f'[data-copy="#link-{cohort_of(study, "sst2", 10).pk}"]').click()
    shoot(page, "22-study")

    # A worker joins through the copied link (a second browser), others progress through the services:
    # the grid follows by itself (htmx polling every 3 s).
    worker_page = pages.new()
    worker_page.goto(
        link.replace("{{%PROLIFIC_PID%}}", pid_for("GRID-W1"))
        .replace("{{%STUDY_ID%}}", "ST")
        .replace("{{%SESSION_ID%}}", "SE1")
    )
    expect(worker_page.locator("#stage")).to_have_attribute("data-view", "description")
    expect(_cell(page, "sst2", 10).locator(".enrolled")).to_have_text("1 / 2", timeout=10_000)
    w10 = Enrollment.objects.get(worker__external_id=pid_for("GRID-W1"))
    for _ in range(3):
        answer_current(w10)
    zero = cohort_of(study, "sst2", 0)
    workers = [enroll(zero, f"ZERO-{i}") for i in range(2)]
    for _ in range(5):
        answer_current(workers[0])
    expect(_cell(page, "sst2", 0).locator(".test-done")).to_have_text("5", timeout=10_000)
    expect(_cell(page, "sst2", 0).locator(".enrolled")).to_have_text("2 / 2")
    for worker in workers:
        while Enrollment.objects.get(pk=worker.pk).state != Enrollment.State.COMPLETED:
            answer_current(worker, right=worker is workers[0])
    expect(_cell(page, "sst2", 0).locator(".completed")).to_have_text("2", timeout=10_000)
    shoot(page, "23-study-progress")

    # The cohort page: filter the 10-shot worker, with a reason.
    _cell(page, "sst2", 10).get_by_role("link").click()
    row = page.locator(f"#enrollment-{w10.pk}")
    expect(row.locator(".sparkline")).to_be_visible()
    row.get_by_placeholder("reason").fill("answers too fast, <not> reading")
    row.get_by_role("button", name="Filter").click()
    # Applied in place: the row comes back with what was done (the page is not reloaded).
    expect(page.locator(f"#enrollment-{w10.pk} .row-done")).to_have_text("Filtered.")
    expect(page.locator(f"#enrollment-{w10.pk} .badge")).to_have_text("filtered")
    page.reload()
    expect(page.locator("table").last).to_contain_text("answers too fast, <not> reading")
    shoot(page, "24-cohort")
    worker_page.reload()
    # The feedback of the last training answer comes first (read from the stored answer), then the end.
    expect(worker_page.locator("#stage")).to_have_attribute("data-view", "feedback")
    worker_page.locator('[data-role="next"]').click()
    expect(worker_page.locator("#stage")).to_have_attribute("data-view", "filtered")
    # The cohort's own screen-out code: the study's "SCREENED" then random characters.
    code = screen_out_code(cohort_of(study, "sst2", 10))
    assert code.startswith("SCREENED") and len(code) == len("SCREENED") + 10
    expect(worker_page.locator("#code")).to_have_text(code)

    # Results: Table 5's shape, charts, agreement, downloads.
    fake_model_rows(study)  # completed baseline runs at 10, 20 and 30 shots
    page.goto(f"/dashboard/studies/{study.pk}/results/")
    expect(page.locator(".table5 tbody tr").first).to_contain_text("±")
    expect(page.locator(".chart svg")).to_have_count(1)
    # Nobody of the 10-shot cohort is in the results (screened out): the model rows are listed apart, not
    # charted beside humans they have no gap to (and their name is text, not markup).
    expect(page.locator(".chart svg")).not_to_contain_text("FT BERT-Base")
    expect(page.locator(".unpaired-models")).to_contain_text("FT BERT-Base <b>")
    expect(page.locator("main")).to_contain_text("No model row stands beside a human cohort here")
    shoot(page, "25-results")
    contents = {}
    for fmt, label in (("csv", "CSV"), ("json", "JSON"), ("md", "Markdown"), ("tex", "LaTeX")):
        with page.expect_download() as download:
            page.get_by_role("link", name=f"Download {label}").click()
        assert download.value.suggested_filename == f"study{study.pk}_human_table.{fmt}"
        contents[fmt] = open(download.value.path(), encoding="utf-8").read()
    assert "SST-2" in contents["csv"] and "SST-2" in contents["md"]
    assert json.loads(contents["json"])
    assert "\\begin{table}" in contents["tex"]
    page.goto("/dashboard/")
    expect(page.locator("table.data")).to_contain_text("Pilot <SST-2> & friends")
    shoot(page, "26-study-list")


def sst2_worker_keyboard_only(pages, shoot):
    """A worker of an SST-2 cohort, keyboard only, to the completion code (the demo data imported).
    tests/browser/test_worker_journeys.py runs it; test_csp.py replays it under a CSP listener."""
    study = make_study(tasks=("sst2",), shots=(10,), platform="generic", worker_id_param="wid")
    cohort = cohort_of(study, "sst2", 10)
    page = pages.new()
    join_page(page, cohort, "?wid=KEYS-1")
    for _ in range(30):  # Tab to the Start button
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.textContent.trim()") == "Start":
            break
    page.keyboard.press("Enter")
    wait_view(page, "item")
    shoot(page, "06-widget-label")
    labels = ["positive", "negative"]
    enrollment = Enrollment.objects.get(worker__external_id="KEYS-1")
    first_feedback = True
    while view(page) == "item":
        example = current_example(page)
        shown = item_handle(page)  # the handle the page posts
        # A number key chooses (nothing is sent yet), Enter submits.
        page.keyboard.press(str(labels.index(example.gold[0]) + 1))
        expect(page.locator("[data-choice]")).to_have_text(example.gold[0])
        assert stored_answer(enrollment.pk, example.pk) is None
        page.keyboard.press("Enter")
        new_view = after_item(page, shown)
        assert stored_answer(enrollment.pk, example.pk).texts == [example.gold[0]]
        if new_view == "feedback":
            expect(page.locator('[data-role="next"]')).to_be_focused()
            if first_feedback:
                shoot(page, "07-feedback-label")
                first_feedback = False
            page.keyboard.press("Enter")
            page.wait_for_function("() => document.getElementById('stage').dataset.view !== 'feedback'")
    wait_view(page, "done")
    expect(page.locator("#code")).to_have_text(done_code(cohort))
    shoot(page, "08-completion-code")
    assert Answer.objects.filter(enrollment=enrollment).count() == 10 + 12
