"""Every researcher page of a paper-sized study (six tasks at 0, 10, 20 and 30 shots, three annotators a cell, model
rows, a worker at chance, an idle one, an attention check), at 1366x800 and 390x844:

* the page never scrolls sideways (a wide table scrolls inside its own box); the tables of figures (the study
  page's time and pay, the results page's planner) fit their box, stacked on a phone, their caption whole;
* every action (button, button-styled link) has its centre on screen and is what a click there hits, once the
  page is scrolled to it vertically (a row's action too: the page is scrolled to the row, never the table
  sideways);
* axe finds no serious or critical violation;
* on the cohort page an action is applied in place: the row is swapped, the page keeps its scroll position.

Screenshots: artifacts/screenshots/fit-<page>-<width>.png.
"""

from __future__ import annotations

import json

import pytest

from annotation import attention
from annotation.models import Enrollment
from tests.browser import walk
from tests.browser.conftest import SCREENSHOTS
from tests.browser.dashboard_pages import WIDTHS, log_in, make_researcher
from tests.worker_pages.factories import answer_current, cohort_of, enroll, fake_model_rows, make_study

expect = pytest.importorskip("playwright.sync_api").expect
pytestmark = pytest.mark.django_db(transaction=True)

TASKS = ("sst2", "mnli", "conll03", "wikiann", "squad2", "record")
SHOTS = (0, 10, 20, 30)

# Each action's centre after a vertical scroll of the page to it (its table row's middle for a row's action).
ACTIONS_IN_REACH = """() => {
  const out = [];
  const actions = Array.from(document.querySelectorAll(
    'main button, main a.button, main input[type=submit]')).filter(el => el.getClientRects().length > 0
    && !el.closest('details:not([open]) > :not(summary)') && el.checkVisibility({visibilityProperty: true}));
  for (const el of actions) {
    const anchor = el.closest('tr') || el;
    const box = anchor.getBoundingClientRect();
    window.scrollTo(0, window.scrollY + box.top + box.height / 2 - innerHeight / 2);
    const r = el.getBoundingClientRect();
    const x = r.left + r.width / 2, y = r.top + r.height / 2;
    const hit = (x >= 0 && x <= innerWidth && y >= 0 && y <= innerHeight) ? document.elementFromPoint(x, y) : null;
    if (!hit || !(hit === el || el.contains(hit))) {
      out.push((el.textContent || el.value || '').trim().slice(0, 40) + ' @' + Math.round(x) + ',' + Math.round(y));
    }
  }
  window.scrollTo(0, 0);
  return out;
}"""


# A table inside its box: no sideways scroll, its caption (if any) wholly inside the box.
FITS = """sel => { const t = document.querySelector(sel); if (!t) return 'missing';
  const box = t.closest('.table-scroll'), b = box.getBoundingClientRect();
  if (box.scrollWidth > box.clientWidth + 1) return `table ${box.scrollWidth} px in a ${box.clientWidth} px box`;
  const c = t.querySelector('caption'); if (!c) return null;
  const r = c.getBoundingClientRect();
  return r.left >= b.left - 1 && r.right <= b.right + 1 ? null : `caption ${Math.round(r.width)} px`; }"""


def _paper_sized_study(user):
    study = make_study(
        tasks=TASKS, shots=SHOTS, created_by=user, workers_per_cohort=3, name="Paper: six tasks", filter_fraction=0.5
    )
    # A check first (no worker has answered a test item yet): the attention-checks page lists it.
    attention.add_check(
        study,
        task="sst2",
        position=2,
        question="This is an attention check: for this item choose negative.",
        context="Please read the instruction above and follow it.",
        expected="negative",
        actor="alice",
    )
    # Three completed annotators in one cohort of each task (every shot for SST-2): Table 5 has a cell per task.
    filled = [("sst2", k) for k in SHOTS] + [(t, k) for t, k in zip(TASKS[1:], (10, 0, 20, 30, 0), strict=True)]
    for task, shots in filled:
        for i in range(3):
            worker = enroll(cohort_of(study, task, shots), f"{task}-{shots}-{i}")
            while Enrollment.objects.get(pk=worker.pk).state not in (
                Enrollment.State.COMPLETED,
                Enrollment.State.FILTERED,
            ):
                answer_current(worker, right=i != 1)
    ten = cohort_of(study, "mnli", 20)
    guesser = enroll(ten, "GUESSER-5f3a9c2e81")
    while Enrollment.objects.get(pk=guesser.pk).state == Enrollment.State.TRAINING:
        answer_current(guesser, right=False)
    for i in range(2):
        answer_current(enroll(ten, f"TRAINING-{i}"))
    fake_model_rows(study)
    return study, ten, guesser


