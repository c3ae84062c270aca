"""Binding a browser to one enrollment: the only way a worker reaches their work.

The binding is a signed cookie, not a session value: the worker API reads it on every request, and a session read
was a round trip to the session store each time (benchmarks/README.md). It is signed with the site's key (no one can
make one for another enrollment), HttpOnly, and lives as long as a session does; the session keeps what only the
join and the worker's pages read (the enrollments this browser was bound to, what the worker acknowledged).
"""

from django.conf import settings
from django.core import signing
from django.http import HttpRequest, HttpResponse

from .models import Enrollment

BINDING_COOKIE = "clues_enrollment"
_BINDING_SALT = "annotation.session.binding"
# Every enrollment this browser was bound to (one id per task: a second id on the same task is refused).
SEEN_KEY = "enrollments_seen"


def _signer() -> signing.TimestampSigner:
    return signing.get_cookie_signer(salt=_BINDING_SALT)


def binding(enrollment_id: int) -> str:
    """The binding cookie's value for ``enrollment_id``."""
    return _signer().sign(str(enrollment_id))


def bind(request: HttpRequest, response: HttpResponse, enrollment: Enrollment) -> None:
    """Bind the browser to ``enrollment`` (the cookie set on ``response``), under a new session id unless the
    session is brand new.

    A session that already exists gets a new id on binding, so that an id planted in the browser
    beforehand (session fixation) is worth nothing. A browser without a valid session has no id
    yet (Django ignores an unknown one): its id is drawn when the session is first saved, at the
    end of this request, which spares the join two database writes.
    """
    if bound_enrollment_id(request) != enrollment.pk and request.session.session_key is not None:
        request.session.cycle_key()
    seen = seen_enrollment_ids(request)
    if enrollment.pk not in seen:
        request.session[SEEN_KEY] = [*seen, enrollment.pk][-50:]
    response.set_cookie(
        BINDING_COOKIE,
        binding(enrollment.pk),
        max_age=settings.SESSION_COOKIE_AGE,
        secure=settings.SESSION_COOKIE_SECURE,
        httponly=True,
        samesite=settings.SESSION_COOKIE_SAMESITE,
    )


def bound_enrollment_id(request: HttpRequest) -> int | None:
    """The enrollment the browser is bound to; None without a binding, or with one that is forged or too old."""
    value = request.COOKIES.get(BINDING_COOKIE)
    if value is None:
        return None
    try:
        enrollment_id = _signer().unsign(value, max_age=settings.SESSION_COOKIE_AGE)
    except signing.BadSignature:
        return None
    return int(enrollment_id) if enrollment_id.isdecimal() else None


def seen_enrollment_ids(request: HttpRequest) -> list[int]:
    value = request.session.get(SEEN_KEY)
    return [v for v in value if isinstance(v, int)] if isinstance(value, list) else []


# What the worker acknowledged on their pages, remembered by the browser session (storage only: which page
# they see follows from it in annotation.protocol.worker_page).
STARTED_KEY = "work_started"  # enrollment id whose description the worker has read and started
ACK_KEY = "work_feedback_seen"  # id of the last training answer whose feedback the worker left with Next


def record_start(request: HttpRequest, enrollment_id: int) -> None:
    request.session[STARTED_KEY] = enrollment_id


def has_started(request: HttpRequest, enrollment_id: int) -> bool:
    return request.session.get(STARTED_KEY) == enrollment_id


def record_feedback_seen(request: HttpRequest, answer_id: int) -> None:
    request.session[ACK_KEY] = answer_id


def feedback_seen(request: HttpRequest) -> int | None:
    value = request.session.get(ACK_KEY)
    return value if isinstance(value, int) else None
