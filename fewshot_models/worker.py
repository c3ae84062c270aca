"""``worker``: a chat model goes through the crowd protocol as a crowdworker does, over a chat backend
(an OpenAI-compatible server).

One conversation, as the worker pages run it:

1. the task's description as the description page shows it (its name, the description, how the study goes,
   the exact-match rule), and how to type an answer: the one difference from a worker, who clicks;
2. the training step: the K training items of the split one at a time in file order; after each answer, the
   feedback page's verdict, the item's S1, the gold answer and the page's note for an item whose gold cannot be
   marked exactly (a quirk of the data; left out of the training S1, ``notes["unproducible_training_items"]``),
   cumulatively in the same conversation (each training request carries everything before it, so these
   requests go one after the other);
3. the test step: every test item as its own request carrying the whole training transcript and no gold;
   test requests are independent and sent concurrently (the longest first, alone: a window too small for the
   transcript is then refused once, not once per item).

Zero shots: the description alone, then the test items.

Each reply is read by the rules a worker's answer is validated by (``annotation.answers``): a label of the
task (case and aliases forgiven), spans that are text of the context (snapped to it exactly, as
``base.snap_to_context`` does), at most one span where the task takes one, an entity among the item's
candidates. A reply that reads as none of these gets what a worker's invalid answer gets: the validation
message, and one more try in the same conversation (``notes["re_asked_items"]``); a second invalid reply is an
unparseable reply, recorded as such (``notes["unparseable_items"]``) and scored as the empty answer. Items are
named by their CLUES ids.

Sampling: ``temperature`` (default 0, greedy) and the run's seed, sent with every request; runs over several
seeds then form one row.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from tasks_data.kinds import InvalidAnswer
from tasks_data.registry import TaskSpec
from tasks_data.s1 import item_s1

from .backends import ChatRequest, ContextTooSmall, open_backend
from .base import (
    Adapter,
    AdapterConfig,
    AdapterError,
    AdapterExample,
    AdapterResult,
    PredictCounter,
    Progress,
    distinct,
)

DEFAULTS = {
    "max_new_tokens": 64,  # a reply: a label, a few names, an answer span
    "temperature": 0.0,  # greedy; > 0 samples (with the run's seed)
}

SPAN_SEPARATOR = " | "


def how_to_answer(task: TaskSpec) -> str:
    return task.answer_kind.reply_instruction(task)


def description_text(task: TaskSpec, *, training_items: int, test_items: int) -> str:
    """The description page, in words (templates/worker/_description.html), and how to type an answer."""
    lines = [
        f"You are a participant in a study. {task.name}: what to do",
        "",
        task.description,
        "",
        "How the study goes:",
    ]
    if training_items:
        lines.append(
            f"- Training: {training_items} item{'s' if training_items != 1 else ''}. After each answer you "
            "see the correct answer, so you can learn what is wanted."
        )
    lines.append(f"- Test: {test_items} item{'s' if test_items != 1 else ''}. The correct answers are not shown.")
    if task.train_rows_per_shot > 1:
        lines.append(
            f"- Each text comes {task.train_rows_per_shot} times, each time asking for another kind of "
            "name: look at the question every time."
        )
    if task.answer_kind.chat_rule:
        lines.append(f"- {task.answer_kind.chat_rule}")
    lines += ["", how_to_answer(task)]
    return "\n".join(lines)


def item_text(task: TaskSpec, ex: AdapterExample) -> str:
    """An item as the item page shows it: the text, the question, and for ReCoRD the names to choose from."""
    return task.answer_kind.chat_item_text(task, ex)


def _answer_words(task: TaskSpec, texts: Sequence[str]) -> str:
    if not texts:
        return task.answer_kind.none_reply
    return SPAN_SEPARATOR.join(texts)


UNPRODUCIBLE_NOTE = (
    "This item's correct answer is not written exactly as in the text (a quirk of the benchmark data), so it "
    "cannot be marked exactly. It does not count in your training score."
)


def feedback_text(task: TaskSpec, ex: AdapterExample, answer: list[str]) -> tuple[str, float]:
    """The feedback page in words (templates/worker/_feedback.html): verdict, the item's S1, both answers, and
    the page's note where the gold cannot be marked exactly."""
    alternatives = task.answer_kind.gold_is_alternatives
    gold = distinct(a.strip() for a in ex.answers)
    score = item_s1(answer, list(ex.answers), alternatives=alternatives)
    verdict = "Correct" if score >= 1 else ("Partly correct" if score > 0 else "Not correct")
    gold_words = " | ".join(gold) if gold else task.answer_kind.none_reply
    any_of = " (any of these)" if alternatives and len(gold) > 1 else ""
    note = f"\n{UNPRODUCIBLE_NOTE}" if ex.gold_unproducible else ""
    return (
        f"{verdict}. Score for this item: {round(100 * score)}%.\nYour answer: {_answer_words(task, answer)}\n"
        f"Correct answer{any_of}: {gold_words}{note}"
    ), score


