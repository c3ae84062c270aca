"""Fail loudly unless the PostgreSQL server of DATABASE_URL and the Redis of CELERY_BROKER_URL answer.

CI must run the suite on PostgreSQL; it never falls back to SQLite. Run with the project's venv:
    .venv/bin/python .ci/check_services.py
"""

import os
import sys
from urllib.parse import urlsplit


def fail(message: str) -> None:
    print(f"ci: {message}", file=sys.stderr)
    sys.exit(1)


def check_postgres(url: str) -> str:
    import psycopg

    parts = urlsplit(url)
    if parts.scheme not in ("postgres", "postgresql", "pgsql"):
        fail(f"DATABASE_URL={url!r} is not a PostgreSQL URL; CI runs the tests on PostgreSQL only")
    # pytest-django creates test_<name> through the maintenance database, so that is what must answer.
    conninfo = parts._replace(path="/postgres").geturl().replace("pgsql://", "postgresql://", 1)
    try:
        with psycopg.connect(conninfo, connect_timeout=5) as conn:
            row = conn.execute("SHOW server_version").fetchone()
            version = row[0] if row else "?"
    except psycopg.Error as exc:
        fail(
            f"PostgreSQL at {parts.hostname}:{parts.port or 5432} is not reachable ({exc}).\n"
            "    Start it (e.g. `service postgresql start`) or point DATABASE_URL at a running server."
        )
    return f"PostgreSQL {version} at {parts.hostname}:{parts.port or 5432}"


def check_redis(url: str) -> str:
    import redis

    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=5, socket_timeout=5)
        client.ping()
        version = client.info("server").get("redis_version", "?")
    except (redis.RedisError, OSError, ValueError) as exc:
        fail(
            f"Redis at {url} is not reachable ({exc}).\n"
            "    Start it (e.g. `service redis-server start`) or point CELERY_BROKER_URL at a running server."
        )
    return f"Redis {version} at {url}"


def main() -> None:
    database_url = os.environ.get("DATABASE_URL", "")
    broker_url = os.environ.get("CELERY_BROKER_URL", "")
    if not database_url:
        fail("DATABASE_URL is not set; CI runs the tests on PostgreSQL, never on SQLite")
    if not broker_url:
        fail("CELERY_BROKER_URL is not set")
    print("ci:", check_postgres(database_url))
    print("ci:", check_redis(broker_url))


if __name__ == "__main__":
    main()
