"""Who may see a researcher's page, and the objects a researcher may reach: the one place every page
(dashboard, results, recruitment) takes them from.

A researcher is a superuser or a member of the "researchers" group (``selectors.is_researcher``);
anyone else gets 403. A researcher reaches only the studies ``selectors.studies_visible_to`` gives
(their own; a superuser all): another researcher's study, cohort or enrollment is a 404, as one
that does not exist.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse

from clues_http.negotiation import HtmxHttpRequest

from . import selectors
from .models import Cohort, Enrollment, Study

LOGIN_URL = "login"


def researcher_required(view: Callable) -> Callable:
    """Log-in required (an htmx poll after the session ended reloads the whole page), then the researcher role."""

    @wraps(view)
    def wrapper(request: HtmxHttpRequest, *args, **kwargs):
        if not request.user.is_authenticated:
            if request.htmx:
                response = HttpResponse(status=204)
                response["HX-Redirect"] = f"{reverse(LOGIN_URL)}?next={request.htmx.current_url_abs_path or ''}"
                return response
            return redirect_to_login(request.get_full_path(), LOGIN_URL)
        if not selectors.is_researcher(request.user):
            return render(request, "dashboard/forbidden.html", status=403)
        return view(request, *args, **kwargs)

    return wrapper


def actor(request: HttpRequest) -> str:
    """Who the audit log names for a researcher's action."""
    return request.user.get_username()


def study_for(request: HttpRequest, study_id: int) -> Study:
    """The researcher's study, or 404."""
    return get_object_or_404(selectors.studies_visible_to(request.user), pk=study_id)


def cohort_for(request: HttpRequest, cohort_id: int) -> Cohort:
    """A cohort of one of the researcher's studies, or 404."""
    cohort = get_object_or_404(Cohort.objects.select_related("study", "task"), pk=cohort_id)
    if not selectors.studies_visible_to(request.user).filter(pk=cohort.study_id).exists():
        raise Http404("no such cohort")
    return cohort


def enrollment_for(request: HttpRequest, enrollment_id: int) -> Enrollment:
    """An enrollment of one of the researcher's studies, or 404."""
    return get_object_or_404(
        Enrollment.objects.select_related("cohort__study", "cohort__task", "worker").filter(
            cohort__study__in=selectors.studies_visible_to(request.user)
        ),
        pk=enrollment_id,
    )
