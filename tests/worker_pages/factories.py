"""Helpers for the page tests (tests/worker_pages, tests/dashboard, tests/browser): studies, joining, binding,
answering."""

from __future__ import annotations

import itertools

from annotation import services
from annotation.models import Cohort, Enrollment
from annotation.session import BINDING_COOKIE, binding
from tests.annotation.factories import pid_for

_ids = itertools.count(1)


def make_study(tasks=("sst2",), shots=(0, 10), *, launch=True, created_by=None, **kwargs):
    # Prolific, as its workers' links: a new study's platform is otherwise the first configured one (crowd.default).
    params = {
        "name": "UI study",
        "platform": "prolific",
        "completion_code": "DONE123",
        "screenout_code": "OUT456",
        "filter_fraction": None,
    }
    params.update(kwargs)
    return services.create_study(tasks=list(tasks), shots=list(shots), launch=launch, created_by=created_by, **params)


def cohort_of(study, task: str, shots: int) -> Cohort:
    return Cohort.objects.get(study=study, task__slug=task, shots=shots)


def enroll(cohort: Cohort, pid: str | None = None) -> Enrollment:
    pid = pid or f"PID{next(_ids):05d}"
    study = cohort.study
    if study.platform == "generic":
        params = {study.worker_id_param: pid}
    elif study.platform == "mturk":
        params = {
            "workerId": pid,
            "assignmentId": f"AS-{pid}",
            "hitId": "HIT1",
            "turkSubmitTo": "https://workersandbox.mturk.com",
        }
    else:
        params = {"PROLIFIC_PID": pid_for(pid), "STUDY_ID": "S1", "SESSION_ID": f"SESS-{pid}"}
    return services.join(token=cohort.join_token, params=params).enrollment


def bind(client, enrollment: Enrollment, *, started: bool = True):
    """Bind the test client to an enrollment (the cookie /join/ sets) and skip the description."""
    client.cookies[BINDING_COOKIE] = binding(enrollment.pk)
    if started:
        session = client.session
        session["work_started"] = enrollment.pk
        session.save()
    return client


def answer_current(enrollment: Enrollment, *, right: bool = True):
    """Answer the worker's current item through the services (gold when right, else something wrong)."""
    state = services.current_item(enrollment_id=enrollment.pk)
    item, spec = state.item, enrollment.cohort.task.spec
    kind = spec.answer_kind.name
    if kind == "label":
        label = item.gold[0] if right else next(x for x in spec.labels if x != item.gold[0])
        raw = [label]
    elif kind == "entity":
        cands = [tuple(c) for c in item.candidates]
        good = [c for c in cands if item.context[c[0] : c[1]] in item.gold]
        bad = [c for c in cands if item.context[c[0] : c[1]] not in item.gold]
        s, e = (good or cands)[0] if right else (bad or cands)[0]
        raw = [{"start": s, "end": e}]
    else:
        raw = []
        if right:
            for g in item.gold[: 1 if kind == "span_or_none" else None]:
                start = item.context.find(g)
                if start >= 0:
                    raw.append({"start": start, "end": start + len(g)})
    return services.submit_answer(enrollment_id=enrollment.pk, item=state.item_handle, answer=raw)


def fake_model_rows(study):
    """Completed baseline runs for tests: one model ("FT BERT-Base <b>") per task of the study at 10/20/30
    shots, S1 means 40.0/45.5/50.25 (std 3.5 over two splits)."""
    from baselines.models import BaselineRun
    from tasks_data.models import Task

    for task in study.tasks:
        task_row = Task.objects.get(slug=task)
        for shots, mean in ((10, 40.0), (20, 45.5), (30, 50.25)):
            for split, s1 in ((1, mean - 2.4748737), (2, mean + 2.4748737)):
                BaselineRun.objects.create(
                    task=task_row,
                    method="FT",
                    model="BERT-Base <b>",
                    shots=shots,
                    split=split,
                    seed=0,
                    status=BaselineRun.Status.COMPLETED,
                    s1=s1 / 100,
                )


def handle(enrollment: Enrollment, item) -> str:
    """The enrollment's handle of an item (an Example or its id): what the page's ``item`` field carries."""
    return services.item_handle(enrollment_id=enrollment.pk, item_id=getattr(item, "pk", item))
