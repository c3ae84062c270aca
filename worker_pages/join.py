"""The join link ``/join/<token>/`` (HTML): how a worker arrives from a recruitment platform."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.middleware.csrf import get_token
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

import crowd
from annotation import services, session
from annotation.protocol import JoinRefusal
from clues_http import ratelimit

from .text import instructions_html

WORK_PATH = "/work/"  # the worker's pages (worker_pages.urls)
# The HTTP status of each reason a join is refused (annotation.protocol.JoinRefusal).
JOIN_STATUS = {
    JoinRefusal.INVALID_LINK: 404,
    JoinRefusal.BAD_PARAMETER: 400,
    JoinRefusal.LOGIN_REQUIRED: 403,
    JoinRefusal.NOT_ALLOWED: 403,
    JoinRefusal.NOT_VERIFIED: 403,
    JoinRefusal.NOT_OPEN: 403,
    JoinRefusal.CLOSED: 403,
    JoinRefusal.FULL: 409,
    JoinRefusal.RETURNING: 200,  # a welcome back, asking how to continue
}


@never_cache
@require_http_methods(["GET", "POST"])
def join(request: HttpRequest, token: str) -> HttpResponse:
    """Enroll the worker (or take a returning one back), bind the session and send them to /work/.

    A refusal (unknown link 404, missing parameter 400, closed 403, full or already exposed
    to the task 409) renders a page saying why, with that status. A preview (the crowd provider says:
    MTurk's ``assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE``) shows the task description and enrolls nobody.
    More than JOIN_RATE_LIMIT requests from one address get 429 (clues_http.ratelimit).

    The way back's resume code is taken only from a POST (the refusal page's form, CSRF-protected, to the same
    link): in a URL it would be kept in the browser's history and in access logs, so one there is ignored.
    """
    wait = ratelimit.join_limited(request)
    if wait is not None:
        response = render(
            request,
            "annotation/join_refused.html",
            status=429,
            context={"message": f"too many attempts to join from your network; please try again in {wait} seconds"},
        )
        response["Retry-After"] = str(wait)
        return response
    params = request.GET.copy()
    params.pop(services.RESUME_PARAM, None)
    if request.method == "POST":
        params[services.RESUME_PARAM] = request.POST.get(services.RESUME_PARAM, "")[:100]
    try:
        outcome = services.join(
            token=token,
            params=params,
            user=request.user,
            bound_enrollment_id=session.bound_enrollment_id(request),
            seen_enrollment_ids=session.seen_enrollment_ids(request),
        )
    except services.JoinRefused as refused:
        provider = crowd.PROVIDERS.get(refused.platform)
        if refused.reason == JoinRefusal.RETURNING:
            return render(
                request,
                "annotation/join_returning.html",
                status=JOIN_STATUS[refused.reason],
                context={
                    "message": refused.message,
                    "provider": provider,
                    "resume_param": services.RESUME_PARAM,
                    "code_given": bool(params.get(services.RESUME_PARAM)),
                },
            )
        not_allowed = refused.reason == JoinRefusal.NOT_ALLOWED
        # The way back (annotation.services.joining): a resume code, posted to the same link, where the
        # platform cannot vouch for the worker.
        resume_form = not_allowed and provider is not None and provider.offers_resume_code
        return render(
            request,
            "annotation/join_refused.html",
            status=JOIN_STATUS[refused.reason],
            context={
                "message": refused.message,
                "provider": provider,
                "not_allowed": not_allowed,
                "resume_form": resume_form,
                "resume_param": services.RESUME_PARAM,
            },
        )
    if outcome.enrollment is None:  # a preview
        cohort = outcome.cohort
        return render(
            request,
            "annotation/join_preview.html",
            {
                "spec": cohort.task.spec,
                "instructions": instructions_html(cohort.task.spec.description),
                "shots": cohort.shots,
                "study": cohort.study,
            },
        )
    response = redirect(WORK_PATH)
    session.bind(request, response, outcome.enrollment)
    get_token(request)  # the csrftoken cookie the worker API needs (X-CSRFToken header)
    return response
