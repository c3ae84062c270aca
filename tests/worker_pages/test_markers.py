"""The data's markers as a worker reads them, on every worker page of every task: ReCoRD's ``@placeholder`` as the
blank (the task's description says "a sentence with a blank (@placeholder)"), ``@highlight`` as a bullet; never
the raw marker (the description, the instructions on item and feedback pages, the join preview)."""

from __future__ import annotations

import re

import pytest
from django.template.loader import render_to_string
from django.test import Client

from tests.worker_pages.factories import answer_current, bind, cohort_of, enroll, make_study
from worker_pages.templatetags.worker_text import as_read

ALL_TASKS = ("sst2", "mnli", "conll03", "wikiann", "squad2", "record")
MARKERS = ("@placeholder", "@highlight")


def _text(html: str) -> str:
    """What a person reads: the page without its tags (attributes included) and its script."""
    return re.sub(r"<[^>]*>", " ", re.sub(r"<script.*?</script>", " ", html, flags=re.S))


def test_the_filter_shows_the_blank_and_the_bullet_and_escapes_the_rest():
    html = str(as_read("a <b>blank</b> (@placeholder) & @highlight done"))
    assert "@placeholder" not in html and "@highlight" not in html
    assert '<span class="blank" role="img" aria-label="blank"><span class="blank-empty">?</span></span>' in html
    assert '<span class="hl-bullet" aria-hidden="true">▸</span>' in html
    assert "&lt;b&gt;blank&lt;/b&gt;" in html and "&amp;" in html and "<b>" not in html
    assert str(as_read("")) == "" and str(as_read("plain")) == "plain"


@pytest.mark.parametrize("task", ALL_TASKS)
def test_no_worker_page_shows_a_raw_marker(demo_data, task):
    study = make_study(tasks=(task,), shots=(10,), filter_fraction=None)
    cohort = cohort_of(study, task, 10)
    # The preview a platform shows before a worker accepts (MTurk's): the same description.
    preview = render_to_string("annotation/join_preview.html", {"spec": cohort.task.spec, "shots": 10, "study": study})
    enrollment = enroll(cohort)
    client = bind(Client(), enrollment, started=False)
    pages = {"preview": preview, "description": client.get("/work/").content.decode()}
    bind(client, enrollment)
    pages["training item"] = client.get("/work/").content.decode()
    answer_current(enrollment)
    pages["feedback"] = client.get("/work/").content.decode()
    assert ": preview" in pages["preview"] and "what to do" in pages["description"]
    assert 'class="feedback' in pages["feedback"] and "Instructions" in pages["feedback"]
    for name, html in pages.items():
        shown = _text(html)
        assert not [m for m in MARKERS if m in shown], (task, name)
    if task == "record":
        assert 'class="blank" role="img" aria-label="blank"' in pages["description"]
        assert 'class="blank" role="img" aria-label="blank"' in pages["training item"]  # the instructions'