def read_reply(task: TaskSpec, ex: AdapterExample, reply: str) -> list[str] | None:
    """A reply read as a worker's answer is validated (the answer kind's rules); None when it reads as no
    valid answer."""
    try:
        return task.answer_kind.read_reply(task, ex, reply)
    except InvalidAnswer:
        return None


def reply_problem(task: TaskSpec, ex: AdapterExample, reply: str) -> str:
    """Why a reply is no valid answer, in the words the answer kind's validation gives a worker."""
    try:
        task.answer_kind.read_reply(task, ex, reply)
    except InvalidAnswer as exc:
        return str(exc)
    return ""


AGAIN = "That answer was not accepted: {problem} Please answer again."


def demonstrations_that_fit(
    prefix_chars: Sequence[int], tail_chars: int, exc: ContextTooSmall, max_tokens: int
) -> int | None:
    """About how many training items fit, from the server's refusal: tokens per character estimated from the
    refused request (``requested`` tokens for ``prefix_chars[-1] + tail_chars`` characters); None if unknown."""
    if not exc.window or not exc.requested:
        return None
    per_char = exc.requested / max(1, prefix_chars[-1] + tail_chars)
    fit = 0
    for i, chars in enumerate(prefix_chars):
        if (chars + tail_chars) * per_char + max_tokens <= exc.window:
            fit = i
    return fit


