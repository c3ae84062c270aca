"""Rule 7, time and pay: served and answered times, active time with capped idle gaps, pay; expiry."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.test import Client

from annotation import protocol, selectors, services
from annotation.models import Answer, Enrollment
from results import exports, formats
from tests.annotation.factories import cohort, gold_answer, join, make_study, trim_test_set

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clues")]


def test_active_seconds_caps_each_idle_gap():
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    times = [t0 + timedelta(seconds=s) for s in (10, 1010, 1040)]
    assert protocol.active_seconds(enrolled_at=t0, answered_at=times, idle_cap_seconds=300) == 10 + 300 + 30
    assert protocol.active_seconds(enrolled_at=t0, answered_at=times, idle_cap_seconds=60) == 10 + 60 + 30
    assert protocol.active_seconds(enrolled_at=t0, answered_at=[], idle_cap_seconds=300) == 0
    assert protocol.pay(seconds=340, rate_per_hour=Decimal("12")) == Decimal("1.13")
    assert protocol.pay(seconds=3600, rate_per_hour=Decimal("12.50")) == Decimal("12.50")


def test_served_and_answered_times_active_time_and_pay_are_recorded_shown_and_exported(clock, researcher):
    trim_test_set("sst2", 3)
    study = make_study(shots=[0], created_by=researcher, pay_rate=Decimal("12"), idle_cap_seconds=300)
    enrollment = join(cohort(study, "sst2", 0), "P1")
    gaps = [(5, 10), (20, 1000), (1, 30)]  # (seconds before the item is served, seconds to answer it)
    served = []
    for before, answering in gaps:
        clock.advance(before)
        item = services.current_item(enrollment_id=enrollment.pk).item
        served.append(clock.now)
        clock.advance(answering)
        services.current_item(enrollment_id=enrollment.pk)  # a reload does not move the served time
        handle = services.item_handle(enrollment_id=enrollment.pk, item_id=item.pk)
        services.submit_answer(enrollment_id=enrollment.pk, item=handle, answer=gold_answer(item))
    answers = list(Answer.objects.filter(enrollment=enrollment).order_by("position"))
    assert [a.served_at for a in answers] == served
    start = enrollment.enrolled_at
    assert [(a.answered_at - start).total_seconds() for a in answers] == [15, 1035, 1066]
    # Gaps between joining and each answer: 15, 1020 (capped at 300), 31.
    expected_seconds, expected_pay = 15 + 300 + 31, Decimal("1.15")
    row = selectors.cohort_enrollments(cohort(study, "sst2", 0))[0]
    assert row["active_seconds"] == expected_seconds and row["pay"] == expected_pay
    client = Client()
    client.force_login(researcher)
    api_row = client.get(f"/api/enrollments/{enrollment.pk}/").json()
    assert api_row["active_seconds"] == expected_seconds and api_row["pay"] == "1.15"
    rows, columns = exports.export_rows(study, "annotators")
    csv = formats.render_rows(rows, "csv", columns=columns)
    assert csv.splitlines()[0].endswith("active_seconds,pay") and csv.splitlines()[1].endswith(",346.0,1.15")


def test_a_lower_idle_cap_lowers_active_time(clock):
    trim_test_set("sst2", 2)
    study = make_study(shots=[0], idle_cap_seconds=60)
    enrollment = join(cohort(study, "sst2", 0), "P1")
    for wait in (100, 10):
        clock.advance(wait)
        item = services.current_item(enrollment_id=enrollment.pk).item
        handle = services.item_handle(enrollment_id=enrollment.pk, item_id=item.pk)
        services.submit_answer(enrollment_id=enrollment.pk, item=handle, answer=gold_answer(item))
    assert selectors.enrollment_row(Enrollment.objects.get())["active_seconds"] == 60 + 10


def test_stale_enrollments_expire_free_their_slot_and_are_counted_by_the_command(clock, capsys):
    study = make_study(shots=[0], workers_per_cohort=1, time_limit_minutes=30)
    sst0 = cohort(study, "sst2", 0)
    enrollment = join(sst0, "SLOW")
    clock.advance(29 * 60)
    call_command("expire_enrollments")
    assert capsys.readouterr().out.strip() == "expired 0 enrollment(s)"
    clock.advance(2 * 60)
    call_command("expire_enrollments")
    assert capsys.readouterr().out.strip() == "expired 1 enrollment(s)"
    assert Enrollment.objects.get(pk=enrollment.pk).state == "expired"
    assert services.current_item(enrollment_id=enrollment.pk).step == "expired"
    assert join(sst0, "NEXT").state == "testing"
