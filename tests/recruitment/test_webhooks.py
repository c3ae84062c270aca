"""Prolific webhooks against the fake Prolific: subscribed on publish; signed events are acted on at once; forged,
stale and duplicated events are refused or acknowledged without effect; the sync stays the safety net and both are
idempotent together (real HTTP surface: the events are POSTed to the platform's hook URL)."""

import time
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client

from annotation.models import AuditEvent, Enrollment
from recruitment.models import WebhookEvent, WebhookSubscription
from tests.annotation.factories import cohort
from tests.recruitment.journeys import SITE, arrive, finish, published

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clues")]
HOOK = "/prolific/hooks/"


def post(request):
    body, headers = request
    return Client(enforce_csrf_checks=True).post(HOOK, data=body, content_type="application/json", **headers)


def approvals(fake):
    return [c for c in fake.calls if c[2] and c[2].get("action") == "APPROVE"]


def test_publishing_subscribes_once_with_a_confirmed_subscription_and_a_sealed_secret(fake, researcher):
    study = published(fake, researcher, shots=(0,))
    (sub,) = fake.subscriptions.values()
    assert sub["is_enabled"] and sub["event_type"] == "submission.status.change"
    assert sub["target_url"] == SITE + HOOK
    row = WebhookSubscription.objects.get()
    (secret,) = fake.hook_secrets.values()
    assert row.subscription_id == sub["id"] and secret not in row.secret_encrypted
    published(fake, researcher, shots=(0,))
    call_command("publish_prolific", study=study.pk, site_url=SITE, stdout=StringIO())
    assert len(fake.subscriptions) == 1 and len(fake.hook_secrets) == 1, "one subscription per workspace and URL"


def test_a_returned_submission_frees_its_place_at_once_and_a_redelivery_changes_nothing(fake, researcher):
    study = published(fake, researcher, shots=(0,), workers_per_cohort=1)
    c = cohort(study, "sst2", 0)
    _, pid, sid = arrive(fake, c, "returner")
    fake.set_status(sid, "RETURNED")
    event = fake.event(sid)
    response = post(event)
    assert response.status_code == 200 and response.content == b"handled"
    assert Enrollment.objects.get(worker__external_id=pid).state == "withdrawn", "no sync ran"
    assert AuditEvent.objects.filter(action="prolific returned", actor="prolific webhook").count() == 1
    again = post(event)  # Prolific delivers at least once: the same X-Event-ID
    assert again.status_code == 200 and again.content == b"duplicate"
    newcomer, _, _ = arrive(fake, c, "newcomer")
    assert newcomer.join_response.status_code == 302, "the freed place is taken again"
    out = StringIO()
    call_command("sync_prolific", study=study.pk, stdout=out)
    assert out.getvalue().startswith("freed 0"), "the sync finds nothing left to do"
    assert AuditEvent.objects.filter(action="prolific returned").count() == 1


def test_a_timed_out_submission_expires_once_the_workers_own_limit_has_passed(fake, researcher, clock):
    study = published(fake, researcher, shots=(0,))
    _, pid, sid = arrive(fake, cohort(study, "sst2", 0), "sleeper")
    fake.set_status(sid, "TIMED-OUT")
    assert post(fake.event(sid)).status_code == 200
    assert Enrollment.objects.get(worker__external_id=pid).state == "testing", "within the limit they were given"
    clock.advance(Enrollment.objects.get(worker__external_id=pid).timer_minutes * 60 + 1)
    assert post(fake.event(sid)).status_code == 200
    assert Enrollment.objects.get(worker__external_id=pid).state == "expired"


def test_a_submission_awaiting_review_is_approved_at_once_and_never_twice(fake, researcher):
    study = published(fake, researcher, shots=(0,))
    worker, pid, sid = arrive(fake, cohort(study, "sst2", 0), "prompt")
    finish(worker)
    fake.submit(sid, fake.code(sid))
    assert post(fake.event(sid)).status_code == 200
    assert fake.submissions[sid]["status"] == "APPROVED" and len(approvals(fake)) == 1
    assert post(fake.event(sid, status="AWAITING REVIEW")).status_code == 200, "a late event, another id"
    call_command("sync_prolific", study=study.pk, stdout=StringIO())
    assert len(approvals(fake)) == 1, "webhook and sync together approve once"


