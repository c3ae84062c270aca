"""Money moves only for work, on a study in parts published on the fake Prolific, attacked as a dishonest worker and a
second researcher would, through the real HTTP surface: codes that earn nothing alone, every submission reconciled, a
part started only from its own study, sealed parts, pay from a part's start, a bonus base that no one can move, and a
cohort that takes no one before it is published. The clock is moved, never slept."""

from decimal import Decimal
from io import StringIO

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.test import Client

from annotation.attention import add_check
from annotation.estimates import cohort_estimate
from annotation.models import Answer, AttentionCheck, AuditEvent, Enrollment, PartTiming
from recruitment.bonuses import pay_bonuses, payable_parts
from recruitment.client import ProlificError
from recruitment.models import BonusPayment, ProlificPart, ProlificReview
from recruitment.publish import publish
from recruitment.sync import sync
from tests.annotation.factories import (
    WorkerClient,
    cohort,
    done_code,
    gold_answer,
    make_study,
    pid_for,
    screen_out_code,
    trim_test_set,
)
from tests.recruitment.fake_prolific import TOKEN, Refused
from tests.recruitment.journeys import arrive, published

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clues")]
SITE = "https://clues.example"
PACE = 8  # seconds an SST-2 item takes: the task's own figure


def two_parts(fake, researcher, *, shots=(0,), test_items=150, **options):
    """SST-2 with ``test_items`` test items (150: both parts full) and a sitting cap of 10 minutes (75 items of 8 s):
    two parts, each its own Prolific study, published."""
    trim_test_set("sst2", test_items)
    options.setdefault("workers_per_cohort", 2)
    study = make_study(
        shots=list(shots),
        launch=False,
        created_by=researcher,
        sitting_minutes=10,
        pay_rate=Decimal("12"),
        completion_code="QDONE",
        screenout_code="QSOUT",
        **options,
    )
    publish(study, site_url=SITE)
    return study


def studies_of(c) -> dict[int, str]:
    return dict(ProlificPart.objects.filter(cohort=c).values_list("number", "prolific_study_id"))


def open_link(c, pid: str, study_id: str, sid: str) -> WorkerClient:
    return WorkerClient(c, params={"PROLIFIC_PID": pid, "STUDY_ID": study_id, "SESSION_ID": sid})


def answer(worker: WorkerClient, clock, count: int, pace: float = PACE) -> dict:
    for _ in range(count):
        state = worker.current().json()
        clock.advance(pace)
        handle = state["item"]["id"]
        assert worker.answer(handle, gold_answer(worker.example(handle))).status_code == 201
    return worker.current().json()


def part_one(fake, c, name: str, clock, pace: float = PACE) -> tuple[WorkerClient, str, str]:
    """A participant takes part 1 on Prolific, does it, and submits the code the page gave them."""
    pid = pid_for(name)
    sid = fake.start_submission(studies_of(c)[1], pid)
    worker = open_link(c, pid, studies_of(c)[1], sid)
    assert worker.join_response.status_code == 302, worker.join_response.content.decode()[:300]
    while (state := worker.current().json())["item"] is not None:
        answer(worker, clock, 1, pace)
    assert state["step"] == "between"
    fake.submit(sid, state["completion"]["code"])
    return worker, pid, sid


def test_codes_differ_per_part_and_cohort_and_no_code_gives_away_another(fake, researcher):
    study = two_parts(fake, researcher, shots=(0, 10))
    c0, c10 = cohort(study, "sst2", 0), cohort(study, "sst2", 10)
    codes = [
        c["code"]
        for c_ in (c0, c10)
        for study_id in studies_of(c_).values()
        for c in fake.studies[study_id]["completion_codes"]
    ]
    parts = len(studies_of(c0)) + len(studies_of(c10))
    assert parts == 5 and len(codes) == 2 * parts and len(set(codes)) == len(codes), "each part of each cohort: two"
    for code in codes:
        assert code.startswith(("QDONE", "QSOUT")) and code.isalnum() and len(code) == 15
        others = [c for c in codes if c != code]
        # No code is another plus a suffix (QDONEP1 gave away QDONE), nor the study's prefix alone.
        assert not any(o.startswith(code) or code.startswith(o) for o in others) and code not in ("QDONE", "QSOUT")
    assert done_code(c0, 1) != done_code(c0, 2) != done_code(c10, 2)
    # The researcher's study page lists every code, per cohort and part.
    page = Client()
    page.force_login(researcher)
    html = page.get(f"/dashboard/studies/{study.pk}/").content.decode()
    assert all(code in html for code in codes) and 'data-role="codes"' in html


