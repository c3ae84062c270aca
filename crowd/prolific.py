"""Prolific: the study URL carries PROLIFIC_PID, STUDY_ID and SESSION_ID; a finished worker is sent back
to Prolific with the code (https://docs.prolific.com/docs/api-docs/public/#tag/Studies, "external_study_url").

Checking a join against Prolific's API, publishing, paying, the per-study settings and the hooks are the
``recruitment`` app's: its provider (``recruitment.provider``) extends this one and takes its place in the
registry.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from .base import Completion, CrowdProvider, Identity, InvalidIdentity, StudySettings

PID = re.compile(r"[0-9a-f]{24}")
COMPLETE_URL = "https://app.prolific.com/submissions/complete?cc={code}"
QUERY = "?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"


def normalise_pid(value: str) -> str:
    """A Prolific participant id: 24 hexadecimal characters, stored in lower case."""
    pid = (value or "").strip().lower()
    if not PID.fullmatch(pid):
        raise InvalidIdentity(
            "the PROLIFIC_PID parameter is not a Prolific participant id "
            "(24 hexadecimal characters); please open the study from Prolific again"
        )
    return pid


class Prolific(CrowdProvider):
    slug = "prolific"
    name = "Prolific"
    refusal_help = (
        "On Prolific, please return your submission (the \u201cReturn\u201d button on the study's "
        "page), so that it does not count against you."
    )
    way_back_help = (
        "If you already started this study in another browser: open it again from the study's page "
        "on Prolific in this browser. Once Prolific confirms that the submission is yours and still "
        "active, you continue where you stopped (or get your completion code again if you finished). "
        "Do not return your submission in that case."
    )
    between_parts_help = (
        "Each later part is a study of its own on Prolific, open to you once you finished the part before: open the "
        "next part from your studies on Prolific (it appears there after you submitted the code of your last part); "
        "its link brings you back here, where you continue."
    )
    finish_note = " and are sent back to Prolific"
    screenout_note = " and a code to submit on Prolific"
    completion_origins = ("https://app.prolific.com",)

    def identity(self, params: Mapping[str, str], *, study: StudySettings, user: Any = None) -> Identity:
        pid = normalise_pid(self.need(params, "PROLIFIC_PID"))
        data = {k: (params.get(k) or "").strip()[:100] for k in ("STUDY_ID", "SESSION_ID")}
        return Identity(pid, data["SESSION_ID"], data)

    def completion(self, code: str, *, data: Mapping[str, Any]) -> Completion:
        return Completion(code, redirect_url=COMPLETE_URL.format(code=quote(code, safe="")), return_to=self.name)

    def join_query(self, study: StudySettings) -> str:
        return QUERY

    def link_note(self, study: StudySettings) -> str:
        return "Paste into Prolific as the study URL (the {{%...%}} placeholders are Prolific's)."
