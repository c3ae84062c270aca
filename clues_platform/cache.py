"""The shared cache (Redis): Django's backend, with one Redis client kept instead of one built per call.

Django's ``RedisCacheClient.get_client`` builds a ``redis.Redis`` around its connection pool on every cache call.
Building it cost more than the GET it serves (benchmarks/README.md, "Round trips of an answer"), and every request
of a worker reads its session from the cache. The pools were already kept; the client is kept with its pool here. A
``redis.Redis`` is safe to share between threads (each command takes a connection from the pool), and its pool
drops the parent's connections in a forked process (redis-py checks the pid), so gunicorn's workers each get
their own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.core.cache.backends.redis import RedisCache as DjangoRedisCache
from django.core.cache.backends.redis import RedisCacheClient


class KeptClientRedisCacheClient(RedisCacheClient):
    # What Django's client has and its stubs do not declare.
    _client: Any
    _get_connection_pool_index: Callable[[bool], int]
    _get_connection_pool: Callable[[bool], Any]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._clients: dict[int, Any] = {}  # pool index -> the redis.Redis kept with it

    def get_client(self, key=None, *, write=False):
        index = self._get_connection_pool_index(write)
        client = self._clients.get(index)
        if client is None:
            client = self._clients[index] = self._client(connection_pool=self._get_connection_pool(write))
        return client


class RedisCache(DjangoRedisCache):
    def __init__(self, server, params) -> None:
        super().__init__(server, params)
        self._class = KeptClientRedisCacheClient