def test_a_screen_out_code_alone_earns_only_prolifics_minimum_and_a_stranger_is_reconciled(fake, researcher, clock):
    study = two_parts(fake, researcher, shots=(10,), workers_per_cohort=5, filter_floor=0.9)
    c = cohort(study, "sst2", 10)
    first = studies_of(c)[1]
    (screen_out,) = [
        a
        for code in fake.studies[first]["completion_codes"]
        for a in code["actions"]
        if a["action"] == "FIXED_SCREEN_OUT_PAYMENT"
    ]
    assert screen_out["fixed_screen_out_reward"] == 14, "Prolific's minimum (US cents): nothing more for a code"
    # A filtered worker passes the screen-out code on; a participant who never opens the platform submits it, and
    # another submits the part's completion code passed on by an honest finisher.
    weak = pid_for("weak")
    weak_sid = fake.start_submission(first, weak)
    weak_worker = open_link(c, weak, first, weak_sid)
    while (state := weak_worker.current().json())["item"] is not None:
        handle = state["item"]["id"]
        example = weak_worker.example(handle)
        wrong = [next(label for label in ("positive", "negative") if label != example.gold[0])]
        clock.advance(20)
        weak_worker.answer(handle, wrong)
    assert state["step"] == "filtered"
    shared_screen_out = state["completion"]["code"]
    fake.submit(weak_sid, shared_screen_out)
    honest, _, _ = part_one(fake, c, "honest", clock)
    shared_done = honest.current().json()["completion"]["code"]
    moocher, freeloader = pid_for("moocher"), pid_for("freeloader")
    moocher_sid = fake.start_submission(first, moocher)
    fake.submit(moocher_sid, shared_screen_out)
    freeloader_sid = fake.start_submission(first, freeloader)
    fake.submit(freeloader_sid, shared_done)
    assert fake.submissions[moocher_sid]["status"] == "SCREENED OUT"
    assert fake.screen_out_paid(moocher) == 0.14, "Prolific paid its minimum by itself, and no more"
    assert fake.studies[first]["total_available_places"] == 5

    out = StringIO()
    call_command("sync_prolific", study=study.pk, stdout=out)
    text = out.getvalue()
    assert f"{moocher_sid} {moocher}: no enrollment here" in text and "pays only Prolific's minimum" in text
    assert f"{freeloader_sid} {freeloader}: no enrollment here" in text and "(asked to return it)" in text
    assert fake.submissions[freeloader_sid]["status"] == "AWAITING REVIEW", "never approved"
    assert fake.submissions[freeloader_sid]["return_requested"] and not fake.submissions[moocher_sid].get(
        "return_requested"
    )
    # Both strangers hold a place on Prolific that the cohort's workers need: given back, once (and the filtered
    # worker's, screened out: 5 + 3).
    assert fake.studies[first]["total_available_places"] == 8
    sync(study)
    assert fake.studies[first]["total_available_places"] == 8, "never given back twice"
    assert set(ProlificReview.objects.values_list("participant_id", flat=True)) == {moocher, freeloader}
    # The researcher sees them on the Prolific page; the bonuses pay them nothing.
    page = Client()
    page.force_login(researcher)
    html = page.get(f"/dashboard/studies/{study.pk}/prolific/").content.decode()
    assert 'data-role="reviews"' in html and moocher in html and freeloader in html
    pay_bonuses(study)
    assert fake.paid_total(moocher) == fake.paid_total(freeloader) == 0
    assert not BonusPayment.objects.filter(enrollment__worker__external_id__in=[moocher, freeloader]).exists()
    # The filtered worker is paid their training time beyond the screen-out minimum, as a bonus: 10 answers of 20 s
    # at 12/h, less the 0.14 Prolific paid.
    (row,) = BonusPayment.objects.filter(enrollment__worker__external_id=weak)
    assert row.part == 1 and row.active_seconds == 200 and row.amount == Decimal("0.67") - Decimal("0.14")
    assert fake.paid_total(weak) == float(row.amount)


