"""Crowd platforms, one provider each (``crowd.base.CrowdProvider``), in one registry.

Adding a platform is one module with a provider class and one line in ``PROVIDERS``, or, for a platform
with an API of its own, a Django app that registers its provider in its ``AppConfig.ready``
(``register``; docs/crowd_providers.md). Nothing outside the providers compares platform names: studies
and workers store the slug, and ``get(slug)`` answers every platform question.
"""

from __future__ import annotations

from typing import Any

from .base import Completion, CrowdProvider, Identity, InvalidIdentity, LoginRequired, NotVerified, Outcome
from .generic import GenericLink
from .lab import LabAccounts
from .mturk import MechanicalTurk
from .prolific import Prolific

PROVIDERS: dict[str, CrowdProvider] = {p.slug: p for p in (Prolific(), GenericLink(), MechanicalTurk(), LabAccounts())}
#: The platform a study is stored with when none is given (the model's default); a new study gets the first
#: configured one instead (``default``).
DEFAULT = Prolific.slug
MAX_SLUG = 10  # characters: the ``platform`` fields of studies and workers


def get(slug: str) -> CrowdProvider:
    """The provider of a platform slug; KeyError names the known ones."""
    try:
        return PROVIDERS[slug]
    except KeyError:
        raise KeyError(f"unknown crowd platform {slug!r}; known: {', '.join(PROVIDERS)}") from None


def register(provider: CrowdProvider, *, replace: bool = False) -> CrowdProvider:
    """Add a platform to the registry (a Django app calls this in its ``AppConfig.ready``; a test, in a fixture).

    ``replace`` puts a provider in the place of the one with its slug (an app that adds an API's side to a
    platform of this package); otherwise a slug already taken is refused, as is a setting name another
    platform already uses (the study form, the API and launch_study show settings by name).
    """
    if not provider.slug or len(provider.slug) > MAX_SLUG:
        raise ValueError(f"a platform slug has 1 to {MAX_SLUG} characters, not {provider.slug!r}")
    if provider.slug in PROVIDERS and not replace:
        raise ValueError(f"the crowd platform {provider.slug!r} is registered already")
    if replace and provider.slug not in PROVIDERS:
        raise ValueError(f"no crowd platform {provider.slug!r} to replace")
    names = {f.name for f in provider.settings_fields()}
    for other in PROVIDERS.values():
        taken = names & {f.name for f in other.settings_fields()} if other.slug != provider.slug else set()
        if taken:
            raise ValueError(f"{other.name} has a setting named {', '.join(sorted(taken))} already")
    PROVIDERS[provider.slug] = provider
    return provider


def unregister(slug: str) -> None:
    """Take a platform out of the registry (its studies can no longer be served: tests only)."""
    PROVIDERS.pop(slug, None)


def default(*, owner: Any = None) -> str:
    """The platform a new study gets when none is chosen: the registry's first that is configured for ``owner``
    (``CrowdProvider.is_configured``): Prolific once a token is, else the generic link, which anyone can try."""
    return next((p.slug for p in PROVIDERS.values() if p.is_configured(owner=owner)), DEFAULT)


def completion_origins() -> list[str]:
    """Every origin a finished worker may be sent to, over all platforms."""
    return list(dict.fromkeys(origin for p in PROVIDERS.values() for origin in p.completion_origins))


def choices() -> list[tuple[str, str]]:
    """(slug, name) of every platform, for model and form fields."""
    return [(p.slug, p.name) for p in PROVIDERS.values()]


__all__ = [
    "PROVIDERS",
    "DEFAULT",
    "get",
    "register",
    "unregister",
    "default",
    "choices",
    "completion_origins",
    "CrowdProvider",
    "Identity",
    "Completion",
    "Outcome",
    "InvalidIdentity",
    "LoginRequired",
    "NotVerified",
]