class WorkerAdapter(Adapter):
    method = "worker"
    defaults = DEFAULTS
    needs = ("chat",)
    zero_shot = True

    @staticmethod
    def _answer(task: TaskSpec, items, conversations, ask, notes: dict, done=None) -> list[tuple]:
        """Each item's answer and the turns that gave it: a reply that is no valid answer gets the validation
        message and one more try, as a worker's would (answer None: still none)."""
        replies = ask(conversations, done)
        out = []
        for ex, conversation, reply in zip(items, conversations, replies, strict=True):
            out.append((read_reply(task, ex, reply), [conversation[-1], ("assistant", reply)]))
        again = [k for k, (answer, _) in enumerate(out) if answer is None]
        if not again:
            return out
        retries = []
        for k in again:
            problem = AGAIN.format(problem=reply_problem(task, items[k], replies[k]))
            retries.append([*conversations[k], ("assistant", replies[k]), ("user", problem)])
        for k, retry, reply in zip(again, retries, ask(retries), strict=True):
            notes["re_asked_items"].append(items[k].uid)
            out[k] = (read_reply(task, items[k], reply), [*out[k][1], retry[-1], ("assistant", reply)])
        return out

    def run(
        self,
        task: TaskSpec,
        train: Sequence[AdapterExample],
        test: Sequence[AdapterExample],
        config: AdapterConfig,
        progress: Progress | None = None,
    ) -> AdapterResult:
        self.check_applies(task)
        hp = config.resolve(DEFAULTS, self.method)
        max_tokens, temperature = int(hp["max_new_tokens"]), float(hp["temperature"])
        with open_backend(config, method=self.method, needs=self.needs, progress=progress) as backend:

            def ask(messages, done=None):
                return backend.chat(
                    [
                        ChatRequest(messages=tuple(m), max_tokens=max_tokens, temperature=temperature, seed=config.seed)
                        for m in messages
                    ],
                    done,
                )

            opening = description_text(task, training_items=len(train), test_items=len(test))
            messages: list[tuple[str, str]] = []
            pending = opening  # the next user message, still being written
            notes: dict = {
                "protocol": "worker",
                "training_replies": [],
                "training_s1": [],
                "unproducible_training_items": [ex.uid for ex in train if ex.gold_unproducible],
                "unparseable_training_replies": 0,
                "unparseable_items": [],
                "unparseable_replies": 0,
                "re_asked_items": [],
            }
            # characters of the conversation before training item i (for the context-window message)
            prefix_chars = [len(opening)]
            start = time.perf_counter()
            for i, ex in enumerate(train):
                pending += f"\n\nTraining item {i + 1} of {len(train)}:\n{item_text(task, ex)}"
                try:
                    ((answer, turns),) = self._answer(task, [ex], [[*messages, ("user", pending)]], ask, notes)
                except ContextTooSmall as exc:
                    raise AdapterError(
                        f"worker: the model's context window ({exc.window or '?'} tokens) cannot hold the transcript "
                        f"up to training item {i + 1} of {len(train)} ({exc.requested or '?'} tokens requested): "
                        f"{i} training item(s) fit; run fewer shots or serve the model with a longer context "
                        "(vLLM: --max-model-len)"
                    ) from None
                notes["training_replies"].append(turns[-1][1])
                notes["unparseable_training_replies"] += answer is None
                feedback, score = feedback_text(task, ex, answer or [])
                notes["training_s1"].append(score)
                messages += turns
                pending = feedback
                prefix_chars.append(sum(len(t) for _, t in messages) + len(pending))
                if progress:
                    progress("train", i + 1, len(train))
            train_seconds = time.perf_counter() - start
            if train:
                pending += (
                    "\n\nThe training step is over. From now on the correct answers are not shown. Answer as "
                    "in the training."
                )
            start = time.perf_counter()
            asks = [[*messages, ("user", f"{pending}\n\nTest item:\n{item_text(task, ex)}")] for ex in test]
            done = PredictCounter(progress, len(test))
            first = max(range(len(test)), key=lambda j: len(asks[j][-1][1])) if test else 0
            order = [first, *(j for j in range(len(test)) if j != first)]
            answered: list = []
            try:  # the longest alone first: a transcript too long for the window is refused once
                for batch in ([first], order[1:]) if test else ():
                    answered += self._answer(task, [test[j] for j in batch], [asks[j] for j in batch], ask, notes, done)
            except ContextTooSmall as exc:
                j = order[min(len(answered) + exc.index, len(order) - 1)]
                tail = len(item_text(task, test[j])) + 40
                fit = demonstrations_that_fit(prefix_chars, tail, exc, max_tokens)
                raise AdapterError(
                    f"worker: the model's context window ({exc.window or '?'} tokens) cannot hold the training "
                    f"transcript of {len(train)} item(s) with test item {j + 1} ({exc.requested or '?'} tokens "
                    f"requested); about {'?' if fit is None else fit} training item(s) fit: run fewer shots or serve "
                    "the model with a longer context (vLLM: --max-model-len)"
                ) from None
            predictions: list = [None] * len(test)
            for j, (answer, _) in zip(order, answered, strict=True):
                if answer is None:
                    notes["unparseable_replies"] += 1
                    notes["unparseable_items"].append(test[j].uid)
                predictions[j] = answer or []
            predict_seconds = time.perf_counter() - start
            notes.update(backend.notes())
            notes.update(
                seed=config.seed,
                model=backend.model_name,
                hyperparameters=hp,
                scoring="the reply read as a worker's answer (unparseable = the empty answer)",
                description=opening,
            )
            return AdapterResult(
                predictions=predictions,
                device=backend.device,
                train_seconds=train_seconds,
                predict_seconds=predict_seconds,
                train_examples_per_second=None,
                peak_gpu_memory_bytes=None,
                notes=notes,
                usage=backend.tally.as_dict(),
                demonstrations=[len(train)] * len(test),  # every test item carries the whole training transcript
                scoring="chat",
            )