def test_a_part_starts_only_from_its_own_prolific_study(fake, researcher, clock):
    study = two_parts(fake, researcher)
    c = cohort(study, "sst2", 0)
    parts = studies_of(c)
    ada = pid_for("ada")
    sid1 = fake.start_submission(parts[1], ada)
    # Part 1's link edited to carry part 2's STUDY_ID, with her own part-1 session: refused, nothing stored.
    edited = open_link(c, ada, parts[2], sid1)
    assert edited.join_response.status_code == 403
    assert not Enrollment.objects.filter(worker__external_id=ada).exists()
    worker = open_link(c, ada, parts[1], sid1)
    state = answer(worker, clock, 75)
    assert state["step"] == "between"
    fake.submit(sid1, state["completion"]["code"])
    # Part 2 from part 1's session, or from a link naming part 2's study with part 1's session: refused.
    assert worker.send("post", "/api/work/next-part/").status_code == 409
    again = open_link(c, ada, parts[2], sid1)
    assert again.send("post", "/api/work/next-part/").status_code in (403, 409)
    assert worker.send("post", "/api/work/next-part/").status_code == 409
    assert Enrollment.objects.get(worker__external_id=ada).state == "between"
    # Her own part-2 submission, from part 2's study: she continues.
    sid2 = fake.start_submission(parts[2], ada)
    back = open_link(c, ada, parts[2], sid2)
    started = back.send("post", "/api/work/next-part/")
    assert started.status_code == 200 and started.json()["progress"]["done"] == 75


def test_a_part_is_sealed_once_its_code_is_shown(fake, researcher, clock):
    study = two_parts(fake, researcher)
    c = cohort(study, "sst2", 0)
    worker, pid, sid1 = part_one(fake, c, "sealer", clock)
    clock.advance(60)
    sync(study)
    assert fake.submissions[sid1]["status"] == "APPROVED"
    last_handle = _last_part_one_item(worker)
    sid2 = fake.start_submission(studies_of(c)[2], pid)
    back = open_link(c, pid, studies_of(c)[2], sid2)
    assert back.send("post", "/api/work/next-part/").status_code == 200
    revised = back.send("post", "/api/work/revise/", {"item": last_handle, "answer": ["negative"]})
    assert revised.status_code == 409 and "final once its code was shown" in revised.json()["detail"]
    assert back.answer(last_handle, ["negative"]).status_code == 409, "a sealed part's item takes no answer"
    page = back.client.get("/work/").content.decode()
    assert 'data-role="undo"' not in page, "no offer to change part 1's answer"
    assert "can no longer be changed" in back.client.get("/work/revise/").content.decode()
    assert not AuditEvent.objects.filter(action="revise test answer").exists()


def _last_part_one_item(worker: WorkerClient) -> str:
    last = Answer.objects.filter(enrollment_id=worker.enrollment_id, step="test").order_by("-position").first()
    return worker.handle(last.example_id)


def test_the_wait_between_parts_is_never_work(fake, researcher, clock):
    study = two_parts(fake, researcher, idle_cap_seconds=300)
    c = cohort(study, "sst2", 0)
    worker, pid, sid1 = part_one(fake, c, "waiter", clock, pace=12)  # slower than the estimate: a bonus is due
    clock.advance(20 * 60)  # a break between parts, longer than the idle cap
    sid2 = fake.start_submission(studies_of(c)[2], pid)
    back = open_link(c, pid, studies_of(c)[2], sid2)
    assert back.send("post", "/api/work/next-part/").status_code == 200
    clock.advance(0.58)
    state = answer(back, clock, 1, pace=0)
    # End now right after one answer: too early in the part, refused (a code and a bonus for 300 s of waiting, before).
    stop = back.send("post", "/api/work/stop/")
    assert stop.status_code == 409 and state["completion"] is None
    answer(back, clock, 74, pace=12)
    fake.submit(sid2, back.current().json()["completion"]["code"])
    sync(study)
    pay_bonuses(study)
    ledger = {
        part: (seconds, amount)
        for part, seconds, amount in BonusPayment.objects.values_list("part", "active_seconds", "amount")
    }
    assert ledger[1] == (pytest.approx(75 * 12), Decimal("1.00"))  # 15 minutes at 12/h, less the published 2.00
    # Part 2 runs from its start: the 20-minute wait is not in it (it was 300 s of it, and a bonus of 1.96).
    assert ledger[2] == (pytest.approx(0.58 + 74 * 12), Decimal("0.96"))
    assert fake.paid_total(pid) == 1.96


