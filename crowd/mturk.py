"""Amazon Mechanical Turk (legacy): an ExternalQuestion HIT. MTurk appends workerId, assignmentId, hitId
and turkSubmitTo; a preview carries assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE; a finished worker's browser
posts the code to turkSubmitTo's /mturk/externalSubmit.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from .base import Completion, CrowdProvider, Identity, InvalidIdentity, StudySettings

WORKER_ID = re.compile(r"[A-Z0-9]{1,64}")
PREVIEW = "ASSIGNMENT_ID_NOT_AVAILABLE"
# MTurk's own completion hosts: turkSubmitTo becomes a form action, so nothing else is accepted.
SUBMIT_HOSTS = ("https://www.mturk.com", "https://workersandbox.mturk.com")


def normalise_worker_id(value: str) -> str:
    worker_id = (value or "").strip().upper()
    if not WORKER_ID.fullmatch(worker_id):
        raise InvalidIdentity("the workerId parameter is not an MTurk worker id (letters and digits only)")
    return worker_id


def check_submit_to(value: str) -> str:
    """turkSubmitTo must be one of MTurk's own hosts (it becomes the completion form's action)."""
    raw = (value or "").strip().rstrip("/")
    parts = urlsplit(raw)
    origin = f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else ""
    if origin not in SUBMIT_HOSTS or parts.path or parts.query or parts.fragment or "@" in parts.netloc:
        raise InvalidIdentity(
            "the turkSubmitTo parameter is not Mechanical Turk's own address "
            f"({' or '.join(SUBMIT_HOSTS)}); please open the HIT from Mechanical Turk"
        )
    return origin


class MechanicalTurk(CrowdProvider):
    slug = "mturk"
    name = "Mechanical Turk (legacy)"
    refusal_help = "On Mechanical Turk, please return the HIT."
    way_back_help = (
        "If you already started this HIT in another browser, open it again from the same accepted "
        "assignment on Mechanical Turk: you continue where you stopped."
    )
    completion_origins = SUBMIT_HOSTS
    preview_note = "Accept the HIT to start."

    def identity(self, params: Mapping[str, str], *, study: StudySettings, user: Any = None) -> Identity | None:
        if params.get("assignmentId") == PREVIEW:
            return None
        worker_id = normalise_worker_id(self.need(params, "workerId"))
        submit_to = params.get("turkSubmitTo") or ""
        data = {
            "assignmentId": self.need(params, "assignmentId"),
            "hitId": params.get("hitId", "")[:100],
            "turkSubmitTo": check_submit_to(submit_to) if submit_to else "",
        }
        return Identity(worker_id, data["assignmentId"], data)

    def completion(self, code: str, *, data: Mapping[str, Any]) -> Completion:
        submit_to = data.get("turkSubmitTo") or ""
        try:
            base = check_submit_to(submit_to) if submit_to else ""
        except InvalidIdentity:
            base = ""  # stored before the allow-list: show the code instead of posting it anywhere
        if not base:
            return Completion(code, return_to="Mechanical Turk")
        return Completion(
            code,
            post_url=f"{base}/mturk/externalSubmit",
            return_to="Mechanical Turk",
            post_fields={"assignmentId": data.get("assignmentId", ""), "completion_code": code},
        )

    def link_note(self, study: StudySettings) -> str:
        return "Use as the ExternalQuestion URL: MTurk appends workerId, assignmentId, hitId and turkSubmitTo."
