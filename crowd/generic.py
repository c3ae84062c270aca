"""A generic link: any platform (or a mailing list) that can put a worker id in a URL parameter.

The study names the parameter (``worker_id_param``) and may give a pattern the id must match whole
(``worker_id_pattern``).

A researcher's pattern runs on every join against what a worker typed: it is compiled by RE2
(google-re2), an engine without backtracking whose matching time is linear in the id's length,
so a pattern such as ``(a+)+$`` cannot stall the join; the pattern's length (``MAX_PATTERN``) and
the id's (``base.MAX_PARAMETER``) are bounded. RE2 refuses what needs backtracking
(backreferences, lookarounds), and its digit and word classes are ASCII.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import re2

from .base import MAX_PARAMETER, CrowdProvider, Identity, InvalidIdentity, StudySettings

MAX_PATTERN = 200  # characters (the study field's max_length)
_MAX_MEM = 1 << 21  # bytes RE2 may use for one compiled pattern (its automata): a huge repetition is refused


def _options() -> re2.Options:
    options = re2.Options()
    options.log_errors = False  # an invalid pattern is the researcher's error message, not a line on stderr
    options.max_mem = _MAX_MEM
    return options


@functools.lru_cache(maxsize=256)
def compile_pattern(pattern: str):
    """The compiled pattern (RE2); ValueError names the problem."""
    if len(pattern) > MAX_PATTERN:
        raise ValueError(f"the pattern is too long (at most {MAX_PATTERN} characters)")
    try:
        return re2.compile(pattern, _options())
    except re2.error as exc:
        detail = exc.args[0].decode(errors="replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise ValueError(
            f"not a valid regular expression: {detail} (RE2 syntax, matched in linear time: "
            "no backreferences or lookarounds)"
        ) from None


def check_pattern(pattern: str) -> str:
    """A study's worker-id pattern must compile under RE2 within the bounds (raises ValueError naming the problem)."""
    compile_pattern(pattern)
    return pattern


class GenericLink(CrowdProvider):
    slug = "generic"
    name = "generic link"
    offers_resume_code = True
    study_parameters = ("worker_id_param", "worker_id_pattern")
    way_back_help = (
        "If you already started this study in another browser, type the resume code shown on the "
        "study's first page below to continue where you stopped."
    )

    def identity(self, params: Mapping[str, str], *, study: StudySettings, user: Any = None) -> Identity:
        param = study.worker_id_param
        worker_id = self.need(params, param)
        if len(worker_id) > MAX_PARAMETER:  # ``need`` refuses it already; the bound the linear time relies on
            raise InvalidIdentity(f"the {param} parameter is too long")
        try:
            matcher = compile_pattern(study.worker_id_pattern) if study.worker_id_pattern else None
        except ValueError:  # a study saved before the pattern rules: refuse every id rather than guess
            raise InvalidIdentity(
                f"the {param} parameter cannot be checked: the study's pattern is not valid"
            ) from None
        if matcher is not None and not matcher.fullmatch(worker_id):
            raise InvalidIdentity(f"the {param} parameter does not have the form this study expects")
        return Identity(worker_id)

    def check_settings(self, study: StudySettings, settings: Mapping[str, Any] | None = None) -> dict[str, list[str]]:
        try:
            check_pattern(study.worker_id_pattern)
        except ValueError as exc:
            return {"worker_id_pattern": [str(exc)]}
        return {}

    def join_query(self, study: StudySettings) -> str:
        return f"?{study.worker_id_param}={{WORKER_ID}}"

    def link_note(self, study: StudySettings) -> str:
        return (
            f"Replace {{WORKER_ID}} with your platform's placeholder for the worker id "
            f"(parameter {study.worker_id_param})."
        )