@pytest.mark.parametrize("size", WIDTHS)
def test_every_researcher_page_fits_keeps_its_actions_in_reach_and_passes_axe(pages, demo_data, size):
    user = make_researcher()
    study, busy, guesser = _paper_sized_study(user)
    page = pages.new(viewport=WIDTHS[size])
    page.context.set_default_timeout(30_000)
    log_in(page, "/dashboard/")
    urls = [
        ("study-list", "/dashboard/"),
        ("tasks", "/dashboard/tasks/"),
        ("study", f"/dashboard/studies/{study.pk}/"),
        ("attention", f"/dashboard/studies/{study.pk}/attention-checks/"),
        ("results", f"/dashboard/studies/{study.pk}/results/"),
    ]
    urls += [(f"cohort-{c.task.slug}-{c.shots}", f"/dashboard/cohorts/{c.pk}/") for c in study.cohorts.all()]
    items = f"/dashboard/studies/{study.pk}/results/items/"
    with_results = study.cohorts.filter(enrollments__state=Enrollment.State.COMPLETED).distinct()
    urls += [(f"items-{c.task.slug}-{c.shots}", f"{items}?cohort={c.pk}") for c in with_results]
    problems = {}
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for name, url in urls:
        page.goto(url)
        expect(page.locator("h1")).to_be_visible()
        found = {}
        overflow = page.evaluate("() => document.documentElement.scrollWidth - innerWidth")
        if overflow > 0:
            found["overflow"] = overflow
        missed = page.evaluate(ACTIONS_IN_REACH)
        if missed:
            found["out of reach"] = missed
        violations = walk.axe(page)
        if violations:
            found["axe"] = violations
        if name == "results":
            page.locator(".table5").screenshot(path=str(SCREENSHOTS / f"fit-table5-{WIDTHS[size]['width']}.png"))
            # Table 5 fits whole: no task's block scrolls sideways (its four shots side by side, even on a phone).
            wide = page.evaluate(
                "() => Array.from(document.querySelectorAll('.table5 .task-block'))"
                ".filter(b => { const s = b.querySelector('.table-scroll'); return s.scrollWidth > s.clientWidth; })"
                ".map(b => b.dataset.task)"
            )
            if wide:
                found["table 5 blocks wider than their box"] = wide
        # The tables of figures fit their box at both widths (stacked on a phone), each caption whole inside it.
        for table in {"study": ["table.estimates"], "results": ["table.planner"]}.get(name, []):
            cut = page.evaluate(FITS, table)
            if cut:
                found[f"{table} wider than its box or its caption cut"] = cut
        if found:
            problems[name] = found
        if name in ("study", "results", "cohort-mnli-20", "attention") or name.startswith("items-sst2-0"):
            page.screenshot(path=str(SCREENSHOTS / f"fit-{name}-{WIDTHS[size]['width']}.png"), full_page=True)
    # One item of a task and its page.
    page.goto(f"{items}?cohort={study.cohorts.get(task__slug='record', shots=0).pk}")
    page.locator("table.items tbody a").first.click()
    expect(page.locator("h1")).to_contain_text("item")
    if page.evaluate("() => document.documentElement.scrollWidth - innerWidth") > 0 or walk.axe(page):
        problems["item"] = {"overflow or axe": walk.axe(page)}
    page.screenshot(path=str(SCREENSHOTS / f"fit-item-record-{WIDTHS[size]['width']}.png"), full_page=True)
    assert not problems, json.dumps(problems, indent=1)

    # An action on the cohort page is applied in place: the row comes back, the page stays where it was.
    page.goto(f"/dashboard/cohorts/{busy.pk}/")
    row = page.locator(f"#enrollment-{guesser.pk}")
    row.scroll_into_view_if_needed()
    row.get_by_label("Reason").fill("answers at random")
    before = page.evaluate("scrollY")
    row.get_by_role("button", name="Filter").click()
    expect(page.locator(f"#enrollment-{guesser.pk} .row-done")).to_have_text("Filtered.")
    assert page.evaluate("scrollY") == before
    assert Enrollment.objects.get(pk=guesser.pk).state == Enrollment.State.FILTERED
    expect(page.locator(f"#enrollment-{guesser.pk}").get_by_role("button", name="Reinstate")).to_be_visible()

    # A page with a message (after a form posted without htmx): the messages pass axe (its "list" rule included).
    page.goto(f"/dashboard/studies/{study.pk}/attention-checks/")
    page.get_by_label("Instruction (shown as the question)").fill("For this item choose positive.")
    page.get_by_label("Text (shown as the item's text)").fill("Please follow the instruction above.")
    page.get_by_label("Expected answer").fill("positive")
    page.get_by_role("button", name="Add check").click()
    expect(page.locator(".messages")).to_contain_text("Attention check added.")
    assert walk.axe(page) == []
    assert page.evaluate("() => document.documentElement.scrollWidth - innerWidth") <= 0
