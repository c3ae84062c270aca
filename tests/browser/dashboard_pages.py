"""The dashboard pages in the browser tests: the widths they are seen at, a researcher who logs in, a study with
something on every page, and the check that a page never scrolls sideways."""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth.models import Group, User
from django.utils import timezone

from annotation.models import RESEARCHERS_GROUP, Answer, Cohort, Enrollment
from tests.worker_pages.factories import answer_current, cohort_of, enroll, fake_model_rows, make_study

DESKTOP = {"width": 1366, "height": 800}
MOBILE = {"width": 390, "height": 844}
WIDTHS = {"desktop": DESKTOP, "phone": MOBILE}
PASSWORD = "alice-pw-2024"


def make_researcher() -> User:
    user = User.objects.create_user("alice", password=PASSWORD)
    user.groups.add(Group.objects.get_or_create(name=RESEARCHERS_GROUP)[0])
    return user


def log_in(page, next_url: str):
    page.goto(f"/accounts/login/?next={next_url}")
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"**{next_url}")


def no_sideways_scroll(page):
    """The page itself fits the viewport: only a table's own box may scroll sideways."""
    overflow = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
    culprits = (
        []
        if overflow <= 0
        else page.evaluate(
            "() => Array.from(document.querySelectorAll('body *'))"
            ".filter(e => e.getBoundingClientRect().right > window.innerWidth + 1)"
            ".slice(0, 5).map(e => e.tagName + '.' + e.className)"
        )
    )
    assert overflow <= 0, f"{page.url} is {overflow}px wider than the viewport: {culprits}"


def busy_study(user):
    """A study with something on every page: progress, a worker at chance, an idle one, results."""
    study = make_study(
        tasks=("sst2", "conll03"),
        shots=(0, 10),
        created_by=user,
        workers_per_cohort=3,
        name="Pilot: SST-2 and CoNLL03",
        filter_fraction=0.5,
    )
    zero = cohort_of(study, "sst2", 0)
    for i in range(3):
        worker = enroll(zero, f"DONE-{i}")
        while Enrollment.objects.get(pk=worker.pk).state != Enrollment.State.COMPLETED:
            answer_current(worker, right=i != 1)
    ten = cohort_of(study, "sst2", 10)
    guesser = enroll(ten, "GUESSER-5f3a9c2e81")
    while Enrollment.objects.get(pk=guesser.pk).state == Enrollment.State.TRAINING:
        answer_current(guesser, right=False)
    quiet = enroll(ten, "QUIET-77b1d0")
    answer_current(quiet)
    an_hour_ago = timezone.now() - timedelta(hours=1)
    Answer.objects.filter(enrollment=quiet).update(answered_at=an_hour_ago)
    Enrollment.objects.filter(pk=quiet.pk).update(enrolled_at=an_hour_ago, current_served_at=an_hour_ago)
    Cohort.objects.filter(pk=cohort_of(study, "conll03", 10).pk).update(launched_at=None)
    fake_model_rows(study)
    return study, ten, guesser, quiet