def test_three_colluders_rushing_a_part_move_no_one_s_pay_or_page(fake, researcher, clock):
    study = two_parts(fake, researcher, workers_per_cohort=6, idle_cap_seconds=300)
    c = cohort(study, "sst2", 0)
    published_reward = fake.studies[studies_of(c)[1]]["reward"]
    assert published_reward == 200  # 10 minutes at 12/h
    newcomer_sid = fake.start_submission(studies_of(c)[1], pid_for("newcomer"))
    newcomer = open_link(c, pid_for("newcomer"), studies_of(c)[1], newcomer_sid)
    before = newcomer.client.get("/work/").content.decode()
    assert "pays 2.00 USD" in before and "as listed on Prolific" in before
    for name in ("rush1", "rush2", "rush3"):  # a second an item: the measured estimate falls to a tenth
        pid = pid_for(name)
        sid = fake.start_submission(studies_of(c)[1], pid)
        rusher = open_link(c, pid, studies_of(c)[1], sid)
        state = answer(rusher, clock, 75, pace=1)
        fake.submit(sid, state["completion"]["code"])
    assert cohort_estimate(c).measured and cohort_estimate(c).reward(1) < Decimal("0.50")
    after = newcomer.client.get("/work/").content.decode()
    assert "pays 2.00 USD" in after and "as listed on Prolific" in after, "the page shows what Prolific lists"
    # An honest worker at the task's pace is topped up from the published reward, not from the rushed estimate.
    honest, pid, _ = part_one(fake, c, "honest", clock)
    sync(study)
    pay_bonuses(study)
    ledger = BonusPayment.objects.filter(enrollment__worker__external_id=pid).first()
    earned = Decimal(75 * PACE) / 3600 * 12
    assert ledger is None or ledger.amount == max(Decimal(0), earned.quantize(Decimal("0.01")) - Decimal("2.00"))
    assert ledger is None, "10 minutes of work at 12/h is what the published 2.00 already pays: no bonus"
    # The Prolific page shows the published figures beside the estimate of now.
    page = Client()
    page.force_login(researcher)
    html = page.get(f"/dashboard/studies/{study.pk}/prolific/").content.decode()
    assert 'data-role="published"' in html and "2.00 USD" in html and "0.14 USD" in html


def test_a_prolific_cohort_takes_no_one_until_it_is_published(fake, researcher, settings):
    trim_test_set("sst2", 3)
    study = make_study(shots=[0], launch=True, created_by=researcher)  # launched, not published; a token exists
    c = cohort(study, "sst2", 0)
    made_up = WorkerClient(c, params={"PROLIFIC_PID": "ab" * 12, "STUDY_ID": "cd" * 12, "SESSION_ID": "ef" * 12})
    assert made_up.join_response.status_code == 403
    assert "not open on Prolific yet" in made_up.join_response.content.decode()
    assert not Enrollment.objects.exists()
    page = Client()
    page.force_login(researcher)
    html = page.get(f"/dashboard/studies/{study.pk}/").content.decode()
    assert "Takes workers now." not in html and "Not open yet" in html
    # Without any token the link runs as a plain link, and the page says plainly what that means.
    settings.PROLIFIC_API_TOKEN = ""
    html = page.get(f"/dashboard/studies/{study.pk}/").content.decode()
    assert "A plain link until published on Prolific" in html and "Prolific ids unchecked" in html
    assert "nobody paid through Prolific" in html
    # Published, the same made-up PID is refused by Prolific's own answer.
    settings.PROLIFIC_API_TOKEN = TOKEN
    publish(study, site_url=SITE)
    c.refresh_from_db()
    forged = WorkerClient(
        c, params={"PROLIFIC_PID": "ab" * 12, "STUDY_ID": c.prolific.prolific_study_id, "SESSION_ID": "ef" * 12}
    )
    assert forged.join_response.status_code == 403 and not Enrollment.objects.exists()
    with pytest.raises(Refused):
        fake.start_submission("0" * 24, "ab" * 12)


