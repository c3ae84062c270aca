"""What every crowd platform provides: reading a worker's identity from the join link, what a worker
who finished (or was screened out) gets, what the researcher is told about the link, the platform's own
per-study settings and fee, and the hooks the protocol calls as an enrollment moves on.

Plain Python (no Django): the protocol (``annotation``) asks a provider, never compares platform names.
A worker id is the only thing that tells two crowdworkers apart, so every spelling of one id must
become the same string, and anything that is not an id of that platform is refused, naming the problem.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

MAX_PARAMETER = 100  # characters of any join-link parameter kept


class InvalidIdentity(ValueError):
    """A join parameter is missing or not valid for the platform; the message says which and why."""


class LoginRequired(InvalidIdentity):
    """The platform identifies workers by an account of this site, and nobody is logged in."""


class NotVerified(Exception):
    """The platform does not vouch for a join (``CrowdProvider.verify_join``); the message says why, to the worker."""


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
class Outcome:
    """What the protocol tells a provider's hook besides the enrollment.

    ``code``: the code the worker was given (the completion code on finishing, the screen-out code when
    filtered; "" otherwise); ``reason`` and ``actor``: as the audit log has them. ``part`` of ``parts``:
    which part of the study the event concerns (a study in one part: 1 of 1), so that a study split into
    sittings, each with its own code and pay, tells its provider which sitting was finished.
    """

    code: str = ""
    reason: str = ""
    actor: str = ""
    part: int = 1
    parts: int = 1

    @property
    def last_part(self) -> bool:
        return self.part >= self.parts


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
    (``refusal_help``, ``finish_note``, ``screenout_note``) and researchers (``link_note``,
    ``launch_note``). A platform's own per-study settings are ``settings_fields``; the protocol calls the
    hooks (``verify_join``, ``on_join``, ``on_finish``, ``on_filter``, ``on_expire``, ``on_withdraw``)
    as an enrollment moves on (docs/crowd_providers.md).
    """

    slug: ClassVar[str] = ""
    name: ClassVar[str] = ""
    refusal_help: ClassVar[str] = "If you came from a recruitment platform, please go back there."
    #: On the "not allowed" refusal page: how a worker who started in another browser gets back to their work.
    way_back_help: ClassVar[str] = "If you started this study in another browser, please go back to it."
    #: To a worker with a place between parts, from a browser not bound to it, where there is no resume code to type:
    #: how to start the next part.
    between_parts_help: ClassVar[str] = "Open the study from where you found it, in the browser you used before."
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
    #: Study parameters (``annotation.models.Study``) that only this platform reads: shown with its settings.
    study_parameters: ClassVar[tuple[str, ...]] = ()
    #: What is missing when ``is_configured`` is false, for the researcher (e.g. which setting to give).
    configuration_help: ClassVar[str] = ""

    # ---------------------------------------------------------------- joining

    def identity(self, params: Mapping[str, str], *, study: StudySettings, user: Any = None) -> Identity | None:
        """The worker's identity from the join request; None for a preview (nobody joins).

        Raises InvalidIdentity naming the parameter and the problem.
        """
        raise NotImplementedError

    def verify_join(self, cohort: Any, identity: Identity, *, returning: bool = False) -> str:
        """How the platform vouches for a join, asked before the worker is enrolled (and before any lock):
        "verified", "unverified" (the platform could not be asked: the enrollment stays out of every result
        until the platform confirms it) or "" (not checked). ``returning``: the worker has an enrollment in
        the cohort and comes back from another browser (only "verified" lets them back in). Raise
        ``NotVerified`` to refuse the join, with the reason for the worker."""
        return ""

    def need(self, params: Mapping[str, str], name: str) -> str:
        """A required join parameter, stripped; refused when missing or too long."""
        value = (params.get(name) or "").strip()
        if not value:
            raise InvalidIdentity(f"this link needs the {name} parameter from {self.name}")
        if len(value) > MAX_PARAMETER:
            raise InvalidIdentity(f"the {name} parameter is too long")
        return value

    def listed_parts(self, cohort: Any) -> dict[int, tuple[int, Any]]:
        """What the platform's own listing of each part of the cohort promised when it was published there:
        {part: (minutes, pay in the study's currency)}. The worker's pages show these figures, not an estimate that
        moved since; empty when the platform lists nothing of the study (the pages show the estimate)."""
        return {}

    def not_open_reason(self, cohort: Any) -> str:
        """Why a launched cohort takes no worker yet on this platform (told to the worker and the researcher), or ""
        when it takes them: e.g. a platform whose own listing, not yet published, is what vouches for its workers."""
        return ""

    def link_status_note(self, cohort: Any) -> str:
        """What the researcher is told beside a launched cohort's join link that takes workers, when the platform has
        more to say (how its workers are checked and paid), or ""."""
        return ""

    def part_of_session(self, cohort: Any, identity: Identity) -> int:
        """The part of a cohort in parts that the platform session of a returning worker is for (0: not known).
        A platform that lists each part as a study of its own says which; the others continue the same session."""
        return 0

    def listed_time_limit(self, cohort: Any, part: int) -> int | None:
        """The longest time limit a worker starting ``part`` may have on this platform, or None: its listing's maximum
        time less the time to reach the study and submit the code, where the platform times its workers out itself (a
        limit here past it would outlast the platform's own clock)."""
        return None

    def reinstate_refusal(self, enrollment: Any) -> str:
        """Why a filtered worker cannot be taken back on this platform, or "": e.g. the screen-out code they were given
        was already submitted there, which the platform holds final (the rest of the part could never be paid)."""
        return ""

    def may_start_part(self, enrollment: Any, part: int) -> bool:
        """Whether a worker between parts may start ``part`` from where they are now: on a platform that lists each
        part as a study of its own, only from that part's study (so the part is paid there)."""
        return True

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

    def is_configured(self, *, owner: Any = None) -> bool:
        """Whether this platform can recruit for ``owner`` (a researcher; None: the deployment's own
        configuration): a new study gets the first configured platform of the registry (``crowd.default``)."""
        return True

    def launch_note(self, study: Any) -> str:
        """What a researcher is told once the study's cohorts are launched: whether the links take workers now."""
        return "the join links take workers now."

    def service_fee(self) -> float:
        """What the platform charges on top of what workers are paid, as a share of that pay (0.333: a third)."""
        return 0.0

    # ---------------------------------------------------------------- per-study settings

    def settings_fields(self) -> Sequence[Any]:
        """The platform's own per-study settings, as Django model fields (named; unbound fields will do): their
        defaults, limits, labels and help texts make the study form's, the API's and launch_study's fields,
        shown for this platform only. Stored by ``save_settings``, read by ``load_settings``."""
        return ()

    def check_settings(self, study: StudySettings, settings: Mapping[str, Any] | None = None) -> dict[str, list[str]]:
        """Errors in the study's platform settings (``settings``: this platform's, cleaned by their fields; and
        the ``study_parameters`` on the study), by field name (empty when they are fine)."""
        return {}

    def load_settings(self, study: Any) -> dict[str, Any]:
        """The study's settings of this platform, each field's default where none is stored.

        By default they are kept with the study (its ``platform_settings``, JSON); a platform with a Django
        app of its own may keep them in its own model instead (override both methods)."""
        stored = getattr(study, "platform_settings", None) or {}
        return {
            f.name: f.to_python(stored[f.name]) if f.name in stored else f.get_default() for f in self.settings_fields()
        }

    def save_settings(self, study: Any, settings: Mapping[str, Any]) -> None:
        """Keep a new study's settings of this platform (called once the study is saved, in its transaction)."""
        if not self.settings_fields():
            return
        study.platform_settings = dict(settings)
        study.save(update_fields=["platform_settings"])

    # ---------------------------------------------------------------- the protocol's events
    # Called by the protocol (``annotation.protocol.transition``) for the study's own provider, inside the
    # transaction that moved the enrollment: a hook that raises rolls the move back. Work that calls out (HTTP)
    # belongs after the commit (``transaction.on_commit``) or in a Celery task.

    def on_join(self, enrollment: Any, outcome: Outcome) -> None:
        """A worker was enrolled (their first step: training, or the test step for 0 shots)."""

    def on_finish(self, enrollment: Any, outcome: Outcome) -> None:
        """A worker finished (``outcome.part`` of ``outcome.parts``; the study's last answer for now) and was
        given ``outcome.code``: e.g. grant the credit or approve the pay."""

    def on_filter(self, enrollment: Any, outcome: Outcome) -> None:
        """A worker was screened out after training (or by the researcher) and given the screen-out code
        ``outcome.code``; their place in the cohort is free again."""

    def on_expire(self, enrollment: Any, outcome: Outcome) -> None:
        """A worker's time ran out (or the platform said so); their place in the cohort is free again."""

    def on_withdraw(self, enrollment: Any, outcome: Outcome) -> None:
        """A worker was withdrawn (by a researcher, or returned their place on the platform); the place is free."""

    def __str__(self) -> str:
        return self.name