@pytest.mark.parametrize(
    "forgery", ["another secret", "stale", "from the future", "no signature", "tampered body", "not a number"]
)
def test_forged_and_stale_events_are_refused_and_change_nothing(fake, researcher, forgery):
    study = published(fake, researcher, shots=(0,))
    _, pid, sid = arrive(fake, cohort(study, "sst2", 0), "target")
    fake.set_status(sid, "RETURNED")
    if forgery == "another secret":
        request = fake.event(sid, secret="guessed-secret")
    elif forgery == "stale":
        request = fake.event(sid, timestamp=int(time.time()) - 301)
    elif forgery == "from the future":
        request = fake.event(sid, timestamp=int(time.time()) + 301)
    elif forgery == "no signature":
        body, headers = fake.event(sid)
        request = body, {k: v for k, v in headers.items() if "SIGNATURE" not in k}
    elif forgery == "tampered body":
        body, headers = fake.event(sid)
        request = body.replace(b"RETURNED", b"APPROVED"), headers
    else:
        body, headers = fake.event(sid)
        request = body, {**headers, "HTTP_X_PROLIFIC_REQUEST_TIMESTAMP": "yesterday"}
    response = post(request)
    assert response.status_code == 401
    assert Enrollment.objects.get(worker__external_id=pid).state == "testing"
    assert not WebhookEvent.objects.exists()


def test_a_signed_event_is_only_a_hint_prolifics_own_answer_decides(fake, researcher):
    study = published(fake, researcher, shots=(0,))
    _, pid, sid = arrive(fake, cohort(study, "sst2", 0), "still-active")
    response = post(fake.event(sid, status="RETURNED"))  # says returned; Prolific says ACTIVE
    assert response.status_code == 200
    assert Enrollment.objects.get(worker__external_id=pid).state == "testing"


def test_an_event_while_prolific_is_unreachable_is_delivered_again_and_then_handled(fake, researcher):
    study = published(fake, researcher, shots=(0,))
    _, pid, sid = arrive(fake, cohort(study, "sst2", 0), "later")
    fake.set_status(sid, "RETURNED")
    event = fake.event(sid)
    fake.down = True
    assert post(event).status_code == 503
    assert not WebhookEvent.objects.exists(), "not recorded: the redelivery is acted on"
    fake.down = False
    assert post(event).status_code == 200
    assert Enrollment.objects.get(worker__external_id=pid).state == "withdrawn"


def test_an_unknown_event_type_and_an_unknown_submission_are_acknowledged(fake, researcher):
    study = published(fake, researcher, shots=(0,))
    _, pid, sid = arrive(fake, cohort(study, "sst2", 0), "someone")
    body, headers = fake.event(sid)
    stranger = fake.start_submission(cohort(study, "sst2", 0).prolific.prolific_study_id, "f" * 24)
    fake.set_status(stranger, "RETURNED")
    assert post(fake.event(stranger)).content == b"no enrollment here for this submission"
    assert Client().get(HOOK).status_code == 405
    assert Enrollment.objects.get(worker__external_id=pid).state == "testing"


def test_a_signed_deeply_nested_body_is_a_400_not_a_500(fake, researcher):
    """Correctly signed, within the size limit, but nested deep enough to exhaust the JSON decoder's recursion."""
    import base64
    import hashlib
    import hmac

    published(fake, researcher, shots=(0,))
    (secret,) = fake.hook_secrets.values()
    stamp = str(int(time.time()))
    for depth in (4000, 10):  # the attack; and, control, a shallow nesting that decodes to a non-event
        body = ("[" * depth + "]" * depth).encode()
        signature = base64.b64encode(hmac.new(secret.encode(), stamp.encode() + body, hashlib.sha256).digest())
        response = Client(raise_request_exception=False).post(
            HOOK,
            data=body,
            content_type="application/json",
            HTTP_X_PROLIFIC_REQUEST_SIGNATURE=signature.decode(),
            HTTP_X_PROLIFIC_REQUEST_TIMESTAMP=stamp,
            HTTP_X_EVENT_ID=f"evt-nested-{depth}",
        )
        assert response.status_code == 400, (depth, response.status_code)
    assert not WebhookEvent.objects.exists(), "nothing recorded for a body that is not an event"
