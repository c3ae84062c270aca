"""Building studies, joining workers and answering items in the protocol tests."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable

from django.http import HttpRequest
from django.test import Client

from annotation import attention, services, session
from annotation.codes import part_codes
from annotation.models import AttentionCheck, Cohort, Enrollment
from annotation.protocol import State
from tasks_data.models import Example

_WORD = re.compile(r"\w+")


def bound_enrollment_id(client: Client) -> int | None:
    """The enrollment a test client's browser is bound to, read from its binding cookie as the platform reads it."""
    request = HttpRequest()
    cookie = client.cookies.get(session.BINDING_COOKIE)
    request.COOKIES = {session.BINDING_COOKIE: cookie.value} if cookie is not None else {}
    return session.bound_enrollment_id(request)


def make_study(tasks=("sst2",), shots=(0, 10), *, launch=True, **options):
    options.setdefault("name", "test study")
    # Prolific, as the tests' join links (``prolific``): a new study's platform is otherwise the first configured
    # one (crowd.default), the generic link without a Prolific token.
    options.setdefault("platform", "prolific")
    return services.create_study(tasks=list(tasks), shots=list(shots), launch=launch, **options)


def cohort(study, task: str, shots: int) -> Cohort:
    return study.cohorts.select_related("task", "study").get(task__slug=task, shots=shots)


def done_code(cohort_: Cohort, part: int = 1) -> str:
    """The completion code of a cohort's part (each part of each cohort has its own, ``annotation.codes``)."""
    return part_codes(cohort_, part).completion_code


def screen_out_code(cohort_: Cohort, part: int = 1) -> str:
    """The screen-out code of a cohort's part."""
    return part_codes(cohort_, part).screenout_code


_NAMES: dict[str, str] = {}


def pid_for(name: str) -> str:
    """A valid Prolific PID (24 hexadecimal characters) standing for a test worker's name."""
    if re.fullmatch(r"[0-9a-f]{24}", name):
        return name
    pid = hashlib.sha1(name.encode()).hexdigest()[:24]
    _NAMES[pid] = name
    return pid


def name_of(worker_id: str) -> str:
    """The test worker's name behind a PID made by ``pid_for`` (other ids unchanged)."""
    return _NAMES.get(worker_id, worker_id)


def prolific(pid: str) -> dict:
    return {"PROLIFIC_PID": pid_for(pid), "STUDY_ID": "study-1", "SESSION_ID": f"session-{pid}"}


def join(cohort_: Cohort, pid: str) -> Enrollment:
    return services.join(token=cohort_.join_token, params=prolific(pid)).enrollment


def _spans(context: str, strings) -> list[dict]:
    """Non-overlapping occurrences of each string in the context, as API spans."""
    taken: list[tuple[int, int]] = []
    for text in strings:
        text = text.strip()
        start = 0
        while text:
            i = context.find(text, start)
            if i < 0:
                break
            span = (i, i + len(text))
            if all(span[1] <= s or span[0] >= e for s, e in taken):
                taken.append(span)
                break
            start = i + 1
    return [{"start": s, "end": e} for s, e in sorted(taken)]


def _first_word(context: str) -> list[dict]:
    match = _WORD.search(context)
    return [{"start": match.start(), "end": match.end()}]


def gold_answer(example: Example) -> list:
    """The API answer giving the gold (as far as the context allows)."""
    spec = example.task.spec
    kind = spec.answer_kind.name
    if kind == "label":
        return [example.gold[0]]
    if kind == "spans":
        return _spans(example.context, example.gold)
    if kind == "span_or_none":
        for alternative in example.gold:
            spans = _spans(example.context, [alternative])
            if spans:
                return spans
        return []
    gold = set(example.gold)
    for s, e in example.candidates:
        if example.context[s:e] in gold:
            return [{"start": s, "end": e}]
    s, e = example.candidates[0]
    return [{"start": s, "end": e}]


def wrong_answer(example: Example) -> list:
    """A valid answer that misses the gold (S1 0 wherever the data allows one)."""
    spec = example.task.spec
    kind = spec.answer_kind.name
    if kind == "label":
        return [next(label for label in spec.labels if label != example.gold[0])]
    if kind in ("spans", "span_or_none"):
        return [] if example.gold else _first_word(example.context)
    gold = set(example.gold)
    for s, e in example.candidates:
        if example.context[s:e] not in gold:
            return [{"start": s, "end": e}]
    s, e = example.candidates[0]
    return [{"start": s, "end": e}]


def texts_of(example: Example, answer: list) -> list[str]:
    """The strings an API answer stands for (what S1 scores)."""
    return example.task.spec.answer_kind.validate(example.task.spec, example, answer).texts


def answer_all(enrollment_id: int, choose: Callable[[Example], list]) -> services.WorkState:
    """Answer every item through the services until the worker leaves the steps."""
    while True:
        state = services.current_item(enrollment_id=enrollment_id)
        if state.item is None:
            return state
        services.submit_answer(enrollment_id=enrollment_id, item=state.item_handle, answer=choose(state.item))


