"""A logging filter that keeps secrets and worker identifiers out of the logs.

Django logs the path of every 4xx/5xx response ("Bad Request: /join/<token>/"), and a path or
a query string may carry a cohort's join token, a worker's platform id or session, a session or
CSRF cookie, or a password; a database error quotes the values of the row it failed on (a worker
id). ``RedactFilter`` (on the console handler, settings.LOGGING) rewrites each record's message,
and the text of an attached exception, with those values masked.
"""

from __future__ import annotations

import logging
import re

REDACTED = "[redacted]"
_JOIN = re.compile(r"(/join/)[^/\s?#\"']+")
_PARAMS = re.compile(
    r"(?i)\b(PROLIFIC_PID|SESSION_ID|STUDY_ID|workerId|assignmentId|hitId|worker_id|sessionid|csrftoken|"
    r"csrfmiddlewaretoken|password\d?|token|key)(=|\"?\s*:\s*\"?)([^&\s\"',;]+)"
)


# Prolific API paths carry submission (SESSION_ID), study, group and bonus ids: the HTTP client's own request
# lines ("HTTP Request: GET .../submissions/<id>/") and the client's error messages quote them.
_PROLIFIC_PATH = re.compile(
    r"(\b(?:submissions|studies|bulk-bonus-payments|participant-groups)/)"
    r"(?!bonus-payments/)[A-Za-z0-9_.%~-]{4,}"
)


# Prolific's ids (participants, submissions, studies) are 24 hexadecimal characters, wherever they appear
# (an error message of Prolific's may quote a participant id).
_PROLIFIC_ID = re.compile(r"(?<![0-9A-Za-z])[0-9a-fA-F]{24}(?![0-9A-Za-z])")


# PostgreSQL's error details quote the row's values: "Key (platform, external_id)=(prolific, 5f3...)".
_ROW_VALUES = re.compile(r"(Key \([^)]*\)=\(|Failing row contains \()[^\n]*?\)(?=[ .]|$)", re.MULTILINE)


def redact(text: str) -> str:
    text = _JOIN.sub(rf"\g<1>{REDACTED}", text)
    text = _PROLIFIC_PATH.sub(rf"\g<1>{REDACTED}", text)
    text = _PROLIFIC_ID.sub(REDACTED, text)
    text = _ROW_VALUES.sub(rf"\g<1>{REDACTED})", text)
    return _PARAMS.sub(rf"\g<1>\g<2>{REDACTED}", text)


class RedactFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a malformed record is still logged, as logging would
            return True
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        if record.exc_info and not record.exc_text:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
        elif record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True


class DatabaseOutageFilter(logging.Filter):
    """A 503 for a lost database is logged in one line, not with a traceback per request.

    While PostgreSQL is down every request fails the same way; clues_platform.errors answers 503
    and Django logs each at ERROR level with the whole traceback. This keeps the record (path,
    status, the error's first line) and drops the traceback.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "status_code", None) == 503 and record.exc_info:
            error = record.exc_info[1]
            first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            record.msg = f"{record.getMessage()} (database unavailable: {first_line})"
            record.args, record.exc_info, record.exc_text = None, None, None
        return True
