"""``icl``: in-context learning (CLUES paper, section 5.1c, where GPT-3 was queried through its API),
no parameter update. The method builds prompts and decodes answers; the model is a backend
(``backends``): a local ``AutoModelForCausalLM`` checkpoint in process (``transformers``, the
default), or any OpenAI-compatible server (``openai``).

Prompt: the K training examples as demonstrations, in an order shuffled by the seed (the same
order for every test item), then the query::

    Context: <context>
    Hypothesis: <hypothesis>        (MNLI only; the context line holds the premise)
    Question: <question>
    Answer: <answer>
    <blank line>
    ...
    Context: <test context>
    Question: <test question>
    Answer:

Demonstration answers: the label; the entities of an NER question in order of appearance,
joined by ", "; the first alternative of an MRC answer; "none" for the empty set.

* ``LABEL`` tasks, and ``ENTITY`` (ReCoRD) over the distinct texts of the candidate entities:
  the answer is the candidate whose continuation " <candidate>" has the largest summed
  log-likelihood given the prompt (lm-evaluation-harness ``loglikelihood`` style, no length
  normalisation).
* ``SPANS`` and ``SPAN_OR_NONE``: greedy generation (at most ``max_new_tokens``) up to the first
  newline, parsed into a set: "none" = the empty set; NER answers split on commas. Each span is
  mapped to its exact substring of the context (``base.snap_to_context``: exact, else
  case-insensitive with flexible whitespace); spans not in the context are dropped (counted in
  ``notes["spans_not_in_context"]``), so predictions are always context substrings.

Context window: the backend's (in process: the model's maximum positions, or ``max_length`` when
given), minus room for the answer (the longest candidate continuation, or ``max_new_tokens`` when
generating). Demonstrations that do not fit are dropped from the FRONT of the shuffled order (the
ones nearest the query are kept); ``notes["demonstrations_used"]`` gives, per test item, how many
were used (the last that many of ``notes["demonstration_order"]``). If the query alone does not
fit, its oldest tokens are cut (``notes["queries_truncated"]``).

A server counts tokens only by answering, so the fit is computed once per (server, model, task): the
window from ``/v1/models`` where given, else from the refusal of one request; tokens per character from
one request of one token over the longest prompt (``Backend.prompt_tokens``). Each prompt keeps the
demonstrations that fit by that estimate (+10%): at most one request per (server, model, task) is refused
as too long (``notes["context_fit"]``); a prompt that still does not fit fails the run with the reason.

Over a server that cannot score continuations (no ``logprobs``/``echo`` on ``/v1/completions``), a
label or candidate answer is generated instead and read as a worker's would be: a label of the
task (case and aliases forgiven), a candidate entity's text; anything else is an unparseable reply,
scored as the empty answer (``notes["unparseable_replies"]``). ``notes["scoring"]`` says which.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from tasks_data.registry import TaskSpec

from .backends import ContextTooSmall, GenerationRequest, LoglikelihoodRequest, open_backend
from .base import (
    Adapter,
    AdapterConfig,
    AdapterError,
    AdapterExample,
    AdapterResult,
    PredictCounter,
    Progress,
    parse_answer_text,
    pick_option,
    render_answer,
    snap_to_context,
)

DEFAULTS = {
    "max_length": None,  # context window; None = the model's maximum positions
    "max_new_tokens": 48,  # generation budget (SQuAD answers: <= 30 tokens; NER lists longer)
    "eval_batch_size": 8,  # sequences per forward pass (in process)
    "max_demonstrations": None,  # None = all training examples (CLUES: K = 10, 20 or 30)
}

#: (server, model, task) -> tokens per character of the task's prompts, learned once (see the docstring).
SERVER_FITS: dict[tuple[str, str, str], float] = {}
MARGIN = 1.1  # the estimate of a prompt's tokens, from its characters, is taken 10% longer

PROMPT_FORMAT = "Context: {context}\n[Hypothesis: {hypothesis}\n]Question: {question}\nAnswer: {answer}\n\n"


def render_example(ex: AdapterExample, answer: str | None) -> str:
    """One demonstration (``answer`` given) or the query (``answer`` None: ends at "Answer:")."""
    text = f"Context: {ex.context}\n"
    if ex.hypothesis:
        text += f"Hypothesis: {ex.hypothesis}\n"
    text += f"Question: {ex.question}\nAnswer:"
    if answer is not None:
        text += f" {answer}\n\n"
    return text


def shuffled_demonstrations(train: Sequence[AdapterExample], seed: int) -> list[AdapterExample]:
    order = list(train)
    random.Random(seed).shuffle(order)
    return order


def fit_demonstrations(demo_lengths: Sequence[int], query_length: int, budget: int) -> int:
    """How many demonstrations fit, dropping from the front: the largest n such that the last
    n demonstrations plus the query take at most ``budget`` tokens."""
    total, n = query_length, 0
    for length in reversed(demo_lengths):
        if total + length > budget:
            break
        total += length
        n += 1
    return n


def parse_generated(task: TaskSpec, ex: AdapterExample, text: str, notes: dict) -> list[str]:
    """A generated span answer -> the set of its spans found in the context (exact substrings); the
    others are dropped and counted in ``notes["spans_not_in_context"]``."""
    kind = task.answer_kind
    parsed = parse_answer_text(text, kind)
    out = []
    for span in parsed:
        exact = snap_to_context(span, ex.context)
        if exact is None:
            notes["spans_not_in_context"] += 1
        elif exact not in out:
            out.append(exact)
    if kind.max_spans is not None:
        out = out[: kind.max_spans]
    return out


class ICLSession:
    """The method over one backend: demonstrations, prompts within the backend's budget, decoding."""

    def __init__(self, task: TaskSpec, config: AdapterConfig, progress: Progress | None = None, backend=None):
        self.task, self.config = task, config
        self.hp = config.resolve(DEFAULTS, "icl")
        self.backend = backend or open_backend(
            config,
            method="icl",
            needs=ICLAdapter.needs,
            what="causal-LM checkpoint",
            progress=progress,
            causal_lm=True,
            batch_size=int(self.hp["eval_batch_size"]),
            max_length=self.hp["max_length"],
        )
        if progress:
            progress("load", 1, 1)

    def demonstrations(self, train: Sequence[AdapterExample]) -> list[AdapterExample]:
        demos = shuffled_demonstrations(train, self.config.seed)
        if self.hp["max_demonstrations"] is not None:  # keep the last m of the shuffled order
            m = max(0, int(self.hp["max_demonstrations"]))
            demos = demos[max(0, len(demos) - m) :] if m else []
        return demos

    def request(self, ex: AdapterExample, options: Sequence[str]):
        """The query's request (a context of the query alone; the demonstrations are added by ``fit``)."""
        query = (render_example(ex, None),)
        if options and self.backend.scores_loglikelihood:
            return LoglikelihoodRequest(query, tuple(" " + o for o in options))
        return GenerationRequest(query, max_tokens=int(self.hp["max_new_tokens"]))

    def fit(self, request, demo_texts: list[str], demo_lengths: list[int] | None):
        """-> (request with the demonstrations that fit before its query, how many, query truncated?)"""
        budget = self.backend.context_budget(request)
        query = request.context[-1]
        counted = self.backend.count_tokens([query]) if budget is not None and demo_lengths is not None else None
        if budget is None or demo_lengths is None or counted is None:
            n, truncated = len(demo_texts), False
        else:
            (q,) = counted
            n, truncated = fit_demonstrations(demo_lengths, q, budget), q > budget
        return replace(request, context=(*demo_texts[len(demo_texts) - n :], query)), n, truncated

    def predict(
        self, train: Sequence[AdapterExample], test: Sequence[AdapterExample], progress: Progress | None = None
    ):
        task = self.task
        demos = self.demonstrations(train)
        demo_texts = [render_example(d, render_answer(task, d)) for d in demos]
        demo_lengths = self.backend.count_tokens(demo_texts)
        notes: dict[str, Any] = {
            "demonstration_order": [d.uid for d in demos],
            "demonstrations_used": [],
            "queries_truncated": 0,
            "spans_not_in_context": 0,
        }
        options = [task.answer_kind.options(task, ex) for ex in test]  # labels, candidates; none for spans
        requests, used = [], []
        for ex, opts in zip(test, options, strict=True):
            request, n, truncated = self.fit(self.request(ex, opts), demo_texts, demo_lengths)
            requests.append(request)
            used.append(n)
            notes["queries_truncated"] += int(truncated)
        if demo_lengths is None and requests:  # a server: the fit estimated once from its own counts
            requests, used = self.fit_on_server(requests, len(demo_texts), notes)
        done = PredictCounter(progress, len(test))
        scored = [j for j, r in enumerate(requests) if isinstance(r, LoglikelihoodRequest)]
        generated = [j for j, r in enumerate(requests) if isinstance(r, GenerationRequest)]
        scores = self._answer(self.backend.loglikelihood, requests, scored, notes, done)
        texts = self._answer(self.backend.generate_until, requests, generated, notes, done)
        preds: list = [None] * len(test)
        for j in scored:
            opts = options[j]
            preds[j] = [opts[max(range(len(opts)), key=lambda k: (scores[j][k], -k))]]
        for j in generated:
            if options[j]:  # a label or candidate generated: read as a worker's choice
                choice = pick_option(task, options[j], texts[j])
                notes["unparseable_replies"] = notes.get("unparseable_replies", 0) + (choice is None)
                preds[j] = [choice] if choice is not None else []
            else:
                preds[j] = parse_generated(task, test[j], texts[j], notes)
        notes["demonstrations_used"] = used
        return preds, notes

    @staticmethod
    def _room(request) -> int:
        """Tokens kept for the answer (a continuation has at most one token per character)."""
        if isinstance(request, GenerationRequest):
            return int(request.max_tokens)
        return max(len(c) for c in request.continuations)

    def fit_on_server(self, requests: list, n_demos: int, notes: dict) -> tuple[list, list[int]]:
        """Each request with the demonstrations that fit the server's window, by an estimate made once per
        (server, model, task) from the server's own counts (see the module's docstring)."""
        backend = self.backend
        key = (backend.server, backend.model_name, self.task.slug)
        ratio, fit = SERVER_FITS.get(key), {"measured": False, "refused": 0}
        if ratio is None or not backend.window:
            ratio = self._measure(requests, fit)
            if ratio:
                SERVER_FITS[key] = ratio
        window = backend.window
        notes["context_fit"] = {**fit, "window": window, "tokens_per_char": ratio and round(ratio, 4)}
        if not window or not ratio:
            return requests, [n_demos] * len(requests)
        out, used = [], []
        for j, request in enumerate(requests):
            *demos, query = request.context
            estimate = [math.ceil(len(text) * ratio * MARGIN) for text in (*demos, query)]
            budget = window - self._room(request)
            if estimate[-1] > budget:
                raise AdapterError(
                    f"icl: test item {j + 1} alone (about {estimate[-1]} tokens) does not fit the model's "
                    f"context window ({window} tokens) with room for its answer"
                )
            n = fit_demonstrations(estimate[:-1], estimate[-1], budget)
            out.append(replace(request, context=(*demos[len(demos) - n :], query)))
            used.append(n)
        return out, used

    def _measure(self, requests: list, fit: dict) -> float | None:
        """Tokens per character, from one request of one token over the longest prompt (cut to the window's
        characters where the window is known); a refusal gives the window. None when the server says neither."""
        longest = max(requests, key=lambda r: sum(map(len, r.context)))
        *demos, query = longest.context
        window = self.backend.window
        if window:  # a token is at least a character: this many characters fit
            fits = int(0.9 * (window - self._room(longest)))
            while demos and sum(map(len, (*demos, query))) > fits:
                demos.pop(0)
            query = query[:fits] if not demos else query
        context = (*demos, query)
        chars = sum(map(len, context))
        fit["measured"] = True
        try:
            tokens = self.backend.prompt_tokens(context)
        except ContextTooSmall as exc:
            fit["refused"] = 1
            if not exc.window or not exc.requested:
                raise AdapterError(
                    f"icl: the server refused the longest prompt ({chars} characters) as too long for the model's "
                    f"context window without saying the window or the prompt's tokens ({exc}); run fewer "
                    "demonstrations (--set max_demonstrations=N) or serve the model with a longer context"
                ) from None
            tokens = exc.requested - 1  # the request asked for one token after the prompt
        return tokens / chars if tokens and chars else None

    def _answer(self, ask, requests: list, indices: list[int], notes: dict, done) -> dict:
        """``ask`` the backend for ``requests[indices]``; a prompt the model's window refuses fails the run."""
        if not indices:
            return {}
        try:
            answers = ask([requests[j] for j in indices], done)
        except ContextTooSmall as exc:
            j = indices[exc.index]
            fit = notes.get("context_fit") or {}
            raise AdapterError(
                f"icl: test item {j + 1} with {len(requests[j].context) - 1} demonstration(s) does not fit the "
                f"model's context window ({exc.window or fit.get('window') or '?'} tokens) although the fit "
                f"estimated it would ({exc}); run fewer demonstrations (--set max_demonstrations=N)"
            ) from None
        return dict(zip(indices, answers, strict=True))


