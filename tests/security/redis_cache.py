"""The Redis the shared-cache tests use, when one answers."""

import os


def redis_url() -> str | None:
    url = os.environ.get("CACHE_URL") or os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/14"
    try:
        import redis

        redis.Redis.from_url(url, socket_connect_timeout=0.5).ping()
    except Exception:  # noqa: BLE001 - no Redis here: the test is skipped
        return None
    return url
