"""The worker's pages: task description, training step with feedback, test step, completion.

Server-rendered; htmx swaps ``#stage`` after each answer. The state always comes from
``services.current_item`` and the stored answers, never from the browser: a reload, a
second tab or the back button lands the worker where they are. Dataset text is only ever
passed to templates as plain strings (autoescaped); offsets are Python string indices
(code points), computed here and sent back unchanged by the page's script.
"""

from __future__ import annotations

import difflib
import re

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from annotation import attention, services, session
from annotation.answers import InvalidAnswer
from annotation.estimates import duration_text, granted_limit
from annotation.models import Answer, AuditEvent, Enrollment
from annotation.protocol import State, WorkerPage, page_of_step, worker_page
from annotation.session import bound_enrollment_id
from clues_http.negotiation import HtmxHttpRequest
from tasks_data.models import Example, TrainingSetItem
from tasks_data.registry import TaskSpec

from . import jsonsafe as json  # json.loads refusing over-deep nesting (a 400, not a 500)
from .text import PIECES, PLACEHOLDER, instructions_html

INSTRUCTIONS_COOKIE = "clues_instructions"  # "open" | "closed", set by work.js when the worker toggles them


# ---------------------------------------------------------------- page state


def _question(spec: TaskSpec, example: Example) -> list[dict]:
    """The question as parts, with every @placeholder a blank; label aliases fixed ("contraction")."""
    question = example.question
    for wrong, right in spec.label_aliases.items():
        question = re.sub(rf"\b{re.escape(wrong)}\b", right, question)
    question = _labels_in_order(spec, question)
    parts: list[dict] = []
    for i, part in enumerate(question.split(PLACEHOLDER)):
        if i:
            parts.append({"blank": True})
        if part:
            parts.append({"text": part})
    return parts


def _labels_in_order(spec: TaskSpec, question: str) -> str:
    """A question listing the labels ("entailment, contradiction, or neutral?") lists them in the order
    of the buttons and number keys (the registry's order), so the worker reads one order everywhere."""
    if len(spec.labels) < 2:
        return question
    one = "|".join(re.escape(label) for label in spec.labels)
    listing = re.compile(rf"\b(?:{one})(?:,\s*(?:{one}))*,?\s+or\s+(?:{one})\b")
    match = listing.search(question)
    if not match or len(set(re.findall(one, match.group(0)))) != len(spec.labels):
        return question
    ordered = ", ".join(spec.labels[:-1]) + (", or " if len(spec.labels) > 2 else " or ") + spec.labels[-1]
    return question[: match.start()] + ordered + question[match.end() :]


def _part_figures(enrollment: Enrollment, estimate) -> dict[int, dict]:
    """{part: its minutes, pay and where they come from}: what the crowd platform's listing of the part promised
    when it was published there (``CrowdProvider.listed_parts``), else the cohort's estimate, said so. A published
    part's figures never move with the estimate (three workers who rush a part change nothing the others read)."""
    provider = enrollment.cohort.study.provider
    listed = provider.listed_parts(enrollment.cohort)
    figures = {}
    for p in estimate.parts:
        if p.number in listed:
            minutes, pay = listed[p.number]
            figures[p.number] = {"minutes": minutes, "pay": pay, "source": f"as listed on {provider.name}"}
        else:
            figures[p.number] = {"minutes": p.listed_minutes, "pay": estimate.reward(p.number), "source": "estimate"}
    return figures


