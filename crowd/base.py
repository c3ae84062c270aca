"""What every crowd platform provides: reading a worker's identity from the join link, what a worker
who finished (or was screened out) gets, and what the researcher is told about the link.

Plain Python (no Django): the protocol (``annotation``) asks a provider, never compares platform names.
A worker id is the only thing that tells two crowdworkers apart, so every spelling of one id must
become the same string, and anything that is not an id of that platform is refused, naming the problem.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

MAX_PARAMETER = 100  # characters of any join-link parameter kept


class InvalidIdentity(ValueError):
    """A join parameter is missing or not valid for the platform; the message says which and why."""


class LoginRequired(InvalidIdentity):
    """The platform identifies workers by an account of this site, and nobody is logged in."""


class StudySettings(Protocol):
    """What a provider reads of a study (``annotation.models.Study`` has these fields)."""

    worker_id_param: str
    worker_id_pattern: str


@dataclass(frozen=True)
class Identity:
    """Who is joining: the platform's worker id, its session or assignment (a returning worker with the
    same one is let back in), and what else the platform sent that the study keeps."""

    external_id: str
    session: str = ""
    data: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Completion:
    """What a worker who finished (or was screened out) gets: the code, and where it goes."""

    code: str
    redirect_url: str | None = None  # send the browser here
    post_url: str | None = None  # POST ``post_fields`` here
    post_fields: dict = field(default_factory=dict)
    return_to: str = ""  # the platform's name, for "Taking you back to ..."


class CrowdProvider:
    """One crowd platform. Subclasses set the class attributes and override what differs.

    ``slug`` is stored on studies and workers; ``name`` is shown. The texts are shown to workers
    (``refusal_help``, ``finish_note``, ``screenout_note``) and researchers (``link_note``).
    """

    slug: ClassVar[str] = ""
    name: ClassVar[str] = ""
    refusal_help: ClassVar[str] = "If you came from a recruitment platform, please go back there."
    #: On the "not allowed" refusal page: how a worker who started in another browser gets back to their work.
    way_back_help: ClassVar[str] = "If you started this study in another browser, please go back to it."
    finish_note: ClassVar[str] = ""  # after "you get your completion code"
    screenout_note: ClassVar[str] = ""  # after "you get the screen-out payment for your time"
    preview_note: ClassVar[str] = ""  # on the preview page, where the platform shows one before accepting
    #: Workers are accounts of this site (the join link needs a logged-in user): no id in the link.
    uses_accounts: ClassVar[bool] = False
    #: The platform cannot vouch for a returning worker's session: the description page shows a resume code
    #: with which a worker who lost their browser comes back (annotation.services.joining).
    offers_resume_code: ClassVar[bool] = False
    #: The URL name of the provider's own page for a study on the dashboard, if it has one.
    study_page: ClassVar[str] = ""
    #: Where a finished worker's browser may post or be sent (the Content-Security-Policy's form-action).
    completion_origins: ClassVar[tuple[str, ...]] = ()

    # ---------------------------------------------------------------- joining

    def identity(self, params: Mapping[str, str], *, study: StudySettings, user: Any = None) -> Identity | None:
        """The worker's identity from the join request; None for a preview (nobody joins).

        Raises InvalidIdentity naming the parameter and the problem.
        """
        raise NotImplementedError

    def check_settings(self, study: StudySettings) -> dict[str, list[str]]:
        """Errors in the study's platform settings, by field name (empty when they are fine)."""
        return {}

    def need(self, params: Mapping[str, str], name: str) -> str:
        """A required join parameter, stripped; refused when missing or too long."""
        value = (params.get(name) or "").strip()
        if not value:
            raise InvalidIdentity(f"this link needs the {name} parameter from {self.name}")
        if len(value) > MAX_PARAMETER:
            raise InvalidIdentity(f"the {name} parameter is too long")
        return value

    # ---------------------------------------------------------------- finishing

    def completion(self, code: str, *, data: Mapping[str, Any]) -> Completion:
        """What a worker who finished gets for ``code`` (``data``: what the platform sent on joining)."""
        return Completion(code, return_to=self.name)

    # ---------------------------------------------------------------- the researcher's side

    def join_query(self, study: StudySettings) -> str:
        """The query string the platform's placeholders fill, appended to the join link ("" for none)."""
        return ""

    def link_note(self, study: StudySettings) -> str:
        """How to use the join link on this platform."""
        return ""

    def __str__(self) -> str:
        return self.name
