"""The server backend: any server speaking the OpenAI-compatible API (vLLM, SGLang, TGI, llama.cpp server,
``transformers serve``, Ollama, hosted APIs), through httpx (``http.Exchange``: retries, a bounded window of
requests in flight, the store of answered requests).

Endpoints (the OpenAI API reference, as the servers above implement it):

* ``GET  /v1/models``: checked when the backend opens; a model the server does not list is asked for one token
  (``transformers serve`` lists a fixed catalogue and loads any checkpoint a request names); a model the server
  does not serve is a clear error naming the server and the models it lists. The context window is read from
  the model's entry where the server gives it (vLLM, SGLang: ``max_model_len``);
* ``POST /v1/chat/completions``: ``chat`` (an answer streamed as server-sent events is read as one answer);
* ``POST /v1/completions``: ``generate_until``, and ``loglikelihood`` with ``echo`` and ``logprobs`` once the
  server has shown that its echoed log-probabilities are right: on first use, the model's own continuation of a
  known prompt is scored both ways (the log-probabilities it gave while generating, and those it echoes for the
  same text in the prompt). Where they disagree (llama-cpp-python's echo is shifted by one token), or the
  prompt's log-probabilities are absent, ``scores_loglikelihood`` is False, the reason is in the notes
  (``echo_refused``) and a method generates instead. A server without ``/v1/completions`` (hosted chat models,
  ``transformers serve``) generates through the chat endpoint.

The key: ``OPENAI_API_KEY`` from the environment, sent as ``Authorization: Bearer``; it is never part of a
stored request, a note, a log line or an error message.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Any, ClassVar

from ..base import AdapterConfig
from .base import (
    Backend,
    BackendError,
    ChatRequest,
    ContextTooSmall,
    Done,
    GenerationRequest,
    LoglikelihoodRequest,
    MemoryStore,
    Tally,
)
from .http import Exchange, context_too_small, normalise_base_url

KEY_VARIABLE = "OPENAI_API_KEY"
BASE_URL_VARIABLE = "OPENAI_BASE_URL"
#: Where servers give a model's context window in its ``/v1/models`` entry.
WINDOW_FIELDS = ("max_model_len", "context_length", "context_window", "max_context_length")
#: The prompt whose continuation checks the echoed log-probabilities; its tolerance in nats per token (prefill
#: and decoding round differently; a shifted token is off by far more).
CHECK_PROMPT = "Question: What is the capital of France?\nAnswer:"
CHECK_TOLERANCE = 0.1


def _headers() -> dict:
    key = os.environ.get(KEY_VARIABLE, "")
    return {"Accept": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}


def _offered(data: dict) -> dict[str, dict]:
    return {str(m.get("id")): m for m in (data.get("data") or []) if isinstance(m, dict)}


def _window(entry: dict | None) -> int | None:
    for name in WINDOW_FIELDS:
        value = (entry or {}).get(name)
        if isinstance(value, int) and value > 0:
            return value
    return None


class OpenAIBackend(Backend):
    name = "openai"
    requires = ("httpx",)
    provides = frozenset({"loglikelihood", "generate", "chat"})
    remote = True
    backoff = 0.5  # first back-off in seconds (http.Exchange), doubled at each retry
    #: (server, model) -> context window learned from a refusal, and models a server answered for though it
    #: did not list them: known for the rest of the process, so that a sweep asks once.
    learned_windows: ClassVar[dict[tuple[str, str], int]] = {}
    answered_for: ClassVar[set[tuple[str, str]]] = set()

    def __init__(self, config: AdapterConfig, *, method: str, progress=None, **_in_process_options):
        super().__init__(config, method=method)
        if not config.model:
            raise BackendError(
                f"{method} over an OpenAI-compatible server needs the model's name as the server "
                "knows it (--models NAME; GET /v1/models lists them)"
            )
        self.config, self.method = config, method
        self.model_name = config.model
        self.server = normalise_base_url(config.server or os.environ.get(BASE_URL_VARIABLE, ""))
        self.device = "server"
        self.client = Exchange(
            self.server,
            headers=_headers(),
            concurrency=config.concurrency,
            timeout=config.timeout,
            max_retries=config.max_retries,
            store=config.store if config.store is not None else MemoryStore(),
            tally=self.tally,
        )
        self.client.backoff = self.backoff
        self.client.refuse = self._refuse
        self.concurrency = self.client.concurrency
        self._completions: bool | None = None  # /v1/completions exists
        self._logprobs: bool | None = None  # ... and its echoed log-probabilities passed the check
        self.echo_refused = ""
        try:
            entry, offered = self.served(self.client, self.model_name)
        except BaseException:
            self.client.close()
            raise
        if entry is None:
            self.client.close()
            raise BackendError(
                f"{self.server} does not serve {self.model_name!r}; it offers: {', '.join(offered) or 'no model'}"
            )
        self.tally = self.client.tally = Tally()  # the tally counts the run's requests, not these free checks
        self.window = _window(entry) or self.learned_windows.get((self.server, self.model_name))

    # ------------------------------------------------------------------ the model on the server

    @classmethod
    def check(cls, models: Sequence[str], server: str = "") -> str:
        server = normalise_base_url(server or os.environ.get(BASE_URL_VARIABLE, ""))
        client = Exchange(
            server, headers=_headers(), concurrency=1, timeout=10.0, max_retries=0, store=None, tally=Tally()
        )
        client.refuse = lambda status, text, *_: _refuse_key(server, status, text)
        try:
            found = {model: cls.served(client, model) for model in dict.fromkeys(models)}
        finally:
            client.close()
        unknown = [m for m, (entry, _) in found.items() if entry is None]
        if unknown:
            offered = next(iter(found.values()))[1]
            offered_text = ", ".join(offered) or "none"
            raise BackendError(f"{server} does not serve {', '.join(unknown)}; it offers: {offered_text}")
        return server

    @classmethod
    def served(cls, client: Exchange, model: str) -> tuple[dict | None, list[str]]:
        """(the model's ``/v1/models`` entry, ``{}`` for a model the server answered for without listing it, None
        when it does not serve it; the models it lists)."""
        server = client.server
        try:
            data = client.send("GET", "models", retries=min(1, client.max_retries))
        except BackendError as exc:
            if "refused the key" in str(exc):
                raise
            hint = "" if re.search(r"/v\d+$", server) else f"; the base URL usually ends in /v1: {server}/v1?"
            raise BackendError(f"cannot reach {server} or list its models (GET /models: {exc}){hint}") from None
        offered = _offered(data)
        if model in offered:
            return offered[model], list(offered)
        if (server, model) not in cls.answered_for:
            body = {"model": model, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1}
            try:
                answered = client.send("POST", "chat/completions", body, retries=0)
            except BackendError:
                answered = None
            if not answered or not answered.get("choices"):
                return None, list(offered)
            cls.answered_for.add((server, model))
        return {}, list(offered)

    def _refuse(self, status: int, text: str, path: str, body: dict | None) -> None:
        """Raise for an error answer that another try would not change."""
        _refuse_key(self.server, status, text)
        window = context_too_small(status, text)
        if window is not None:
            if window[0]:
                self.window = self.learned_windows[(self.server, self.model_name)] = window[0]
            raise ContextTooSmall(
                f"{self.server}: the request does not fit the model's context window ({text[:200]})",
                window=window[0],
                requested=window[1],
            )
        if status == 404 and body and "model" in text.lower():
            raise BackendError(f"{self.server} does not serve the model {self.model_name!r} ({text[:160]})")

    # ------------------------------------------------------------------ what the server supports

    def _body(self, prompt: str, max_tokens: int, **extra) -> dict:
        return {"model": self.model_name, "prompt": prompt, "max_tokens": int(max_tokens), "temperature": 0, **extra}

    def _probe(self) -> None:
        """Does the server have /v1/completions, and are its echoed log-probabilities right? Two requests, kept in
        the store like any other (a resumed run does not send them again)."""
        if self._completions is not None:
            return
        try:
            (own,) = self.client.ask("completions", [self._body(CHECK_PROMPT, 3, logprobs=1)], [_generated])
        except ContextTooSmall:
            raise
        except BackendError as exc:
            if not re.search(r"/completions: (400|404|405|422|501)\b", str(exc)):
                raise
            self._completions = not re.search(r"/completions: (404|405|501)\b", str(exc))
            self._logprobs = False
            self.echo_refused = f"/completions refused a request with logprobs ({str(exc)[-160:]})"
            return
        self._completions = True
        self.echo_refused = self._check_echo(own)
        self._logprobs = not self.echo_refused

    def _check_echo(self, own: dict) -> str:
        """ "" when the log-probabilities echoed for the model's own continuation equal those it gave while
        generating it; else why the echo path cannot be trusted."""
        text, expected = own["text"], own["logprobs"]
        if not text or not expected or any(p is None for p in expected):
            return "the server gives no log-probabilities for generated tokens, so its echo cannot be checked"
        span = (len(CHECK_PROMPT), len(CHECK_PROMPT) + len(text))
        try:
            (echoed,) = self.client.ask(
                "completions",
                [self._body(CHECK_PROMPT + text, 1, echo=True, logprobs=1)],
                [lambda data: _span_logprobs(data, *span)],
            )
        except BackendError as exc:
            if not re.search(r"/completions: (400|422)\b", str(exc)):
                raise
            return f"the server refuses echo with logprobs ({str(exc)[-160:]})"
        if echoed is None or not echoed or any(p is None for p in echoed):
            return "the server returns no log-probabilities for the prompt's tokens (echo)"
        if len(echoed) == len(expected):  # the same tokens: each must match
            close = all(abs(a - b) <= CHECK_TOLERANCE for a, b in zip(echoed, expected, strict=True))
        else:  # the text tokenised otherwise in the prompt: the totals must match
            close = abs(sum(echoed) - sum(expected)) <= CHECK_TOLERANCE * max(len(echoed), len(expected))
        if close:
            return ""
        shown = [", ".join(f"{v:.3f}" for v in values) for values in (echoed, expected)]
        return (
            f"the echoed log-probabilities of the model's own continuation {text!r} ({shown[0]}) disagree with "
            f"those it gave generating it ({shown[1]}): the echo is misaligned (shifted by a token?)"
        )

    @property
    def scores_loglikelihood(self) -> bool:
        self._probe()
        return bool(self._logprobs)

    def prompt_tokens(self, context: Sequence[str]) -> int | None:
        self._probe()
        prompt = "".join(context)
        if self._completions:
            path, body = "completions", self._body(prompt, 1)
        else:
            path = "chat/completions"
            body = {"model": self.model_name, "messages": [{"role": "user", "content": prompt}], "max_tokens": 1}
        (count,) = self.client.ask(path, [body], [lambda data: (data.get("usage") or {}).get("prompt_tokens")])
        return int(count) if count else None

    # ------------------------------------------------------------------ requests

    def loglikelihood(self, requests: Sequence[LoglikelihoodRequest], done: Done = None) -> list[list[float]]:
        if not self.scores_loglikelihood:
            raise BackendError(f"{self.server}: log-likelihood over its echo is refused ({self.echo_refused})")
        bodies, reads, owner = [], [], []
        for r, request in enumerate(requests):
            prompt = "".join(request.context)
            for continuation in request.continuations:
                bodies.append(self._body(prompt + continuation, 1, echo=True, logprobs=1))
                span = (len(prompt), len(prompt) + len(continuation))
                reads.append(lambda data, span=span: _span_logprobs(data, *span))
                owner.append(r)
        try:
            per_body = self.client.ask("completions", bodies, reads)
        except ContextTooSmall as exc:
            exc.index = owner[exc.index]  # the request whose continuation did not fit, not the body
            raise
        out, k = [], 0
        for request in requests:
            scores = []
            for _ in request.continuations:
                if not per_body[k] or any(p is None for p in per_body[k]):
                    raise BackendError(f"{self.server}/completions: an echo answer without log-probabilities")
                scores.append(sum(per_body[k]))
                k += 1
            out.append(scores)
            if done:
                done()
        return out

    def generate_until(self, requests: Sequence[GenerationRequest], done: Done = None) -> list[str]:
        self._probe()
        if not self._completions:  # a chat-only server: the prompt as the one user message
            texts = self.chat(
                [
                    ChatRequest(
                        messages=(("user", "".join(r.context)),), max_tokens=r.max_tokens, seed=self.config.seed
                    )
                    for r in requests
                ],
                done,
            )
            return [t.split(r.stop)[0] if r.stop else t for t, r in zip(texts, requests, strict=True)]
        bodies = [self._body("".join(r.context), r.max_tokens, stop=[r.stop] if r.stop else None) for r in requests]
        texts = self.client.ask("completions", bodies, [_text] * len(bodies), done)
        return [t.split(r.stop)[0] if r.stop else t for t, r in zip(texts, requests, strict=True)]

    def chat(self, requests: Sequence[ChatRequest], done: Done = None) -> list[str]:
        # written as they are sent (a generator): the first requests go out while the others are written
        bodies = (self._chat_body(r) for r in requests)
        return self.client.ask("chat/completions", bodies, [_message] * len(requests), done)

    def _chat_body(self, r: ChatRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model_name,
            "messages": [{"role": role, "content": text} for role, text in r.messages],
            "max_tokens": int(r.max_tokens),
            "temperature": float(r.temperature),
        }
        if r.seed is not None:
            body["seed"] = int(r.seed)
        return body

    # ------------------------------------------------------------------ bookkeeping

    def notes(self) -> dict[str, Any]:
        notes: dict[str, Any] = {"backend": self.name, "server": self.server, "concurrency": self.concurrency}
        if self.window:
            notes["window"] = self.window
        if self._completions is not None:
            notes["completions_endpoint"] = self._completions
            notes["echo_logprobs"] = self._logprobs
            if self.echo_refused:
                notes["echo_refused"] = self.echo_refused
        if self.client.unanswered_sends:
            notes["unanswered_sends"] = self.client.unanswered_sends
        return notes

    def close(self) -> None:
        self.client.close()
        flush = getattr(self.client.store, "progress", None)
        if flush:
            flush(self.tally.as_dict(), final=True)


def _refuse_key(server: str, status: int, text: str) -> None:
    if status in (401, 403):
        raise BackendError(
            f"{server} refused the key ({status}: {text[:160]}): set {KEY_VARIABLE} to a key this server accepts"
        )


# What each kind of answer keeps (the store keeps only that): read from the full answer once.
def _message(data: dict) -> str:
    return str(data["choices"][0]["message"]["content"] or "")


def _text(data: dict) -> str:
    return str(data["choices"][0]["text"] or "")


def _generated(data: dict) -> dict:
    choice = data["choices"][0]
    lp = choice.get("logprobs") or {}
    return {"text": str(choice.get("text") or ""), "logprobs": list(lp.get("token_logprobs") or [])}


def _span_logprobs(data: dict, start: int, end: int) -> list | None:
    """The echoed log-probabilities of the prompt's tokens from character ``start`` to ``end`` (the generated
    token after the prompt is left out); None when the answer has none."""
    lp = data["choices"][0].get("logprobs") or {}
    tokens, offsets = lp.get("token_logprobs"), lp.get("text_offset")
    if not tokens or not offsets or len(tokens) != len(offsets):
        return None
    return [p for p, off in zip(tokens, offsets, strict=True) if start <= off < end]