def _step_info(enrollment: Enrollment, estimate=None) -> dict:
    """Time, pay and parts as the worker's estimate has them (``annotation.estimates``: the same figures as the
    platform's listing and the researcher's pages, with the attention checks the worker meets counted as the items
    they look like, in the parts that hold them)."""
    cohort = enrollment.cohort
    estimate = estimate or attention.worker_estimate(enrollment)
    part = estimate.part(enrollment.part)
    figures = _part_figures(enrollment, estimate)
    spec, study = cohort.task.spec, cohort.study
    in_part = enrollment.state in (Enrollment.State.TRAINING, Enrollment.State.TESTING)
    return {
        "training_items": estimate.training_items,
        "test_items": estimate.test_items + estimate.checks,  # the attention checks too: the progress bar counts them
        "shots": cohort.shots,
        "repeats": spec.train_rows_per_shot,
        "seconds_per_item": round(estimate.seconds_per_item),
        "duration": duration_text(figures[part.number]["minutes"]),
        "total_duration": duration_text(estimate.listed_minutes),
        "pay": figures[part.number]["pay"],
        "figures": figures[part.number]["source"],
        "rate": study.pay_rate,
        "currency": study.pay_currency,
        "idle_minutes": max(1, round(study.idle_cap_seconds / 60)),
        "part": part,
        "parts": len(estimate.parts),
        "all_parts": [
            {"number": p.number, "items": p.items, "duration": duration_text(figures[p.number]["minutes"])}
            for p in estimate.parts
        ],
        "all_figures": figures,
        # The worker's own limit, kept as their part started; the estimate's for a part not started.
        "time_limit": (enrollment.timer_minutes if in_part else None) or granted_limit(cohort, part),
    }


def _duration(seconds: float) -> str:
    """A duration as a worker reads it (``annotation.estimates.duration_text``)."""
    return duration_text(seconds / 60)


def _test_total(enrollment: Enrollment) -> int:
    """The test items the worker sees: the test set and the study's attention checks (shown as items)."""
    cohort = enrollment.cohort
    total = Example.objects.filter(task_id=cohort.task_id, role=Example.Role.TEST).count()
    if cohort.study.has_attention_checks:
        total += attention.count(enrollment)
    return total


def _base_context(enrollment: Enrollment) -> dict:
    spec = enrollment.cohort.task.spec
    return {
        "enrollment": enrollment,
        "spec": spec,
        "kind": spec.answer_kind,
        "study": enrollment.cohort.study,
        "instructions": instructions_html(spec.description),
    }


def _progress(step: str, done: int, total: int, shots: int, *, position: int | None = None) -> dict:
    """Where the worker is in the step: ``position`` is the item shown (1-based), ``done`` the items answered."""
    return {
        "step": step,
        "label": "Training" if step == Answer.Step.TRAINING else "Test",
        "position": position if position is not None else min(done + 1, total),
        "done": done,
        "total": total,
        "percent": round(100 * done / total) if total else 0,
        "has_training": bool(shots),
    }


def _answer_summary(spec: TaskSpec, answer: Answer | services.LastAnswer) -> str:
    texts = _texts_display(answer.texts)
    if texts:
        return " · ".join(texts)
    return spec.answer_kind.none_text


def _item_context(state: services.WorkState, *, revising: services.LastAnswer | None = None) -> dict:
    """An item to answer; with ``revising``, the worker's last test answer shown again to be changed."""
    enrollment, item = state.enrollment, state.item
    assert item is not None, "an item page needs the item"  # the callers' state has one
    spec = enrollment.cohort.task.spec
    kind = spec.answer_kind
    ctx = _base_context(enrollment)
    ctx.update(
        view="item",
        clock=_clock(enrollment),
        part=_part_label(enrollment),
        item=item,
        item_handle=state.item_handle,
        step=state.step,
        progress=_progress(state.step, state.done, state.total, enrollment.cohort.shots),
        question=_question(spec, item),
        ner_kind=spec.question_badge(item.question),
        first_test_item=state.step == Answer.Step.TEST and state.done == 0 and revising is None,
        revising=revising is not None,
        form_action=reverse("work-revise" if revising is not None else "work-answer"),
        initial_label="",
        initial_spans="[]",
        previous=None,
    )
    if revising is not None:
        ctx["initial_spans"] = json.dumps(revising.spans or [])
        ctx["initial_summary"] = _answer_summary(spec, revising)
    elif state.step == Answer.Step.TEST and state.done > 0:
        last = services.revisable_test_answer(enrollment)  # a test item's or an attention check's: the same offer
        if last is not None:
            ctx["previous"] = {"position": last.position + 1, "summary": _answer_summary(spec, last)}
    ctx.update(kind.widget_context(spec, item, PIECES, revising=revising.texts if revising is not None else None))
    return ctx


