"""Joins Prolific could not vouch for hold no place and lock nobody out (fake Prolific, real HTTP surface).

While Prolific cannot be asked, a join is admitted *unverified*: it waits outside the cohort's places (at most
``protocol.MAX_UNVERIFIED_WAITING`` of them), so forged joins never make a genuine participant see "full"; the
sync expires the ones it cannot match whatever they did; the results and the study grid count only verified
annotators; and an unverified enrollment under a worker id never keeps the id's holder out of the task's other
cohorts.
"""

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client

from annotation import selectors
from annotation.models import AuditEvent, Enrollment, Worker
from annotation.protocol import MAX_UNVERIFIED_WAITING, CohortStatus, cohort_status
from tests.annotation.factories import WorkerClient, cohort, pid_for
from tests.recruitment.journeys import FORGED, arrive, finish, forged_join, published

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clues")]


def age_all(minutes: int, **filters) -> None:
    for e in Enrollment.objects.filter(**filters):
        Enrollment.objects.filter(pk=e.pk).update(enrolled_at=e.enrolled_at - timedelta(minutes=minutes))


def grid_row(study, c) -> dict:
    (row,) = [r for r in selectors.study_grid(study) if r["cohort"].pk == c.pk]
    return row


def grid_cell(client, study, c) -> str:
    """The study grid's cell of a cohort, as the dashboard shows it."""
    page = client.get(f"/dashboard/studies/{study.pk}/grid/").content.decode()
    cell = page[page.index(f'data-cohort="{c.pk}"') :]
    return cell[: cell.index("</td>")]


def test_three_forged_joins_during_an_outage_then_the_genuine_participant_gets_in_and_alone_counts(fake, researcher):
    study = published(fake, researcher, shots=(0,), workers_per_cohort=3)
    c = cohort(study, "sst2", 0)
    forgers = [forged_join(fake, c, f"sybil-{n}", n) for n in range(3)]
    for forger in forgers:
        assert forger.join_response.status_code == 302
        finish(forger)  # a sybil who finishes the whole test step (31-71 s for 220 SST-2 items)
    assert set(Enrollment.objects.values_list("state", "verification")) == {("completed", "unverified")}

    genuine, pid, sid = arrive(fake, c, "genuine")  # Prolific answers again
    assert genuine.join_response.status_code == 302, "three forged joins never fill a 3-place cohort"
    finish(genuine)
    e = Enrollment.objects.get(worker__external_id=pid)
    assert (e.state, e.verification) == ("completed", "verified")

    client = Client()
    client.force_login(researcher)
    results = client.get(f"/api/studies/{study.pk}/results/").json()
    (cell,) = results["cells"]
    assert cell["n"] == 1, "the results count only the verified annotator"
    api_grid = {row["id"]: row for row in client.get(f"/api/studies/{study.pk}/").json()["cohorts"]}[c.pk]
    row = grid_row(study, c)
    assert api_grid["completed"] == row["completed"] == cell["n"] == 1, "the grid counts what the results count"
    assert (row["enrolled"], row["unverified"]) == (1, 3)
    assert cohort_status(c, enrolled=row["enrolled"], completed=row["completed"]) is CohortStatus.OPEN
    cell = grid_cell(client, study, c)
    assert 'class="completed">1<' in cell and 'class="enrolled">1 / 3<' in cell and ">open<" in cell
    assert 'class="unverified">3<' in cell

    # The sync cannot match the forged sessions: past the grace, it expires them although they completed.
    age_all(16, verification="unverified")
    out = StringIO()
    call_command("sync_prolific", study=study.pk, stdout=out)
    states = dict(Enrollment.objects.values_list("worker__external_id", "state"))
    assert [states[pid_for(f"sybil-{n}")] for n in range(3)] == ["expired"] * 3
    assert AuditEvent.objects.filter(action="expire unverified", from_state="completed").count() == 3
    row = grid_row(study, c)
    assert (row["enrolled"], row["completed"], row["unverified"]) == (1, 1, 0)
    assert client.get(f"/api/studies/{study.pk}/results/").json()["cells"][0]["n"] == 1
    # Two more genuine participants fill the cohort: only now is it done.
    for name in ("second", "third"):
        worker, _, _ = arrive(fake, c, name)
        assert worker.join_response.status_code == 302
        finish(worker)
    row = grid_row(study, c)
    assert row["completed"] == 3 and client.get(f"/api/studies/{study.pk}/results/").json()["cells"][0]["n"] == 3
    assert cohort_status(c, enrolled=row["enrolled"], completed=row["completed"]) is CohortStatus.DONE


