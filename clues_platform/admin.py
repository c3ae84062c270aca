"""The Django admin is for operators (superusers) only.

Researchers use the dashboard and the API, which show each researcher their own studies only;
the admin has no notion of who owns a study, so a staff flag or a model permission must never
open it (a second researcher read another's completion code and workers' session ids
there, and edited shared gold). ``OperatorsAdminSite`` is the default site
(``clues_platform.apps.AdminConfig``), so every registered ModelAdmin sits behind it.

Even operators never see a credential in a list: worker sessions, join tokens and API tokens are
left out of the admin, completion and screen-out codes out of every changelist
(``tests/security/test_admin.py`` checks every registered model).
"""

from django import forms
from django.contrib import admin
from django.contrib.admin.forms import AdminAuthenticationForm
from django.http import HttpRequest


class OperatorLoginForm(AdminAuthenticationForm):
    """The admin's login form lets in superusers only (Django's own asks for the staff flag)."""

    def confirm_login_allowed(self, user):
        if not (user.is_active and user.is_superuser):
            raise forms.ValidationError(
                "The admin is for the platform's operators. Researchers: use the dashboard at /dashboard/.",
                code="invalid_login",
            )


class OperatorsAdminSite(admin.AdminSite):
    site_header = "CLUES human evaluation: operators"
    login_form = OperatorLoginForm

    def has_permission(self, request: HttpRequest) -> bool:
        user = request.user
        return user.is_active and user.is_superuser


def hide_api_tokens(site: admin.AdminSite) -> None:
    """DRF registers its tokens, whose key is their name on every page (list, change, delete, history): left out.

    Operators revoke a researcher's token with ``manage.py drf_create_token -r USER`` (a new key
    replaces it) or by deactivating the account.
    """
    from rest_framework.authtoken.models import TokenProxy

    if site.is_registered(TokenProxy):
        site.unregister(TokenProxy)