@pytest.mark.parametrize("failure", ["401", "500", "down", "slow"])
def test_asking_a_stranger_to_return_survives_prolific_failing_and_never_spends(fake, researcher, failure, settings):
    trim_test_set("sst2", 3)
    study = make_study(shots=[0], launch=False, created_by=researcher, workers_per_cohort=2)
    publish(study, site_url=SITE)
    c = cohort(study, "sst2", 0)
    sid = fake.start_submission(c.prolific.prolific_study_id, pid_for("stranger"))
    fake.submit(sid, fake.code(sid))
    calls_before = len(fake.calls)
    if failure == "down":  # no answer at all: the sync fails as a whole, and nothing is recorded
        fake.down = True
        with pytest.raises(ProlificError):
            sync(study)
        fake.down = False
    else:
        if failure == "slow":  # the answer comes after the client gave up
            settings.PROLIFIC_TIMEOUT = 0.5
            fake.delays.append(("POST", r"request-return/$", 1.5))
        else:  # a 401 (the token revoked meanwhile) or a 500, to that call only
            fake.fail_matching.append(("POST", r"request-return/$", int(failure)))
        report = sync(study)
        assert any("asked again at the next sync" in reason for *_, reason in report.attention), report.attention
        assert report.return_requested == []
        fake.delays = []
    assert not ProlificReview.objects.filter(return_requested_at__isnull=False).exists()
    report = sync(study)
    assert report.return_requested == [sid] and fake.submissions[sid]["return_requested"]
    assert sync(study).return_requested == [], "asked once it was answered"
    spending = [call for call in fake.calls[calls_before:] if "bonus" in call[1] or call[1].endswith("/transition/")]
    assert spending == [], "nothing approved or paid for a stranger, whatever Prolific answered"


def test_end_now_on_prolific_pays_only_for_answers_in_the_part(fake, researcher, clock):
    """The issue's first break: join, End now with nothing answered, submit the code. Now: refused early; near the
    limit with nothing answered it is a withdrawal (no code; the page asks them to return the submission); with
    answers, the part's own screen-out code, and the time worked paid beyond Prolific's minimum."""
    study = two_parts(fake, researcher, workers_per_cohort=2)
    c = cohort(study, "sst2", 0)
    first = studies_of(c)[1]
    pid = pid_for("idle")
    sid = fake.start_submission(first, pid)
    idle = open_link(c, pid, first, sid)
    early = idle.send("post", "/api/work/stop/")
    assert early.status_code == 409 and "withdraw" in early.json()["detail"]
    clock.advance((Enrollment.objects.get(pk=idle.enrollment_id).timer_minutes - 4) * 60)  # near the limit
    ended = idle.send("post", "/api/work/stop/").json()
    assert ended["step"] == "withdrawn" and ended["completion"] is None
    page = idle.client.get("/work/").content.decode()
    assert "there is no code for it" in page and "please return your submission" in page
    assert screen_out_code(c, 1) not in page
    # A worker with answers in the part ends it near the limit: the part's screen-out code, paid for their time.
    busy_pid = pid_for("busy")
    busy_sid = fake.start_submission(first, busy_pid)
    busy = open_link(c, busy_pid, first, busy_sid)
    answer(busy, clock, 20, pace=60)  # slow: 20 minutes for 20 items
    clock.advance((Enrollment.objects.get(pk=busy.enrollment_id).timer_minutes - 20 - 4) * 60)  # near the limit
    stopped = busy.send("post", "/api/work/stop/").json()
    assert stopped["step"] == "expired" and stopped["completion"]["code"] == screen_out_code(c, 1)
    fake.submit(busy_sid, stopped["completion"]["code"])
    assert fake.submissions[busy_sid]["status"] == "SCREENED OUT" and fake.screen_out_paid(busy_pid) == 0.14
    sync(study)
    pay_bonuses(study)
    (row,) = BonusPayment.objects.filter(enrollment__worker__external_id=busy_pid)
    # 20 minutes of answers, then the minutes to End now capped at the idle cap of 5: 25 minutes at 12/h = 5.00.
    assert row.active_seconds == 25 * 60 and row.amount == Decimal("5.00") - Decimal("0.14")
    assert fake.paid_total(busy_pid) == 4.86 and fake.paid_total(pid) == fake.screen_out_paid(pid) == 0