def _part_label(enrollment: Enrollment) -> dict | None:
    """ "Part k of n" for a study in parts, else None: from the counts the hot path read with the enrollment (no
    query), else (a training feedback, a test answer being changed) counted here, as the hot path counts them."""
    if not hasattr(enrollment, "test_total"):
        cohort = enrollment.cohort
        enrollment.training_total = TrainingSetItem.objects.filter(training_set_id=cohort.training_set_id).count()
        enrollment.test_total = Example.objects.filter(task_id=cohort.task_id, role=Example.Role.TEST).count()
    parts = len(services.part_bounds(enrollment))
    return {"number": enrollment.part, "parts": parts} if parts > 1 else None


def _texts_display(texts) -> list[str]:
    return [t for t in texts if t and t.strip()]


def _diff_parts(mine: str, gold: str) -> tuple[list[dict], list[dict]]:
    """Both strings cut into runs, each run marked ``diff`` where the two differ (for the feedback chips)."""
    matcher = difflib.SequenceMatcher(None, mine, gold, autojunk=False)
    left, right = [], []
    for op, a0, a1, b0, b1 in matcher.get_opcodes():
        if a1 > a0:
            left.append({"text": mine[a0:a1], "diff": op != "equal"})
        if b1 > b0:
            right.append({"text": gold[b0:b1], "diff": op != "equal"})
    return left, right


def _near_misses(mine: list[str], gold: list[str]) -> list[dict]:
    """Each of the worker's wrong answers next to the closest correct one, with the differing characters."""
    out = []
    for text in mine:
        if text in gold or not gold:
            continue
        closest = max(gold, key=lambda g: difflib.SequenceMatcher(None, text, g, autojunk=False).ratio())
        if difflib.SequenceMatcher(None, text, closest, autojunk=False).ratio() < 0.5:
            continue  # not the same answer at all: nothing to compare character by character
        left, right = _diff_parts(text, closest)
        out.append({"mine": left, "gold": right})
    return out


def _feedback_context(enrollment: Enrollment, answer: Answer) -> dict:
    example = answer.example
    spec = enrollment.cohort.task.spec
    kind = spec.answer_kind
    ctx = _base_context(enrollment)
    order_total = len(services.item_order(enrollment=enrollment, step=Answer.Step.TRAINING))
    ctx.update(
        view="feedback",
        part=_part_label(enrollment),
        item=example,
        item_handle=services.item_handle(enrollment_id=enrollment.pk, item_id=example.pk),
        answer=answer,
        step=Answer.Step.TRAINING,
        progress=_progress(
            Answer.Step.TRAINING,
            answer.position + 1,
            order_total,
            enrollment.cohort.shots,
            position=answer.position + 1,
        ),
        question=_question(spec, example),
        ner_kind=spec.question_badge(example.question),
        mine_texts=_texts_display(answer.texts),
        gold_texts=_texts_display(example.gold),
        s1_percent=round(100 * answer.s1),
        verdict="correct" if answer.s1 >= 0.999 else ("partly" if answer.s1 > 0 else "wrong"),
        last_training_item=answer.position + 1 >= order_total,
        next_state=enrollment.state,
        gold_unproducible=example.gold_unproducible,  # the data's quirk: not counted against the worker
    )
    if kind.near_misses:
        ctx["near_misses"] = _near_misses(ctx["mine_texts"], ctx["gold_texts"])
    ctx.update(
        kind.feedback_context(
            spec,
            example,
            PIECES,
            mine_texts=ctx["mine_texts"],
            gold_texts=ctx["gold_texts"],
            mine_spans=answer.spans,
        )
    )
    return ctx


def _last_training_answer(enrollment: Enrollment) -> Answer | None:
    """The last training answer, while the test step has no answer yet."""
    answers = Answer.objects.filter(enrollment=enrollment).select_related("example")
    if answers.filter(step=Answer.Step.TEST).exists():
        return None
    return answers.filter(step=Answer.Step.TRAINING).order_by("-position").first()


