"""Lab accounts: workers log in to this site with an account of their own, then open the link.

An account is bound to the study it was made for (``manage.py create_lab_workers``): it is a member of the
study's lab group (``group_name``), and only such a member enrolls through the study's links. Another
study's lab worker, a researcher or any other account of the site is refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .base import CrowdProvider, Identity, LoginRequired, StudySettings

GROUP = "lab workers of study {study}"


def group_name(study_id: Any) -> str:
    """The group whose members are a study's lab accounts (made by ``create_lab_workers``)."""
    return GROUP.format(study=study_id)


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
        if not user.groups.filter(name=group_name(getattr(study, "pk", None))).exists():
            raise LoginRequired(
                "this account is not one of this study's lab accounts: log in with the account the researcher "
                "gave you for this study"
            )
        return Identity(str(user.pk))

    def link_note(self, study: StudySettings) -> str:
        return "Workers log in with the study's lab accounts (manage.py create_lab_workers), then open the link."
