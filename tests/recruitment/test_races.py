"""Calls to Prolific that spend or commit, raced on real concurrent PostgreSQL connections against the fake Prolific:
a webhook and the sync approve a submission once; two pay runs set one bulk bonus up (no orphan on Prolific), and a
pay call in flight in one run is shown in flight by the other, never unknown."""

import time
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test import Client

from annotation.models import AuditEvent
from recruitment.bonuses import pay_bonuses
from recruitment.models import BonusPayment
from recruitment.sync import sync
from tests.annotation.factories import cohort
from tests.annotation.threads import run_together, tiny_sst2
from tests.recruitment.journeys import approved_worker, arrive, finish, published

pytestmark = pytest.mark.django_db(transaction=True)
SLOW = 0.5  # seconds Prolific takes to answer the racing call: both callers are in flight meanwhile


@pytest.fixture(autouse=True)
def _postgresql_only():
    # Row locks and concurrent connections: SQLite serialises writers database-wide (its transactions take the
    # write lock at once, transaction_mode=IMMEDIATE), so the race cannot happen there.
    if connection.vendor != "postgresql":
        pytest.skip("concurrency tests need PostgreSQL: set DATABASE_URL=postgres://...")


@pytest.fixture
def sst2(db):
    """A tiny SST-2 test set, committed so every thread's connection sees it."""
    return tiny_sst2("race test", context="a fine film, take {i}")


def _later(seconds, work):
    def run():
        time.sleep(seconds)
        return work()

    return run


def test_a_webhook_and_the_sync_racing_approve_a_submission_once(fake, researcher, sst2):
    study = published(fake, researcher, shots=(0,), workers_per_cohort=2)
    c = cohort(study, "sst2", 0)
    fake.delays.append(("POST", r"submissions/\w+/transition/", SLOW))
    for head_start in ("sync", "webhook"):
        worker, pid, sid = arrive(fake, c, f"racer-{head_start}")
        finish(worker)
        fake.submit(sid, fake.code(sid))
        body, headers = fake.event(sid)

        def hook(body=body, headers=headers):
            client = Client(enforce_csrf_checks=True)
            return client.post("/prolific/hooks/", data=body, content_type="application/json", **headers)

        def run_sync():
            return sync(study)

        works = [run_sync, hook] if head_start == "sync" else [hook, run_sync]
        works[1] = _later(0.1, works[1])  # the other caller arrives while the first one's approval is in flight
        results = run_together(2, lambda i, works=works: works[i]())
        assert not [r for r in results if isinstance(r, Exception)], results
        approvals = [
            call for call in fake.calls if call[1].endswith(f"submissions/{sid}/transition/") and call[0] == "POST"
        ]
        assert len(approvals) == 1, f"{head_start} first: Prolific was asked to approve {len(approvals)} times"
        assert fake.submissions[sid]["status"] == "APPROVED"
        assert AuditEvent.objects.filter(action="prolific approve", reason=f"submission {sid}").count() == 1
        assert not AuditEvent.objects.filter(action="prolific approve failed").exists()


def test_concurrent_pay_runs_set_up_one_bulk_bonus(fake, researcher, sst2):
    study = published(fake, researcher, shots=(0,), pay_rate=Decimal("12"), expected_minutes=10, idle_cap_seconds=7200)
    pid = approved_worker(fake, study, "paid-once")
    sync(study)
    fake.delays.append(("POST", r"submissions/bonus-payments/$", SLOW))
    results = run_together(2, lambda i: pay_bonuses(study))
    assert not [r for r in results if isinstance(r, Exception)], results
    assert len(fake.bulks) == 1, f"{len(fake.bulks)} bulk bonus set-ups on Prolific for one bonus"
    ledger = BonusPayment.objects.get()
    assert ledger.state == "paid" and ledger.prolific_bulk_id in fake.bulks
    assert fake.paid_total(pid) == float(ledger.amount)
    call_command("pay_bonuses", study=study.pk, stdout=StringIO())
    assert len(fake.bulks) == 1 and fake.paid_total(pid) == float(ledger.amount)


def test_a_pay_call_in_flight_in_another_run_is_shown_in_flight_never_unknown(fake, researcher, sst2):
    """Two pay runs at once: the second sees the first's pay call in flight (never "UNKNOWN ... got no answer", whose
    advice, settling it as not paid, would pay twice); it cannot be settled meanwhile; it is paid once."""
    study = published(fake, researcher, shots=(0,), pay_rate=Decimal("12"), expected_minutes=10, idle_cap_seconds=7200)
    pid = approved_worker(fake, study, "in-flight")
    sync(study)
    fake.delays.append(("POST", r"bulk-bonus-payments/\w+/pay/$", 1.5))  # Prolific takes its time to pay

    def second_run():
        out = StringIO()
        call_command("pay_bonuses", study=study.pk, stdout=out)
        page = Client()
        page.force_login(researcher)
        html = page.get(f"/dashboard/studies/{study.pk}/prolific/").content.decode()
        settle_refused = ""
        try:
            call_command(
                "pay_bonuses",
                study=study.pk,
                settle=BonusPayment.objects.get().prolific_bulk_id,
                not_paid=True,
                stdout=StringIO(),
            )
        except CommandError as exc:
            settle_refused = str(exc)
        return out.getvalue(), html, settle_refused

    works = [lambda: pay_bonuses(study), _later(0.6, second_run)]
    first, (text, html, settle_refused) = run_together(2, lambda i: works[i]())
    assert not isinstance(first, Exception), first
    assert "UNKNOWN" not in text and "0 unknown" in text and f"IN FLIGHT {pid}" in text, text
    assert "do not settle it meanwhile" in text
    assert 'data-role="in-flight"' in html and "Unknown outcome" not in html and "<td>in flight</td>" in html
    assert "being paid by another pay run right now" in settle_refused
    ledger = BonusPayment.objects.get()
    assert ledger.state == "paid" and first.paid == [(pid, ledger.amount)]
    assert fake.paid_total(pid) == float(ledger.amount), "paid once"
