"""The whole API, fuzzed from its OpenAPI schema with schemathesis: no 5xx, and every 4xx has a message.

The harness is benchmarks/fuzz_api.py; run by hand it sends thousands of cases
(``.venv/bin/python benchmarks/fuzz_api.py``). Here each operation gets FUZZ_EXAMPLES (default 25 in CI,
10 in a plain ``make test``: the same cases every run; random ones when FUZZ_EXAMPLES is set) cases that fit the
schema and as many that do not, as a researcher (token), a worker (session and CSRF header), an anonymous
client, or the other role.
"""

from __future__ import annotations

import os

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.authtoken.models import Token

from annotation import services
from annotation.models import Enrollment
from benchmarks.fuzz_api import Identity, Tally, fuzz, load_schema, operations, summary
from tests.annotation.factories import WorkerClient, cohort, complete, gold_answer, make_study, trim_test_set

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clues"), pytest.mark.slow]

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "25" if os.environ.get("CI") else "10"))


def test_fuzz_the_api_from_its_schema(researcher):
    trim_test_set("sst2", 4)
    # Data for the operations to act on: a launched study with a finished worker, and a worker mid-training.
    study = make_study(shots=[0, 10], created_by=researcher, workers_per_cohort=50)
    complete(cohort(study, "sst2", 0), "DONE1")
    worker = WorkerClient(cohort(study, "sst2", 10), "FUZZ1")
    for _ in range(3):
        state = services.current_item(enrollment_id=worker.enrollment_id)
        services.submit_answer(
            enrollment_id=state.enrollment.pk, item=state.item_handle, answer=gold_answer(state.item)
        )
    worker.client.raise_request_exception = False
    researcher_client = Client(raise_request_exception=False)
    token = Token.objects.create(user=researcher).key
    stranger = Client(raise_request_exception=False)
    User.objects.create_user("fuzz-other")  # an account that is not a researcher exists too

    as_researcher = Identity("researcher", researcher_client, {"HTTP_AUTHORIZATION": f"Token {token}"})
    as_worker = Identity("worker", worker.client, {"HTTP_X_CSRFTOKEN": worker.csrf})
    as_stranger = Identity("anonymous", stranger)

    schema = load_schema(Client())
    ops = operations(schema)
    assert len(ops) >= 18, [f"{op.method} {op.path}" for op in ops]
    known = {
        "/api/studies/": [study.pk],
        "/api/cohorts/": list(study.cohorts.values_list("pk", flat=True)),
        "/api/enrollments/": list(Enrollment.objects.values_list("pk", flat=True)),
    }
    tally = Tally()
    for op in ops:
        if op.path.startswith("/api/work/"):
            identities = [as_worker, as_stranger, as_researcher]
        else:
            identities = [as_researcher, as_stranger, as_worker]
        ids = next((v for prefix, v in known.items() if op.path.startswith(prefix)), [])
        fuzz(op, identities, tally, examples=EXAMPLES, ids=ids, derandomize="FUZZ_EXAMPLES" not in os.environ)
    print("\n" + summary(tally))
    assert tally.cases >= len(ops) * EXAMPLES
    assert not tally.failures, "\n".join(tally.failures)
