#!/usr/bin/env python
"""Fuzz the whole API from its OpenAPI schema (/api/schema/) with schemathesis: no 5xx, every 4xx has a message.

    .venv/bin/python benchmarks/fuzz_api.py [--examples 150]     # ~thousands of cases, a few minutes

Every operation of the schema gets ``--examples`` cases that fit the schema and as many that do
not (schemathesis' positive and negative generation: wrong types, missing and extra fields,
odd strings and numbers, in the path, the query and the body), sent through Django's test client
to a test database holding the CLUES data (the official zip if found, else the demo), a launched
study and a worker in the middle of training. Researcher operations are sent with a researcher's
token, worker operations with a worker's session and CSRF header; a share of the cases goes out
as an anonymous client or as the other role. The checks, on every response:

* never a 5xx;
* every 4xx under /api/ is JSON with a non-empty ``detail`` message.

The script runs tests/hardening/test_fuzz_api.py (which the suite runs with a few examples per
operation) with more examples and prints the figures: cases sent per operation and statuses.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

if TYPE_CHECKING:
    from django.test import Client

REPO = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------- the harness (imported by the test)


@dataclass
class Identity:
    name: str
    client: Client
    headers: dict = field(default_factory=dict)


@dataclass
class Tally:
    statuses: Counter = field(default_factory=Counter)  # (operation, status) -> count
    failures: list[str] = field(default_factory=list)

    @property
    def cases(self) -> int:
        return sum(self.statuses.values())


def load_schema(client):
    """The API's OpenAPI schema, as served, loaded into schemathesis."""
    import schemathesis

    response = client.get("/api/schema/", {"format": "json"})
    assert response.status_code == 200, response.status_code
    return schemathesis.openapi.from_dict(json.loads(response.content))


def operations(schema) -> list:
    return [result.ok() for result in schema.get_all_operations()]


def _jsonable(value):
    """Negative cases may hold bytes: sent as the characters of their latin-1 decoding."""
    return value.decode("latin-1") if isinstance(value, bytes) else str(value)


def send(identity: Identity, case):
    """Send a schemathesis Case through the Django test client as ``identity``."""
    from schemathesis.core import NOT_SET

    path = case.formatted_path
    query = {k: v for k, v in (case.query or {}).items() if v is not None}
    if query:
        path += "?" + urlencode(query, doseq=True)
    headers: dict[str, Any] = {  # WSGI environ keys, passed as the request's extra
        f"HTTP_{k.upper().replace('-', '_')}": str(v)
        for k, v in (case.headers or {}).items()
        if k.lower() not in ("authorization", "cookie", "x-csrftoken", "content-type", "content-length")
    }
    headers.update(identity.headers)
    kwargs: dict[str, Any] = {}
    if case.body is not NOT_SET:
        media = case.media_type or "application/json"
        if media == "application/json":
            kwargs = {"data": json.dumps(case.body, default=_jsonable), "content_type": media}
        elif media == "application/x-www-form-urlencoded" and isinstance(case.body, dict):
            kwargs = {"data": urlencode(case.body, doseq=True), "content_type": media}
        elif media == "multipart/form-data" and isinstance(case.body, dict):
            from django.test.client import MULTIPART_CONTENT, encode_multipart

            boundary = "fuzzboundary"
            body = {
                k: ("" if v is None else v if isinstance(v, (str, bytes)) else json.dumps(v, default=_jsonable))
                for k, v in case.body.items()
            }
            kwargs = {
                "data": encode_multipart(boundary, body),
                "content_type": MULTIPART_CONTENT.replace("BoUnDaRyStRiNg", boundary),
            }
        else:
            raw = case.body if isinstance(case.body, (str, bytes)) else json.dumps(case.body, default=_jsonable)
            kwargs = {"data": raw, "content_type": media}
    return identity.client.generic(case.method.upper(), path, secure=False, **kwargs, **headers)


def check(case, response, identity: Identity) -> str | None:
    """The failure, described, or None: a 5xx, or a 4xx under /api/ without a JSON ``detail`` message."""
    status = response.status_code
    what = f"{case.method.upper()} {case.formatted_path} as {identity.name}"
    body = response.content[:500]
    if status >= 500:
        return f"{what}: {status} {body!r}\n    query={case.query!r} body={getattr(case, 'body', None)!r}"
    if 400 <= status < 500 and case.formatted_path.startswith("/api/"):
        try:
            detail = json.loads(response.content).get("detail")
        except (ValueError, AttributeError):
            detail = None
        if not (isinstance(detail, str) and detail.strip()):
            return f"{what}: {status} without a detail message: {body!r}"
    return None


def fuzz(
    operation,
    identities: list[Identity],
    tally: Tally,
    *,
    examples: int,
    ids: Sequence[int] = (),
    derandomize: bool = False,
) -> None:
    """``examples`` positive and as many negative cases of one operation, each sent as one of the identities.

    ``ids``: existing objects for an ``{id}`` path parameter; half of the cases use one of them, so that
    they reach the code behind the lookup rather than a 404. ``derandomize``: the same cases every run.
    """
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import strategies as st
    from hypothesis.errors import Unsatisfiable
    from schemathesis import GenerationMode

    name = f"{operation.method.upper()} {operation.path}"
    for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
        strategy = operation.as_strategy(generation_mode=mode)
        if ids and "{id}" in operation.path:
            strategy = st.one_of(
                strategy, *(operation.as_strategy(generation_mode=mode, path_parameters={"id": i}) for i in ids)
            )

        @settings(
            max_examples=examples,
            deadline=None,
            database=None,
            derandomize=derandomize,
            phases=[Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        @given(case=strategy, who=st.integers(min_value=0, max_value=9))
        def run(case, who):
            # 8 in 10 cases as the operation's own role, the others as a stranger or the other role.
            identity = identities[0] if who < 8 else identities[1 + who % 2]
            response = send(identity, case)
            tally.statuses[(name, response.status_code)] += 1
            failure = check(case, response, identity)
            if failure and len(tally.failures) < 50:
                tally.failures.append(failure)

        try:
            run()
        except Unsatisfiable:
            # Nothing in the operation can be made invalid (no parameters, no body): positive cases only.
            assert not mode.is_positive, name


def summary(tally: Tally) -> str:
    per_op: dict[str, Counter] = {}
    for (name, status), n in tally.statuses.items():
        per_op.setdefault(name, Counter())[status] += n
    lines = [
        f"{tally.cases} cases, {len(per_op)} operations, "
        f"{sum(n for (_, s), n in tally.statuses.items() if s >= 500)} server errors, "
        f"{len(tally.failures)} failures"
    ]
    for name in sorted(per_op):
        statuses = ", ".join(f"{s}: {n}" for s, n in sorted(per_op[name].items()))
        lines.append(f"  {name:45s} {sum(per_op[name].values()):5d}  ({statuses})")
    return "\n".join(lines)


# ---------------------------------------------------------------- the script


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--examples", type=int, default=150, help="positive and negative cases per operation and per mode (default 150)"
    )
    args = parser.parse_args()
    env = {**os.environ, "FUZZ_EXAMPLES": str(args.examples)}
    command = [sys.executable, "-m", "pytest", "tests/hardening/test_fuzz_api.py", "-q", "-s", "-p", "no:cacheprovider"]
    database = env.get("DATABASE_URL", "SQLite (set DATABASE_URL for PostgreSQL)")
    print(
        f"fuzz: {args.examples} positive + {args.examples} negative cases per operation; database {database}",
        flush=True,
    )
    return subprocess.run(command, cwd=REPO, env=env).returncode


if __name__ == "__main__":
    sys.exit(main())