class ICLAdapter(Adapter):
    method = "icl"
    defaults = DEFAULTS  # applies to every task (Adapter.applies_to)
    needs = ("generate",)
    zero_shot = True

    def run(
        self,
        task: TaskSpec,
        train: Sequence[AdapterExample],
        test: Sequence[AdapterExample],
        config: AdapterConfig,
        progress: Progress | None = None,
    ) -> AdapterResult:
        import time

        self.check_applies(task)
        session = ICLSession(task, config, progress)
        with session.backend as backend:
            start = time.perf_counter()
            predictions, notes = session.predict(train, test, progress)
            seconds = time.perf_counter() - start
            chosen = task.answer_kind.is_choice  # a label or a candidate, not written text
            generated = chosen and not backend.scores_loglikelihood
            notes.update(backend.notes())
            if generated:  # the method's own route is log-likelihood: why it could not be taken
                notes["scoring_fallback"] = notes.get("echo_refused") or (
                    "the server has no /v1/completions"
                    if notes.get("completions_endpoint") is False
                    else f"the {backend.name} backend cannot score continuations"
                )
            notes.update(
                seed=config.seed,
                model=backend.model_name,
                hyperparameters=session.hp,
                prompt_format=PROMPT_FORMAT,
                scoring=(
                    "summed log-likelihood of ' <option>'"
                    if chosen and not generated
                    else "greedy generation to newline" + (", read as a worker's choice" if generated else "")
                ),
            )
            return AdapterResult(
                predictions=predictions,
                device=backend.device,
                train_seconds=0.0,
                predict_seconds=seconds,
                train_examples_per_second=None,
                peak_gpu_memory_bytes=backend.peak_memory_bytes(),
                notes=notes,
                usage=backend.tally.as_dict() if not backend.in_process else None,
                demonstrations=list(notes["demonstrations_used"]),
                scoring="log-likelihood" if chosen and not generated else "generation",
            )
