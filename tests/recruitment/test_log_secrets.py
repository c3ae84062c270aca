"""A whole Prolific journey, every logger at DEBUG (the HTTP client's included): no Prolific session id, PID,
token, password or gold answer in any log line, neither in what the console handler writes nor in any record."""

from __future__ import annotations

import io
import logging
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client

from clues_platform.log_filters import RedactFilter
from tests.annotation.factories import WorkerClient, cohort, gold_answer, make_study, pid_for, trim_test_set
from tests.recruitment.fake_prolific import TOKEN

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clues")]
LOGGERS = (
    "",
    "django",
    "django.request",
    "httpx",
    "httpcore",
    "httpcore.http11",
    "httpcore.connection",
    "recruitment",
    "annotation",
    "celery",
)


@pytest.fixture
def logs(caplog):
    """(console output, every record's message): the configured console handler and every logger at DEBUG."""
    handler = next(h for h in logging.getLogger().handlers if any(isinstance(f, RedactFilter) for f in h.filters))
    buffer = io.StringIO()
    old_stream = handler.setStream(buffer)
    levels = {name: logging.getLogger(name).level for name in LOGGERS}
    for name in levels:
        logging.getLogger(name).setLevel(logging.DEBUG)
    caplog.set_level(logging.DEBUG)
    yield lambda: (buffer.getvalue(), "\n".join(r.getMessage() for r in caplog.records))
    handler.setStream(old_stream)
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)


def test_a_whole_prolific_journey_logs_no_secret(fake, researcher, logs, django_capture_on_commit_callbacks):

    trim_test_set("sst2", 3)
    researcher.set_password("pw-rita-prolific-77")
    researcher.save()
    study = make_study(
        shots=[10],
        launch=False,
        created_by=researcher,
        completion_code="CDONE",
        screenout_code="CSOUT",
        workers_per_cohort=3,
        pay_rate=Decimal("12"),
        idle_cap_seconds=7200,
    )
    dashboard = Client()
    assert (
        dashboard.post(
            "/accounts/login/", {"username": researcher.username, "password": "pw-rita-prolific-77"}
        ).status_code
        == 302
    )
    assert dashboard.post(f"/dashboard/studies/{study.pk}/prolific/publish/").status_code == 200
    c = cohort(study, "sst2", 10)
    pid, secrets = pid_for("logged"), {"token": TOKEN, "password": "pw-rita-prolific-77"}
    sid = fake.start_submission(c.prolific.prolific_study_id, pid)
    secrets.update(pid=pid, session=sid)
    worker = WorkerClient(c, params={"PROLIFIC_PID": pid, "STUDY_ID": c.prolific.prolific_study_id, "SESSION_ID": sid})
    assert worker.join_response.status_code == 302
    with django_capture_on_commit_callbacks(execute=True):
        while (state := worker.current().json()).get("item") is not None:
            example = worker.example(state["item"]["id"])
            secrets.update({f"gold {example.pk} {i}": g for i, g in enumerate(example.gold)})
            assert worker.answer(worker.handle(example), gold_answer(example)).status_code in (200, 201)
    # Refused and failing joins: forged, someone else's session, Prolific refusing (401), Prolific down.
    forged_pid = pid_for("forger-logged")
    secrets["forged pid"] = forged_pid
    Client().get(
        c.join_path,
        {
            "PROLIFIC_PID": forged_pid,
            "STUDY_ID": c.prolific.prolific_study_id,
            "SESSION_ID": "0123456789abcdef01234567",
        },
    )
    Client().get(c.join_path, {"PROLIFIC_PID": forged_pid, "STUDY_ID": c.prolific.prolific_study_id, "SESSION_ID": sid})
    fake.fail_next, fake.fail_status = 3, 401
    Client().get(
        c.join_path,
        {
            "PROLIFIC_PID": forged_pid,
            "STUDY_ID": c.prolific.prolific_study_id,
            "SESSION_ID": "0123456789abcdef01234568",
        },
    )
    fake.fail_next = 0
    fake.down = True
    offline_pid = pid_for("offline-logged")
    secrets["offline pid"] = offline_pid
    Client().get(
        c.join_path,
        {
            "PROLIFIC_PID": offline_pid,
            "STUDY_ID": c.prolific.prolific_study_id,
            "SESSION_ID": "0123456789abcdef01234569",
        },
    )
    dashboard.post(f"/dashboard/studies/{study.pk}/prolific/sync/")  # fails: Prolific down
    fake.down = False
    # The way back: the same participant from a new browser.
    back = WorkerClient(c, params={"PROLIFIC_PID": pid, "STUDY_ID": c.prolific.prolific_study_id, "SESSION_ID": sid})
    assert back.join_response.status_code == 302
    fake.submit(sid, fake.code(sid))
    assert dashboard.post(f"/dashboard/studies/{study.pk}/prolific/sync/").status_code == 200
    assert fake.submissions[sid]["status"] == "APPROVED"
    fake.crash_on_pay = True
    call_command("pay_bonuses", study=study.pk, stdout=StringIO())
    fake.crash_on_pay = False
    dashboard.post(f"/dashboard/studies/{study.pk}/prolific/pay/")
    console, records = logs()
    assert "HTTP Request: GET" in console and "submissions/[redacted]/" in console, "control: the client logged"
    assert "HTTP Request: GET" in records
    for name, secret in secrets.items():
        assert secret not in console, f"{name} in the console log"
        assert secret not in records, f"{name} in a log record"