def test_a_shared_part_code_opens_no_later_part_and_its_places_are_given_back(fake, researcher, clock):
    """Part 1's completion code, passed on, puts a stranger in part 1's finishers' group on Prolific, so part 2's
    study lets them take a place: the platform refuses their join, asks them to return what they submit there, and
    gives that part's place back, so that an honest finisher of part 1 is never met by a full part 2."""
    study = two_parts(fake, researcher, workers_per_cohort=1)
    c = cohort(study, "sst2", 0)
    parts = studies_of(c)
    honest, pid, _ = part_one(fake, c, "honest", clock)
    shared = done_code(c, 1)
    stranger = pid_for("stranger")
    with pytest.raises(Refused, match="no place"):
        fake.start_submission(parts[1], stranger)  # the cohort of one is taken on Prolific too
    stranger_sid1 = fake.start_submission(parts[1], stranger, force=True)  # a place found anyway
    fake.submit(stranger_sid1, shared)  # now in part 1's finishers' group
    stranger_sid2 = fake.start_submission(parts[2], stranger)  # part 2's study takes them, and is full
    refused = open_link(c, stranger, parts[2], stranger_sid2)
    assert refused.join_response.status_code == 403 and not Enrollment.objects.filter(worker__external_id=stranger)
    fake.submit(stranger_sid2, fake.code(stranger_sid2))  # part 2's code, passed on too
    assert fake.studies[parts[2]]["total_available_places"] == 1
    report = sync(study)
    assert {stranger_sid1, stranger_sid2} <= set(report.return_requested)
    assert fake.studies[parts[2]]["total_available_places"] == 2, "part 2's place the stranger holds is given back"
    assert ProlificPart.objects.get(cohort=c, number=2).given_back == 1
    # The honest finisher of part 1 finds a place in part 2 and continues.
    sid2 = fake.start_submission(parts[2], pid)
    back = open_link(c, pid, parts[2], sid2)
    assert back.send("post", "/api/work/next-part/").status_code == 200
    sync(study)
    assert fake.studies[parts[2]]["total_available_places"] == 2, "given back once"


def test_a_check_that_would_change_the_published_parts_is_refused(fake, researcher):
    """Each part is published as a listing of its own, with its pay: a check that would make the test step need one
    more part is refused, naming the cohort, and nothing is written; before publishing the same check is taken."""
    study = two_parts(fake, researcher, workers_per_cohort=1)
    c = cohort(study, "sst2", 0)
    assert len(studies_of(c)) == 2  # 75 items of 8 s a part: both parts full to the cap
    check = {"task": "sst2", "position": 10, "question": "For this item choose positive.", "context": "A check."}
    with pytest.raises(
        ValidationError, match=r"published on Prolific in 2 part\(s\); with this check its test step would"
    ):
        add_check(study, **check, expected="positive", actor="researcher")
    assert not AttentionCheck.objects.filter(study=study).exists()
    study.refresh_from_db()
    assert not study.has_attention_checks and len(cohort_estimate(c).parts) == 2
    unpublished = make_study(shots=[0], launch=False, created_by=researcher, sitting_minutes=10)
    add_check(unpublished, **check, expected="positive", actor="researcher")
    assert len(cohort_estimate(cohort(unpublished, "sst2", 0)).parts) == 3