def test_unverified_joins_are_capped_per_cohort_and_never_make_anyone_see_full(fake, researcher):
    study = published(fake, researcher, shots=(0,), workers_per_cohort=2)
    c = cohort(study, "sst2", 0)
    for n in range(MAX_UNVERIFIED_WAITING):
        assert forged_join(fake, c, f"waiting-{n}", n).join_response.status_code == 302
    fake.down = True
    sid = "0123456789abcdef0123ffff"
    late = Client().get(
        c.join_path, {"PROLIFIC_PID": pid_for("late"), "STUDY_ID": c.prolific.prolific_study_id, "SESSION_ID": sid}
    )
    fake.down = False
    text = late.content.decode()
    assert late.status_code == 403 and "in a few minutes" in text and "full" not in text
    assert not Worker.objects.filter(external_id=pid_for("late")).exists(), "nothing stored for it"
    assert Enrollment.objects.filter(verification="unverified").count() == MAX_UNVERIFIED_WAITING
    for name in ("one", "two"):  # Prolific answers again: verified participants take the places
        worker, _, _ = arrive(fake, c, name)
        assert worker.join_response.status_code == 302
    third = fake.start_submission(c.prolific.prolific_study_id, pid_for("three"), force=True)
    full = Client().get(
        c.join_path,
        {"PROLIFIC_PID": pid_for("three"), "STUDY_ID": c.prolific.prolific_study_id, "SESSION_ID": third},
    )
    assert full.status_code == 409, "full: the verified participants hold both places"


def test_a_squat_never_locks_its_victim_out_of_the_tasks_other_cohorts(fake, researcher):
    study = published(fake, researcher, shots=(0, 10), workers_per_cohort=3)
    c10, c0 = cohort(study, "sst2", 10), cohort(study, "sst2", 0)
    squat = forged_join(fake, c10, "victim", 1)  # someone who knows the victim's PID, during an outage
    assert squat.join_response.status_code == 302
    victim, pid, sid = arrive(fake, c0, "victim")  # the victim, with their own session, in another cohort
    assert victim.join_response.status_code == 302, victim.join_response.content.decode()[:400]
    mine = Enrollment.objects.get(worker__external_id=pid, cohort=c0)
    assert (mine.state, mine.verification, mine.platform_session) == ("testing", "verified", sid)
    taken = Enrollment.objects.get(worker__external_id=pid, cohort=c10)
    assert (taken.state, taken.verification) == ("withdrawn", "superseded")
    assert "another cohort of the task" in AuditEvent.objects.get(enrollment=taken, action="withdraw unverified").reason
    assert squat.current().json().get("item") is None, "the squatter's browser has no work any more"
    assert victim.current().json()["item"] is not None


def test_an_expired_squat_never_locks_its_victim_out_either(fake, researcher):
    study = published(fake, researcher, shots=(0, 10), workers_per_cohort=3)
    c10, c0 = cohort(study, "sst2", 10), cohort(study, "sst2", 0)
    forged_join(fake, c10, "late-victim", 2)
    age_all(16)
    call_command("sync_prolific", study=study.pk, stdout=StringIO())
    assert Enrollment.objects.get().state == "expired"
    victim, pid, _ = arrive(fake, c0, "late-victim")
    assert victim.join_response.status_code == 302
    assert Enrollment.objects.get(worker__external_id=pid, cohort=c0).verification == "verified"


def test_a_participant_whose_own_unverified_session_prolific_confirms_takes_part_once(fake, researcher):
    """Rule 1 still holds for the genuine holder: joined one cohort unverified (Prolific down), then another."""
    study = published(fake, researcher, shots=(0, 10), workers_per_cohort=3)
    c10, c0 = cohort(study, "sst2", 10), cohort(study, "sst2", 0)
    fake.down = True
    first, pid, _ = arrive(fake, c10, "twice")
    fake.down = False
    assert first.join_response.status_code == 302
    assert Enrollment.objects.get(worker__external_id=pid).verification == "unverified"
    second, _, _ = arrive(fake, c0, "twice")  # a second Prolific study of the same task, own session too
    assert second.join_response.status_code == 403
    assert list(Enrollment.objects.values_list("cohort_id", "state")) == [(c10.pk, "training")]


def test_a_forged_join_elsewhere_during_an_outage_asks_the_holder_to_come_back(fake, researcher):
    study = published(fake, researcher, shots=(0, 10), workers_per_cohort=3)
    c10, c0 = cohort(study, "sst2", 10), cohort(study, "sst2", 0)
    forged_join(fake, c10, "unlucky", 3)
    sid = fake.start_submission(c0.prolific.prolific_study_id, pid_for("unlucky"))
    fake.down = True
    page = WorkerClient(
        c0, params={"PROLIFIC_PID": pid_for("unlucky"), "STUDY_ID": c0.prolific.prolific_study_id, "SESSION_ID": sid}
    ).join_response
    fake.down = False
    assert page.status_code == 403 and "in a few minutes" in page.content.decode()
    assert Enrollment.objects.get().platform_session == FORGED.format(3), "nothing changed yet"
    again = WorkerClient(
        c0, params={"PROLIFIC_PID": pid_for("unlucky"), "STUDY_ID": c0.prolific.prolific_study_id, "SESSION_ID": sid}
    ).join_response
    assert again.status_code == 302, "once Prolific answers, the holder gets in"
