"""Cached sessions that keep working while the cache (Redis) is unreachable.

Django's ``cached_db`` sessions already write every session to the database; they only fail
when the cache itself cannot be reached (reading back, deleting on a new key, checking a key).
This engine treats an unreachable cache as an empty one, so workers keep their sessions, from
the database, through a Redis outage.
"""

import logging
from typing import Any

from django.contrib.sessions.backends import cached_db

logger = logging.getLogger(__name__)


class _TolerantCache:
    def __init__(self, cache):
        self._cache = cache

    def _call(self, name: str, default, *args, **kwargs):
        try:
            return getattr(self._cache, name)(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - any cache failure: fall back to the database
            logger.warning("session cache unavailable (%s: %s); using the database", name, type(exc).__name__)
            return default

    def get(self, *args, **kwargs):
        return self._call("get", None, *args, **kwargs)

    def set(self, *args, **kwargs):
        return self._call("set", None, *args, **kwargs)

    def delete(self, *args, **kwargs):
        return self._call("delete", False, *args, **kwargs)

    def __contains__(self, key) -> bool:
        return self._call("has_key", False, key)


class SessionStore(cached_db.SessionStore):
    _cache: Any  # where Django's cached_db store keeps its cache (not in django-stubs)

    def __init__(self, session_key=None):
        super().__init__(session_key)
        self._cache = _TolerantCache(self._cache)