def _stage_context(request: HttpRequest, enrollment: Enrollment) -> dict:
    """What the worker sees now: the page protocol.worker_page picks, filled in."""
    read: list[Answer | None] = []  # the last training answer, once the decision asked for it

    def last_training_answer() -> int | None:
        read.append(_last_training_answer(enrollment))
        return read[-1].pk if read[-1] is not None else None

    page = worker_page(
        enrollment.state,
        shots=enrollment.cohort.shots,
        started=session.has_started(request, enrollment.pk),
        has_answers=lambda: (
            Answer.objects.filter(enrollment=enrollment).exists()
            or (enrollment.cohort.study.has_attention_checks and enrollment.attention_answers.exists())
        ),
        last_training_answer=last_training_answer,
        feedback_seen=session.feedback_seen(request),
    )
    if page is WorkerPage.DESCRIPTION:
        ctx = _base_context(enrollment)
        ctx.update(view="description", info=_step_info(enrollment))
        return ctx
    if page is WorkerPage.FEEDBACK:
        answer = read[-1]
        assert answer is not None  # feedback is chosen only for an answer last_training_answer found
        return _feedback_context(enrollment, answer)
    state = services.current_item(enrollment_id=enrollment.pk)  # the time limit may have ended the enrollment meanwhile
    enrollment = state.enrollment
    page = page_of_step(state.step)
    if page is WorkerPage.ITEM:
        return _item_context(state)
    ctx = _base_context(enrollment)
    outcome = services.completion(enrollment=enrollment)
    if page is WorkerPage.DONE:
        ctx.update(view="done", completion=outcome)
    elif page is WorkerPage.FILTERED:
        ctx.update(view="filtered", completion=outcome)
    elif page is WorkerPage.BETWEEN:
        ctx.update(view="between", completion=outcome, **_between_context(enrollment))
    else:
        stopped = enrollment.stopped_at
        ended_early = stopped is not None and stopped < services.part_deadline(enrollment)
        # A worker who ended the part themselves with nothing answered in it (a withdrawal: no code).
        ended_empty = (
            state.step == State.WITHDRAWN
            and AuditEvent.objects.filter(enrollment=enrollment, action=services.ENDED_UNANSWERED).exists()
        )
        ctx.update(
            view="ended",
            reason=state.step,
            completion=outcome,
            stopped=bool(stopped),
            ended_early=ended_early or ended_empty,
            ended_empty=ended_empty,
        )
        ctx["parts"] = _part_label(enrollment)
    return ctx


def _between_context(enrollment: Enrollment) -> dict:
    """A part done: its code, the next part, and how to come back for it."""
    estimate = attention.worker_estimate(enrollment)
    following = estimate.part(enrollment.part + 1)
    deadline = services.part_deadline(enrollment)
    info = _step_info(enrollment)
    figures = info["all_figures"][following.number]
    return {
        "info": info,
        "next_part": {
            "number": following.number,
            "items": following.items,
            "duration": duration_text(figures["minutes"]),
            "pay": figures["pay"],
            "figures": figures["source"],
            "time_limit": granted_limit(enrollment.cohort, following),
        },
        "return_by": deadline,
        "may_start": enrollment.cohort.study.provider.may_start_part(enrollment, following.number),
    }


def _clock(enrollment: Enrollment) -> dict:
    """The part's clock, from the server's deadline: the seconds left (the page counts down from them, on its own
    clock: a device's time of day may be wrong), and how many are left when the page warns and offers to end the
    part (``warning``: already so), by the rule the server enforces (``services.end_now_seconds``)."""
    deadline = services.part_deadline(enrollment)
    left = max(0.0, (deadline - timezone.now()).total_seconds())
    warn = services.end_now_seconds(enrollment)
    return {"seconds_left": left, "warn_seconds": warn, "warning": left <= warn, "text": clock_text(left)}


