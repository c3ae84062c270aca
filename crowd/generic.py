"""A generic link: any platform (or a mailing list) that can put a worker id in a URL parameter.

The study names the parameter (``worker_id_param``) and may give a pattern the id must match whole
(``worker_id_pattern``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .base import CrowdProvider, Identity, InvalidIdentity, StudySettings


def check_pattern(pattern: str) -> str:
    """A study's worker-id pattern must compile (raises ValueError naming the problem)."""
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"not a valid regular expression: {exc}") from None
    return pattern


class GenericLink(CrowdProvider):
    slug = "generic"
    name = "generic link"
    offers_resume_code = True

    def identity(self, params: Mapping[str, str], *, study: StudySettings, user: Any = None) -> Identity:
        param = study.worker_id_param
        worker_id = self.need(params, param)
        if study.worker_id_pattern and not re.fullmatch(study.worker_id_pattern, worker_id):
            raise InvalidIdentity(f"the {param} parameter does not have the form this study expects")
        return Identity(worker_id)

    def check_settings(self, study: StudySettings) -> dict[str, list[str]]:
        try:
            check_pattern(study.worker_id_pattern)
        except ValueError as exc:
            return {"worker_id_pattern": [str(exc)]}
        return {}

    def join_query(self, study: StudySettings) -> str:
        return f"?{study.worker_id_param}={{WORKER_ID}}"

    def link_note(self, study: StudySettings) -> str:
        return (f"Replace {{WORKER_ID}} with your platform's placeholder for the worker id "
                f"(parameter {study.worker_id_param}).")
