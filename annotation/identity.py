"""Worker identities: validated and normalised per platform before anything is stored.

A worker id is the only thing that tells two crowdworkers apart, so every spelling of one id
must become the same string (a Prolific PID in upper case is the same participant) and
anything that is not an id of that platform is refused, naming the problem.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

PROLIFIC_PID = re.compile(r"[0-9a-f]{24}")
MTURK_WORKER_ID = re.compile(r"[A-Z0-9]{1,64}")
# Completion and screen-out codes end up in URLs and forms: letters and digits only.
CODE = re.compile(r"[A-Za-z0-9]{1,50}")
# MTurk's own completion hosts: turkSubmitTo becomes a form action, so nothing else is accepted.
MTURK_SUBMIT_HOSTS = ("https://www.mturk.com", "https://workersandbox.mturk.com")


class InvalidIdentity(ValueError):
    """The worker id (or another join parameter) is not valid for the platform; the message says why."""


def normalise_prolific_pid(value: str) -> str:
    pid = (value or "").strip().lower()
    if not PROLIFIC_PID.fullmatch(pid):
        raise InvalidIdentity("the PROLIFIC_PID parameter is not a Prolific participant id "
                              "(24 hexadecimal characters); please open the study from Prolific again")
    return pid


def normalise_mturk_worker_id(value: str) -> str:
    worker_id = (value or "").strip().upper()
    if not MTURK_WORKER_ID.fullmatch(worker_id):
        raise InvalidIdentity("the workerId parameter is not an MTurk worker id (letters and digits only)")
    return worker_id


def normalise_generic(value: str, pattern: str, param: str) -> str:
    """The generic link's worker id, stripped; when the study sets a pattern, it must match it whole."""
    worker_id = (value or "").strip()
    if pattern and not re.fullmatch(pattern, worker_id):
        raise InvalidIdentity(f"the {param} parameter does not have the form this study expects")
    return worker_id


def check_pattern(pattern: str) -> str:
    """A study's generic worker-id pattern must compile (raises ValueError naming the problem)."""
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"not a valid regular expression: {exc}") from None
    return pattern


def check_turk_submit_to(value: str) -> str:
    """turkSubmitTo must be one of MTurk's own hosts (it becomes the completion form's action)."""
    raw = (value or "").strip().rstrip("/")
    parts = urlsplit(raw)
    origin = f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else ""
    if origin not in MTURK_SUBMIT_HOSTS or parts.path or parts.query or parts.fragment or "@" in parts.netloc:
        raise InvalidIdentity("the turkSubmitTo parameter is not Mechanical Turk's own address "
                              f"({' or '.join(MTURK_SUBMIT_HOSTS)}); please open the HIT from Mechanical Turk")
    return origin
