"""Money states are visible: a bonus whose pay call was interrupted is shown as unknown, with how to check and settle
it, on the dashboard and in pay_bonuses' output, until the researcher settles it (fake Prolific, real HTTP surface)."""

from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from recruitment.models import BonusPayment
from tests.recruitment.journeys import approved_worker, published

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clues")]


def _interrupted(fake, researcher):
    study = published(fake, researcher, shots=(0,), pay_rate=Decimal("12"), expected_minutes=10, idle_cap_seconds=7200)
    pid = approved_worker(fake, study, "interrupted")
    call_command("sync_prolific", study=study.pk, stdout=StringIO())
    fake.crash_on_pay = True
    call_command("pay_bonuses", study=study.pk, stdout=StringIO())
    fake.crash_on_pay = False
    return study, pid, BonusPayment.objects.get().prolific_bulk_id


def test_an_interrupted_pay_call_stays_unknown_on_the_dashboard_with_how_to_settle(fake, researcher):
    study, pid, bulk = _interrupted(fake, researcher)
    client = Client()
    client.force_login(researcher)
    rerun = client.post(f"/dashboard/studies/{study.pk}/prolific/pay/").content.decode()
    assert "1 unknown" in rerun and "0 unknown" not in rerun, "a later run still shows the unknown bonus"
    page = client.get(f"/dashboard/studies/{study.pk}/prolific/").content.decode()
    assert f"Unknown outcome for {pid}" in page and f"check bulk bonus payment {bulk} on Prolific" in page
    assert f"--settle {bulk} --paid" in page and "<td>unknown</td>" in page and "<td>paying</td>" not in page


def test_pay_bonuses_prints_unknown_and_settling_it_pays_at_most_once(fake, researcher):
    study, pid, bulk = _interrupted(fake, researcher)
    paid_once = fake.paid_total(pid)
    out = StringIO()
    call_command("pay_bonuses", study=study.pk, stdout=out)
    text = out.getvalue()
    assert "1 unknown" in text and f"UNKNOWN {pid}" in text and f"--settle {bulk} --paid" in text
    with pytest.raises(CommandError, match="--paid or --not-paid"):
        call_command("pay_bonuses", study=study.pk, settle=bulk, stdout=StringIO())
    with pytest.raises(CommandError, match="no bonus of this study has an unknown outcome"):
        call_command("pay_bonuses", study=study.pk, settle="0" * 24, paid=True, stdout=StringIO())
    call_command("pay_bonuses", study=study.pk, settle=bulk, paid=True, stdout=StringIO())
    assert BonusPayment.objects.get().state == "paid"
    out = StringIO()
    call_command("pay_bonuses", study=study.pk, stdout=out)
    assert "0 unknown" in out.getvalue() and fake.paid_total(pid) == paid_once, "settled as paid: never paid again"


def test_settled_as_not_paid_the_next_run_pays_it(fake, researcher):
    study, pid, bulk = _interrupted(fake, researcher)
    fake.payments.clear()  # Prolific's own page shows it was not paid
    call_command("pay_bonuses", study=study.pk, settle=bulk, not_paid=True, stdout=StringIO())
    call_command("pay_bonuses", study=study.pk, stdout=StringIO())
    assert BonusPayment.objects.get().state == "paid"
    assert fake.paid_total(pid) == float(BonusPayment.objects.get().amount)
