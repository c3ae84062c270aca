"""Lab accounts: workers log in to this site with an account of their own, then open the link."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .base import CrowdProvider, Identity, LoginRequired, StudySettings


class LabAccounts(CrowdProvider):
    slug = "local"
    name = "local accounts (lab)"
    offers_resume_code = True
    way_back_help = (
        "If you already started this study in another browser, log in with the same lab account "
        "here and open the link again, or type the resume code shown on the study's first page below."
    )
    refusal_help = "Please ask the researcher who invited you."
    uses_accounts = True

    def identity(self, params: Mapping[str, str], *, study: StudySettings, user: Any = None) -> Identity:
        if not (user is not None and user.is_authenticated):
            raise LoginRequired("log in with your lab account to join this study")
        return Identity(str(user.pk))

    def link_note(self, study: StudySettings) -> str:
        return "Workers log in with their lab account, then open the link."