def test_a_finished_part_is_approved_and_paid_by_the_bounds_its_worker_had(fake, researcher, clock):
    """A check written after a worker's test step began is not theirs, but it moves the cohort's part 1 end (50 ->
    51 of 100 test items). The part they finished by their own bounds is approved and paid, not asked back as
    unfinished; a worker who stopped one item short of those bounds earns no completion."""
    study = two_parts(fake, researcher, test_items=100)
    c = cohort(study, "sst2", 0)
    assert [(p.first, p.end) for p in cohort_estimate(c).parts] == [(0, 50), (50, 100)]
    short_pid = pid_for("short")
    short_sid = fake.start_submission(studies_of(c)[1], short_pid)
    short = open_link(c, short_pid, studies_of(c)[1], short_sid)
    answer(short, clock, 49)
    worker, pid, sid = part_one(fake, c, "ada", clock)
    assert Answer.objects.filter(enrollment_id=worker.enrollment_id).count() == 50
    check = {"task": "sst2", "position": 80, "question": "For this item choose positive.", "context": "A check."}
    add_check(study, **check, expected="positive", actor="researcher")
    c = cohort(study, "sst2", 0)
    assert [(p.first, p.end) for p in cohort_estimate(c).parts] == [(0, 51), (51, 100)]
    # The one short submits part 1's completion code (someone passed it on): by today's bounds as by theirs, unearned.
    fake.submit(short_sid, done_code(c, 1))
    report = sync(study)
    assert fake.submissions[sid]["status"] == "APPROVED" and not fake.submissions[sid].get("return_requested")
    assert pid in report.approved and short_pid not in report.approved
    assert fake.submissions[short_sid]["status"] == "AWAITING REVIEW"
    assert fake.submissions[short_sid]["return_requested"]
    # What the bonuses pay for: the finished part, not the one left short.
    assert [(e.worker.external_id, part, out) for e, part, out in payable_parts(study)] == [(pid, 1, False)]


def test_a_worker_whose_screen_out_is_submitted_on_prolific_is_not_taken_back(fake, researcher):
    """Reinstating a filtered worker whose screen-out code Prolific already holds (final there) would have them work
    on with no way to submit the part's completion code, and end the screen-out's bonus: refused, saying why. One who
    has not submitted it yet is taken back."""
    study = published(fake, researcher, shots=(0,), workers_per_cohort=2)
    c = cohort(study, "sst2", 0)
    api = Client()
    api.force_login(researcher)
    submitted, p_submitted, s_submitted = arrive(fake, c, "submitted")
    waiting, _, _ = arrive(fake, c, "waiting")
    for worker in (submitted, waiting):
        url = f"/api/enrollments/{worker.enrollment_id}/filter/"
        assert api.post(url, {"reason": "by mistake"}, content_type="application/json").status_code == 200
    assert submitted.current().json()["completion"]["code"] == screen_out_code(c)
    fake.submit(s_submitted, screen_out_code(c))
    sync(study)
    refused = api.post(
        f"/api/enrollments/{submitted.enrollment_id}/reinstate/", {"reason": "mistake"}, content_type="application/json"
    )
    assert refused.status_code == 409 and "SCREENED OUT on Prolific" in refused.json()["detail"]
    assert Enrollment.objects.get(worker__external_id=p_submitted).state == "filtered"
    taken_back = api.post(
        f"/api/enrollments/{waiting.enrollment_id}/reinstate/", {"reason": "mistake"}, content_type="application/json"
    )
    assert taken_back.status_code == 200 and taken_back.json()["state"] == "testing"


def test_a_part_finished_before_timings_were_kept_is_still_approved(fake, researcher, clock):
    """An enrollment from before part timings were kept: its finished part, shown by the worker having gone on
    between parts, is approved as any other."""
    study = two_parts(fake, researcher)
    c = cohort(study, "sst2", 0)
    worker, pid, sid = part_one(fake, c, "early", clock)
    PartTiming.objects.filter(enrollment_id=worker.enrollment_id).delete()
    assert pid in sync(study).approved and fake.submissions[sid]["status"] == "APPROVED"