def clock_text(seconds: float) -> str:
    """What the countdown shows: "4:05", "1:02:09" (whole seconds, rounded up: never "0:00" before the end)."""
    whole = max(0, -(-int(seconds * 1000) // 1000))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def _enrollment(request: HttpRequest) -> Enrollment | None:
    enrollment_id = bound_enrollment_id(request)
    if enrollment_id is None:
        return None
    return (
        Enrollment.objects.select_related("cohort__study", "cohort__task", "cohort__training_set", "worker")
        .filter(pk=enrollment_id)
        .first()
    )


def _no_enrollment(request: HtmxHttpRequest) -> HttpResponse:
    if request.htmx:  # the session ended under an open page: load the explanation as a whole page
        response = HttpResponse(status=204)
        response["HX-Redirect"] = "/work/"
        return response
    return render(request, "worker/no_enrollment.html", status=403)


def _render_stage(
    request: HtmxHttpRequest,
    enrollment: Enrollment,
    *,
    status: int = 200,
    notice: str = "",
    error: str = "",
    context: dict | None = None,
) -> HttpResponse:
    ctx = _stage_context(request, enrollment) if context is None else context
    ctx.update(
        notice=notice, error=error, instructions_open=request.COOKIES.get(INSTRUCTIONS_COOKIE, "open") != "closed"
    )
    template = "worker/_stage.html" if request.htmx else "worker/page.html"
    response = render(request, template, ctx, status=status)
    response["Cache-Control"] = "no-store"
    return response


# ---------------------------------------------------------------- views


@never_cache
@require_GET
def work(request: HtmxHttpRequest) -> HttpResponse:
    enrollment = _enrollment(request)
    if enrollment is None:
        return _no_enrollment(request)
    return _render_stage(request, enrollment)


@require_POST
def start(request: HtmxHttpRequest) -> HttpResponse:
    enrollment = _enrollment(request)
    if enrollment is None:
        return _no_enrollment(request)
    session.record_start(request, enrollment.pk)
    if request.htmx:
        return _render_stage(request, enrollment)
    return redirect("work")


def _raw_answer(spec: TaskSpec, post) -> list:
    """The services' answer list from the form (the answer kind reads its widget's fields)."""
    return spec.answer_kind.form_answer(post)


def _refused(request: HtmxHttpRequest, enrollment: Enrollment, status: int, **message) -> HttpResponse:
    """A refused answer shows the worker where they are now, with the reason.

    A plain form POST gets the real status (409 / 400). An htmx request gets 200 and the status in
    ``X-Answer-Status``: the page is a normal rendering of the current state (and browsers log every
    4xx fetch as a console error, which would hide real script errors).
    """
    response = _render_stage(request, enrollment, status=200 if request.htmx else status, **message)
    response["X-Answer-Status"] = str(status)
    return response


_CONFLICT_NOTICE = (
    "That answer was not saved: this item had already been answered (answers are final). Here is where you are now."
)
_TIME_UP_NOTICE = (
    "That answer was not saved: the time for this part had passed when it arrived. Your earlier answers are kept "
    "and you are paid for the time you worked: here is your code."
)


@require_POST
def answer(request: HtmxHttpRequest) -> HttpResponse:
    enrollment = _enrollment(request)
    if enrollment is None:
        return _no_enrollment(request)
    item = request.POST.get("item", "")
    if not item:
        return _refused(request, enrollment, 400, error="The answer could not be read. Please try again.")
    try:
        raw = _raw_answer(enrollment.cohort.task.spec, request.POST)
        services.submit_answer(enrollment_id=enrollment.pk, item=item, answer=raw)
    except services.TimeUp:
        enrollment.refresh_from_db()
        return _refused(request, enrollment, 409, notice=_TIME_UP_NOTICE)
    except services.NotCurrentItem:
        enrollment.refresh_from_db()
        return _refused(request, enrollment, 409, notice=_CONFLICT_NOTICE)
    except services.Conflict as exc:
        enrollment.refresh_from_db()
        return _refused(
            request, enrollment, 409, notice=f"That answer was not saved: {exc}. Here is where you are now."
        )
    except InvalidAnswer as exc:
        enrollment.refresh_from_db()
        return _refused(request, enrollment, 400, error=f"Not saved: {exc}.")
    enrollment.refresh_from_db()
    if not request.htmx:
        return redirect("work")
    response = _render_stage(request, enrollment)
    if enrollment.state == State.COMPLETED:
        # A full page load for the completion page: it may redirect or post to the platform.
        response["HX-Redirect"] = request.build_absolute_uri("/work/")
    return response


@require_POST
def next_part(request: HtmxHttpRequest) -> HttpResponse:
    """A worker between parts starts the next one."""
    enrollment = _enrollment(request)
    if enrollment is None:
        return _no_enrollment(request)
    try:
        services.start_next_part(enrollment_id=enrollment.pk)
    except services.Conflict as exc:
        enrollment.refresh_from_db()
        return _refused(request, enrollment, 409, notice=f"{exc}.")
    session.record_start(request, enrollment.pk)
    enrollment.refresh_from_db()
    if not request.htmx:
        return redirect("work")
    return _render_stage(request, enrollment)


@require_POST
def stop(request: HtmxHttpRequest) -> HttpResponse:
    """The worker ends the part now, before its time limit: a code and the pay for the time worked."""
    enrollment = _enrollment(request)
    if enrollment is None:
        return _no_enrollment(request)
    try:
        services.stop_part(enrollment_id=enrollment.pk)
    except services.Conflict as exc:
        enrollment.refresh_from_db()
        return _refused(request, enrollment, 409, notice=f"{exc}.")
    enrollment.refresh_from_db()
    if not request.htmx:
        return redirect("work")
    response = _render_stage(request, enrollment)
    response["HX-Redirect"] = request.build_absolute_uri("/work/")
    return response


@require_POST
def next_item(request: HtmxHttpRequest) -> HttpResponse:
    """Leave the feedback of a training answer: the form posts the answered item's handle (no database id is
    ever on a worker's page); only this enrollment's last training answer can be acknowledged."""
    enrollment = _enrollment(request)
    if enrollment is None:
        return _no_enrollment(request)
    last = _last_training_answer(enrollment)
    if last is not None and services.is_item_handle(
        request.POST.get("item", ""), enrollment_id=enrollment.pk, item_id=last.example_id
    ):
        session.record_feedback_seen(request, last.pk)
    if request.htmx:
        return _render_stage(request, enrollment)
    return redirect("work")


# ---------------------------------------------------------------- changing the last test answer


def _revise_context(enrollment: Enrollment) -> dict | None:
    """The last test answer's item, to be answered again; None when no answer can be changed now."""
    last = services.revisable_test_answer(enrollment)
    if last is None:
        return None
    total = _test_total(enrollment)
    state = services.WorkState(
        step=Answer.Step.TEST, done=last.position, total=total, item=last.item, enrollment=enrollment
    )
    return _item_context(state, revising=last)


_NOT_REVISABLE = (
    "That answer can no longer be changed: only your last test answer can be changed, until you "
    "submit the next one. Here is where you are now."
)


def revise(request: HtmxHttpRequest) -> HttpResponse:
    """GET: the last test answer's item, with that answer chosen; POST: store the changed answer."""
    enrollment = _enrollment(request)
    if enrollment is None:
        return _no_enrollment(request)
    if request.method == "GET":
        ctx = _revise_context(enrollment)
        if ctx is None:
            return _render_stage(request, enrollment, notice=_NOT_REVISABLE)
        return _render_stage(request, enrollment, context=ctx)
    if request.method != "POST":
        return HttpResponse(status=405, headers={"Allow": "GET, POST"})
    item = request.POST.get("item", "")
    if not item:
        return _refused(request, enrollment, 400, error="The answer could not be read. Please try again.")
    try:
        raw = _raw_answer(enrollment.cohort.task.spec, request.POST)
        answer = services.revise_last_test_answer(enrollment_id=enrollment.pk, item=item, answer=raw)
    except services.TimeUp:
        enrollment.refresh_from_db()
        return _refused(request, enrollment, 409, notice=_TIME_UP_NOTICE)
    except services.Conflict:
        enrollment.refresh_from_db()
        return _refused(request, enrollment, 409, notice=_NOT_REVISABLE)
    except InvalidAnswer as exc:
        ctx = _revise_context(enrollment)
        return _render_stage(
            request, enrollment, status=200 if request.htmx else 400, error=f"Not changed: {exc}.", context=ctx
        )
    if not request.htmx:
        return redirect("work")
    return _render_stage(
        request,
        enrollment,
        notice=f"Your answer to test item {answer.position + 1} is changed. Here is the next item.",
    )
