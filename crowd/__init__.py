"""Crowd platforms, one provider each (``crowd.base.CrowdProvider``), in one registry.

Adding a platform is one module with a provider class and one line in ``PROVIDERS``
(docs/crowd_providers.md). Nothing outside the providers compares platform names: studies and
workers store the slug, and ``get(slug)`` answers every platform question.
"""

from __future__ import annotations

from .base import Completion, CrowdProvider, Identity, InvalidIdentity, LoginRequired
from .generic import GenericLink
from .lab import LabAccounts
from .mturk import MechanicalTurk
from .prolific import Prolific

PROVIDERS: dict[str, CrowdProvider] = {p.slug: p for p in (Prolific(), GenericLink(), MechanicalTurk(), LabAccounts())}
DEFAULT = Prolific.slug


def get(slug: str) -> CrowdProvider:
    """The provider of a platform slug; KeyError names the known ones."""
    try:
        return PROVIDERS[slug]
    except KeyError:
        raise KeyError(f"unknown crowd platform {slug!r}; known: {', '.join(PROVIDERS)}") from None


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
    "choices",
    "completion_origins",
    "CrowdProvider",
    "Identity",
    "Completion",
    "InvalidIdentity",
    "LoginRequired",
]