def example_of(enrollment_id: int, handle: str) -> Example:
    """The example (or attention check, as the item shown) behind an enrollment's handle: the tests' oracle."""
    enrollment = Enrollment.objects.select_related("cohort__task").get(pk=enrollment_id)
    for pk in Example.objects.filter(task_id=enrollment.cohort.task_id).values_list("pk", flat=True):
        if services.item_handle(enrollment_id=enrollment_id, item_id=pk) == handle:
            return Example.objects.select_related("task").get(pk=pk)
    for check in AttentionCheck.objects.filter(study_id=enrollment.cohort.study_id, task_id=enrollment.cohort.task_id):
        if services.item_handle(enrollment_id=enrollment_id, item_id=check.item_id) == handle:
            return attention.as_item(check, enrollment.cohort.task)
    raise LookupError(f"no item of enrollment {enrollment_id} has the handle {handle!r}")


class WorkerClient:
    """A worker's browser: joins through the link, then calls the worker API with the CSRF header."""

    def __init__(self, cohort_: Cohort | None = None, pid: str | None = None, params: dict | None = None):
        self.client = Client(enforce_csrf_checks=True)
        self.join_response = None
        if cohort_ is not None:
            self.join_response = self.client.get(cohort_.join_path, params if params is not None else prolific(pid))

    @property
    def csrf(self) -> str:
        cookie = self.client.cookies.get("csrftoken")
        return cookie.value if cookie else ""

    def current(self):
        return self.client.get("/api/work/current/")

    @property
    def enrollment_id(self) -> int | None:
        return bound_enrollment_id(self.client)

    def example(self, handle: str) -> Example:
        """The item behind a handle this worker was shown (the test's oracle: a worker cannot do this)."""
        return example_of(self.enrollment_id, handle)

    def handle(self, item) -> str:
        """This worker's handle of an item (an Example or its id): a worker has it only for the item shown."""
        return services.item_handle(enrollment_id=self.enrollment_id, item_id=getattr(item, "pk", item))

    def answer(self, item: str, answer, **extra):
        body = {"item": item, "answer": answer, **extra}
        return self.send("post", "/api/work/answer/", body)

    def send(self, method: str, path: str, body=None, *, csrf: bool = True, raw: str | None = None):
        headers = {"HTTP_X_CSRFTOKEN": self.csrf} if csrf else {}
        data = raw if raw is not None else json.dumps(body)
        return getattr(self.client, method)(path, data=data, content_type="application/json", **headers)


def trim_test_set(slug: str, keep: int) -> int:
    """Keep the first ``keep`` test items of a task (inside the test's transaction); returns how many remain."""
    Example.objects.filter(task__slug=slug, role=Example.Role.TEST, position__gte=keep).delete()
    return Example.objects.filter(task__slug=slug, role=Example.Role.TEST).count()


def keys_anywhere(data) -> set[str]:
    """Every key of every object in a JSON document."""
    if isinstance(data, dict):
        return set(data) | {k for v in data.values() for k in keys_anywhere(v)}
    if isinstance(data, list):
        return {k for v in data for k in keys_anywhere(v)}
    return set()


FORBIDDEN_KEYS = {"gold", "clues_id", "is_impossible", "answer", "answers", "s1"}


def complete(cohort_: Cohort, pid: str, *, wrong_test: set[int] = frozenset(), wrong_training: set[int] = frozenset()):
    """A worker who joins and answers everything, every part of a test step in sittings: gold except at the given
    0-based positions (counted over the whole step)."""
    enrollment = join(cohort_, pid)
    while True:
        state = services.current_item(enrollment_id=enrollment.pk)
        if state.item is None:
            enrollment.refresh_from_db()
            if enrollment.state != State.BETWEEN:
                return enrollment
            services.start_next_part(enrollment_id=enrollment.pk)
            continue
        wrong = wrong_training if state.step == "training" else wrong_test
        choose = wrong_answer if state.done in wrong else gold_answer
        services.submit_answer(enrollment_id=enrollment.pk, item=state.item_handle, answer=choose(state.item))


def fake_model_rows(study):
    """Model rows as ``results.cells.model_rows`` gives them, for laying out a table."""
    return [
        {
            "method": "fine-tuning",
            "model": "BERT-base",
            "task": "sst2",
            "shots": 10,
            "mean": 61.24,
            "std": 2.5,
            "n": 5,
            "splits": [1, 2, 3, 4, 5],
        }
    ]


def baseline_runs(task: str, shots: int, method: str, model: str, s1s) -> list:
    """Completed baseline runs (one per split) with the given S1 (0-1): real rows for results.cells."""
    from baselines.models import BaselineRun
    from tasks_data.models import Task

    task_row = Task.objects.get(slug=task)
    return [
        BaselineRun.objects.create(
            task=task_row,
            method=method,
            model=model,
            shots=shots,
            split=i + 1,
            seed=0,
            status=BaselineRun.Status.COMPLETED,
            s1=s1,
        )
        for i, s1 in enumerate(s1s)
    ]


def sst2_run_answers(tests: list[Example], wrong: set[int]) -> dict:
    """A completed SST-2 run's s1, predictions and item scores: the gold label on every test item but the
    positions in ``wrong`` (the other label there); keyword arguments for ``BaselineRun.objects.create``."""
    return {
        "s1": 1 - len(wrong) / len(tests),
        "predictions": [
            {"id": e.clues_id, "prediction": [next(x for x in ("positive", "negative") if x != e.gold[0])]}
            if i in wrong
            else {"id": e.clues_id, "prediction": [e.gold[0]]}
            for i, e in enumerate(tests)
        ],
        "item_scores": [0.0 if i in wrong else 1.0 for i in range(len(tests))],
    }
