from django.contrib.admin.apps import AdminConfig as DjangoAdminConfig


class AdminConfig(DjangoAdminConfig):
    """django.contrib.admin with the operators-only site (clues_platform/admin.py) as ``admin.site``."""

    default_site = "clues_platform.admin.OperatorsAdminSite"

    def ready(self):
        super().ready()  # autodiscovers every app's admin.py
        from django.contrib import admin

        from clues_platform.admin import hide_api_tokens

        hide_api_tokens(admin.site)
