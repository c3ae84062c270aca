"""Where the results keep what they built: Django's cache (Redis in production), never required.

The cohorts' scores themselves are stored in the database (``results.scores``): a flush costs what is built
from them (the page, the files, the gaps), never a scoring of the answers. Every key is built from what the
value was computed from (each cohort's fingerprint: its join token and its count of changes; the study's token;
the completed runs' content), so nothing has to be invalidated by hand and a key never answers for another
object. When the cache is unreachable, values are built again (slower, never wrong).
"""

from __future__ import annotations

import logging

from django.core.cache import cache

log = logging.getLogger(__name__)

VERSION = 4  # bump when what is kept, or how it is computed, changes
CACHE_SECONDS = 7 * 24 * 3600


def cached_many(keys: list[str]) -> dict:
    """What ``keep_many`` stored under ``keys`` (absent ones left out; nothing when the cache is unreachable)."""
    try:
        return cache.get_many(keys) if keys else {}
    except Exception:  # an unreachable cache costs time, not results
        log.warning("results cache unavailable", exc_info=True)
        return {}


def keep_many(values: dict) -> None:
    try:
        cache.set_many(values, CACHE_SECONDS)
    except Exception:
        log.warning("results cache unavailable: results not kept", exc_info=True)


def remember(key: str, build):
    """The value kept under ``key``, or ``build()`` kept there."""
    found = cached_many([key])
    if key in found:
        return found[key]
    value = build()
    keep_many({key: value})
    return value
