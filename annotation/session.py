"""Binding a browser session to one enrollment: the only way a worker reaches their work."""

from django.http import HttpRequest

from .models import Enrollment

SESSION_KEY = "enrollment_id"
# Every enrollment this browser was bound to (one id per task: a second id on the same task is refused).
SEEN_KEY = "enrollments_seen"


def bind(request: HttpRequest, enrollment: Enrollment) -> None:
    """Bind the session to ``enrollment``, under a new session id unless the session is brand new.

    A session that already exists gets a new id on binding, so that an id planted in the browser
    beforehand (session fixation) is worth nothing. A browser without a valid session has no id
    yet (Django ignores an unknown one): its id is drawn when the session is first saved, at the
    end of this request, which spares the join two database writes.
    """
    if request.session.get(SESSION_KEY) != enrollment.pk and request.session.session_key is not None:
        request.session.cycle_key()
    request.session[SESSION_KEY] = enrollment.pk
    seen = seen_enrollment_ids(request)
    if enrollment.pk not in seen:
        request.session[SEEN_KEY] = [*seen, enrollment.pk][-50:]


def bound_enrollment_id(request: HttpRequest) -> int | None:
    value = request.session.get(SESSION_KEY)
    return value if isinstance(value, int) else None


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
