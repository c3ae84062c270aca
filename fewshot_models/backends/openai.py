"""The HTTP backend: any server speaking the OpenAI-compatible API (vLLM, SGLang, TGI, llama.cpp server,
Ollama, hosted APIs), through httpx.

Endpoints (the OpenAI API reference, as the servers above implement it):

* ``GET  /v1/models``: checked when the backend opens; a model the server does not offer is a clear error
  naming the server and the models it offers;
* ``POST /v1/chat/completions``: ``chat``;
* ``POST /v1/completions``: ``generate_until``, and ``loglikelihood`` with ``echo`` and ``logprobs`` where
  the server supports them (probed once: one request of one token). Where it does not, ``scores_loglikelihood``
  is False and a method generates and parses instead; where the server has no ``/v1/completions`` at all
  (hosted chat models), generation goes through the chat endpoint.

Requests: at most ``config.concurrency`` in flight (threads sharing one connection pool); a request answered
429 or 5xx, or whose connection failed or timed out, is sent again after a back-off (exponential, at least
the server's ``Retry-After``), at most ``config.max_retries`` times. 401/403, an unknown model and a request
too long for the model's window are not retried (``BackendError``, ``ContextTooSmall``).

Resumability: every answered request is put in ``config.store`` (a ``ResponseStore``) keyed by its full body
and URL, and a request found there is answered from it: a run killed half-way and started again sends no
answered request again. Responses are stored by the calling thread, as they complete, so a store backed by a
database is only ever used from one thread.

The key: ``OPENAI_API_KEY`` from the environment, sent as ``Authorization: Bearer``; it is never part of a
stored request, a note, a log line or an error message.
"""

from __future__ import annotations

import email.utils
import hashlib
import json
import os
import re
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any

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
    Stopwatch,
    Tally,
)

KEY_VARIABLE = "OPENAI_API_KEY"
BASE_URL_VARIABLE = "OPENAI_BASE_URL"
MAX_RETRY_AFTER = 300.0  # seconds: a longer Retry-After is a server to come back to later, not to wait for
_TRANSIENT = {408, 409, 425, 429, 500, 502, 503, 504}


# What a key looks like in a URL's path or host: the prefixes hosted APIs give their keys, or a long random token.
_KEY_PREFIX = re.compile(r"(?:sk|pk|rk|hf|gsk|xai|nvapi|key|api[-_]?key|token|bearer|r8|fw)[-_]", re.IGNORECASE)
_TOKEN = re.compile(r"[A-Za-z0-9_-]{32,}")


def _looks_like_a_key(part: str, *, host: bool = False) -> bool:
    if _KEY_PREFIX.match(part):
        return True
    # A host's labels may be long (a deployment's name): only a path's parts are judged by their length.
    return not host and bool(_TOKEN.fullmatch(part) and re.search(r"\d", part) and re.search(r"[A-Za-z]", part))


def normalise_base_url(url: str) -> str:
    """``http://host:8000/v1`` (no trailing slash): what a run records, lists and shows as its server. A URL
    carrying a key anywhere (``user:pass@``, a query string, a fragment, ``OPENAI_API_KEY``'s value or a part
    of its path or host that looks like a key) is refused, without echoing it: the key goes in OPENAI_API_KEY,
    never into something stored or shown."""
    from urllib.parse import unquote, urlsplit

    url = (url or "").strip().rstrip("/")
    if not re.match(r"https?://[^/\s]+", url):
        raise BackendError("not a server base URL (expected e.g. http://127.0.0.1:8000/v1)")
    parts = urlsplit(url)
    if parts.username or parts.password or parts.query or parts.fragment:
        raise BackendError(
            "the server's base URL may not carry credentials or a query string (user:password@, "
            "?key=...): give the key in OPENAI_API_KEY"
        )
    key = os.environ.get(KEY_VARIABLE, "")
    labels, segments = (parts.hostname or "").split("."), unquote(parts.path).split("/")
    if (
        (len(key) >= 8 and key in unquote(url))
        or any(_looks_like_a_key(label, host=True) for label in labels if label)
        or any(_looks_like_a_key(segment) for segment in segments if segment)
    ):
        raise BackendError(
            "the server's base URL may not carry a key, in its path or anywhere else (a part of it looks like "
            f"one; the URL is not shown): give the key in {KEY_VARIABLE}"
        )
    return url


def request_key(url: str, body: dict) -> str:
    """The store's key of a request: its URL and full body (model, messages or prompt, sampling settings)."""
    blob = json.dumps({"url": url, "body": body}, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def retry_after_seconds(value: str | None) -> float | None:
    """``Retry-After`` in seconds (a number of seconds or an HTTP date); None when absent or unreadable."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _error_text(response) -> str:
    """The server's error message (OpenAI: {"error": {"message"}}; vLLM: {"message"}), one line, short."""
    try:
        data = response.json()
    except ValueError:
        return response.text.strip().splitlines()[0][:300] if response.text.strip() else ""
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict):
            return str(err.get("message") or err.get("detail") or err)[:300]
        return str(err)[:300]
    return str(data)[:300]


_WINDOW = (r"maximum context length is (\d+)", r"context (?:size|window|length)[^\d]{0,20}(\d+)", r"n_ctx\D{0,5}(\d+)")
_REQUESTED = (
    r"requested (\d+) tokens",
    r"resulted in (\d+) tokens",
    r"has (\d+) input tokens",
    r"n_prompt_tokens\D{0,5}(\d+)",
    r"(\d+) tokens? in the (?:messages|prompt)",
)


def _first_int(patterns, text: str) -> int | None:
    for pattern in patterns:
        m = re.search(pattern, text, flags=re.IGNORECASE)
        if m:
            return int(m.group(1))
    return None


def context_too_small(status: int, text: str) -> tuple[int | None, int | None] | None:
    """(window, requested) when a 400 says the request exceeds the model's context window, else None."""
    if status not in (400, 413, 422):
        return None
    lowered = text.lower()
    if not any(
        s in lowered
        for s in (
            "context length",
            "context_length",
            "context size",
            "context window",
            "n_ctx",
            "too many tokens",
            "prompt is too long",
        )
    ):
        return None
    return _first_int(_WINDOW, text), _first_int(_REQUESTED, text)


class OpenAIBackend(Backend):
    name = "openai"
    requires = ("httpx",)
    #: first back-off in seconds, doubled at each retry (at least the server's Retry-After)
    backoff = 0.5
    max_backoff = 30.0

    def __init__(self, config: AdapterConfig, *, method: str, progress=None, **_in_process_options):
        import httpx

        super().__init__()
        if not config.model:
            raise BackendError(
                f"{method} over an OpenAI-compatible server needs the model's name as the server "
                "knows it (--models NAME; GET /v1/models lists them)"
            )
        self.config, self.method = config, method
        self.model_name = config.model
        self.server = normalise_base_url(config.server or os.environ.get(BASE_URL_VARIABLE, ""))
        self.device = "server"
        self.store = config.store if config.store is not None else MemoryStore()
        self.concurrency = max(1, int(config.concurrency))
        self.max_retries = max(0, int(config.max_retries))
        headers = {"Accept": "application/json"}
        key = os.environ.get(KEY_VARIABLE, "")
        if key:
            headers["Authorization"] = f"Bearer {key}"
        limits = httpx.Limits(max_connections=self.concurrency, max_keepalive_connections=self.concurrency)
        self._http = httpx.Client(
            base_url=self.server + "/",
            headers=headers,
            limits=limits,
            follow_redirects=False,
            timeout=httpx.Timeout(float(config.timeout), connect=min(10.0, config.timeout)),
        )
        self._httpx = httpx
        self._lock = threading.Lock()
        self.unanswered_sends = 0  # sends whose connection dropped after the request went out (outcome unknown)
        self._completions: bool | None = None  # /v1/completions exists
        self._logprobs: bool | None = None  # ... and answers echo + logprobs
        try:
            self.offered = self.check_model()
            self.tally = Tally()  # the tally counts the run's inference requests, not this free check
        except BaseException:
            self._http.close()
            raise

    # ------------------------------------------------------------------ HTTP

    def _send(self, method: str, path: str, body: dict | None = None) -> dict:
        """One request, retried on 429 / 5xx / a failed connection; -> the JSON answer. Tallied."""
        attempt = 0
        while True:
            data, problem, wait_s = self._attempt(method, path, body)
            if data is not None:
                return data
            if attempt >= self.max_retries:
                raise BackendError(f"{self.server}/{path}: {problem}, after {attempt + 1} attempt(s)")
            pause = min(self.max_backoff, self.backoff * 2**attempt)
            if wait_s is not None:
                if wait_s > MAX_RETRY_AFTER:
                    raise BackendError(
                        f"{self.server}/{path}: {problem}; the server asks to come back in "
                        f"{wait_s:.0f} s (re-run the command later: answered requests are kept)"
                    )
                pause = max(pause, wait_s)
            attempt += 1
            self.tally.add(retries=1)
            time.sleep(pause)

    def _attempt(self, method: str, path: str, body: dict | None) -> tuple[dict | None, str, float | None]:
        """One try: (the JSON answer, "", None), or (None, what went wrong, the server's Retry-After) when it may
        be tried again; raises when it may not (a refused key, an unknown model, a request too long...)."""
        httpx = self._httpx
        try:
            response = self._http.request(method, path, json=body)
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            return None, f"cannot connect ({type(exc).__name__})", None
        except (httpx.ReadTimeout, httpx.WriteTimeout, httpx.PoolTimeout) as exc:
            self._unknown_outcome()
            return None, f"no answer within {self.config.timeout:g} s ({type(exc).__name__})", None
        except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
            self._unknown_outcome()
            return None, f"the connection dropped before an answer ({type(exc).__name__})", None
        self.tally.add(requests=1)
        status = response.status_code
        if status < 300:
            try:
                return response.json(), "", None
            except ValueError:
                raise BackendError(f"{self.server}/{path}: the answer is not JSON ({response.text[:120]!r})") from None
        text = _error_text(response)
        self._refuse(status, text, path, body)
        return None, f"{status} {text[:120]}", retry_after_seconds(response.headers.get("retry-after"))

    def _refuse(self, status: int, text: str, path: str, body: dict | None) -> None:
        """Raise for an error answer that another try would not change."""
        if status in (401, 403):
            raise BackendError(
                f"{self.server} refused the key ({status}: {text[:160]}): set "
                f"{KEY_VARIABLE} to a key this server accepts"
            )
        window = context_too_small(status, text)
        if window is not None:
            raise ContextTooSmall(
                f"{self.server}: the request does not fit the model's context window ({text[:200]})",
                window=window[0],
                requested=window[1],
            )
        if status == 404 and body and "model" in text.lower():
            raise BackendError(f"{self.server} does not serve the model {self.model_name!r} ({text[:160]})")
        if status not in _TRANSIENT:
            raise BackendError(f"{self.server}/{path}: {status} {text}")

    def _unknown_outcome(self) -> None:
        # The request went out and no answer came back: a server may have done (and billed) the work.
        self.tally.add(requests=1)
        with self._lock:
            self.unanswered_sends += 1

    def check_model(self) -> list[str]:
        """GET /v1/models: the model must be one the server offers. -> the models offered."""
        try:
            data = self._send("GET", "models")
        except BackendError as exc:
            raise BackendError(f"cannot list the models of {self.server} (GET /models): {exc}") from None
        offered = [str(m.get("id")) for m in (data.get("data") or []) if isinstance(m, dict)]
        if self.model_name not in offered:
            raise BackendError(
                f"{self.server} does not serve {self.model_name!r}; it offers: {', '.join(offered) or 'no model'}"
            )
        return offered

    # ------------------------------------------------------------------ the store and concurrency

    def _ask(self, path: str, bodies: Sequence[dict], read: Callable[[dict], Any], done: Done) -> list:
        """Answers to ``bodies`` posted to ``path``: from the store, else sent (at most ``concurrency`` at
        once) and stored as they complete. On a failure, the requests in flight are finished and stored,
        those not started are dropped, and the failure is raised (ContextTooSmall with its index)."""
        results: list = [None] * len(bodies)
        keys = [request_key(f"{self.server}/{path}", b) for b in bodies]
        todo = []
        for i, key in enumerate(keys):
            hit = self.store.get(key)
            if hit is None:
                todo.append(i)
                continue
            results[i] = read(hit)
            self.tally.add(resumed=1)
            if done:
                done()
        if not todo:
            return results
        failure: BaseException | None = None
        with (
            Stopwatch(self.tally),
            ThreadPoolExecutor(max_workers=min(self.concurrency, len(todo)), thread_name_prefix="openai") as pool,
        ):
            futures: dict[Future, int] = {pool.submit(self._send, "POST", path, bodies[i]): i for i in todo}
            pending = set(futures)
            while pending:
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)  # each kept as it arrives
                for future in finished:
                    i = futures[future]
                    problem = self._keep(future, i, path, bodies[i], keys[i], read, results)
                    if problem is None:
                        if done:
                            done()
                    elif failure is None:
                        failure = problem
                        for other in pending:
                            other.cancel()
                pending = {f for f in pending if not f.cancelled()}
        if failure is not None:
            raise failure
        return results

    def _keep(
        self, future: Future, i: int, path: str, body: dict, key: str, read, results: list
    ) -> BaseException | None:
        """A finished request: its answer read into ``results[i]``, tallied and stored; or what went wrong."""
        exc = future.exception()
        if exc is not None:
            if isinstance(exc, ContextTooSmall):
                exc.index = i
            return exc
        data = future.result()
        usage = data.get("usage") or {}
        self.tally.add(
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
        )
        try:
            results[i] = read(data)
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
            return BackendError(f"{self.server}/{path}: an answer in no known form ({type(exc).__name__}: {exc})")
        self.store.put(key, {"url": f"{self.server}/{path}", "body": body}, data)
        return None

    # ------------------------------------------------------------------ what the server supports

    def _probe(self) -> None:
        """Does the server have /v1/completions, and does it echo the prompt's log-probabilities? One request
        of one token, kept in the store like any other (a resumed run does not send it again)."""
        if self._completions is not None:
            return
        body = {
            "model": self.model_name,
            "prompt": "Answer: yes",
            "max_tokens": 1,
            "temperature": 0,
            "echo": True,
            "logprobs": 1,
        }
        try:
            (ok,) = self._ask("completions", [body], self._echo_logprobs, None)
        except ContextTooSmall:
            raise
        except BackendError as exc:
            text = str(exc)
            if re.search(r"/completions: (404|405|501)\b", text):
                self._completions, self._logprobs = False, False
                return
            if re.search(r"/completions: (400|422)\b", text):
                self._completions, self._logprobs = True, False
                return
            raise
        self._completions, self._logprobs = True, bool(ok)

    @staticmethod
    def _echo_logprobs(data: dict):
        choice = data["choices"][0]
        lp = choice.get("logprobs") or {}
        tokens, offsets = lp.get("token_logprobs"), lp.get("text_offset")
        if not tokens or not offsets or len(tokens) != len(offsets):
            return None
        return {"token_logprobs": tokens, "text_offset": offsets}

    @property
    def scores_loglikelihood(self) -> bool:
        self._probe()
        return bool(self._logprobs)

    # ------------------------------------------------------------------ requests

    def loglikelihood(self, requests: Sequence[LoglikelihoodRequest], done: Done = None) -> list[list[float]]:
        if not self.scores_loglikelihood:
            raise BackendError(
                f"{self.server} does not answer echo + logprobs on /completions: it cannot score "
                "continuations (the method generates instead)"
            )
        bodies, spans, owner = [], [], []
        for r, request in enumerate(requests):
            prompt = "".join(request.context)
            for continuation in request.continuations:
                bodies.append(
                    {
                        "model": self.model_name,
                        "prompt": prompt + continuation,
                        "max_tokens": 1,
                        "temperature": 0,
                        "echo": True,
                        "logprobs": 1,
                    }
                )
                spans.append(len(prompt))
                owner.append(r)
        try:
            per_body = self._ask("completions", bodies, self._echo_logprobs, None)
        except ContextTooSmall as exc:
            exc.index = owner[exc.index]  # the request whose continuation did not fit, not the body
            raise
        out, k = [], 0
        for request in requests:
            scores = []
            for _ in request.continuations:
                lp, start = per_body[k], spans[k]
                if lp is None:
                    raise BackendError(f"{self.server}/completions: an echo answer without log-probabilities")
                # the echoed prompt's tokens from the continuation's first character on (the generated token,
                # after the prompt, is left out)
                n = len(bodies[k]["prompt"])
                scores.append(
                    sum(
                        float(p)
                        for p, off in zip(lp["token_logprobs"], lp["text_offset"], strict=True)
                        if start <= off < n and p is not None
                    )
                )
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
        bodies = [
            {
                "model": self.model_name,
                "prompt": "".join(r.context),
                "max_tokens": int(r.max_tokens),
                "temperature": 0,
                "stop": [r.stop] if r.stop else None,
            }
            for r in requests
        ]
        texts = self._ask("completions", bodies, lambda d: str(d["choices"][0]["text"] or ""), done)
        return [t.split(r.stop)[0] if r.stop else t for t, r in zip(texts, requests, strict=True)]

    def chat(self, requests: Sequence[ChatRequest], done: Done = None) -> list[str]:
        bodies = []
        for r in requests:
            body: dict[str, Any] = {
                "model": self.model_name,
                "messages": [{"role": role, "content": text} for role, text in r.messages],
                "max_tokens": int(r.max_tokens),
                "temperature": float(r.temperature),
            }
            if r.seed is not None:
                body["seed"] = int(r.seed)
            bodies.append(body)
        return self._ask("chat/completions", bodies, lambda d: str(d["choices"][0]["message"]["content"] or ""), done)

    # ------------------------------------------------------------------ bookkeeping

    def notes(self) -> dict[str, Any]:
        notes: dict[str, Any] = {"backend": self.name, "server": self.server, "concurrency": self.concurrency}
        if self._completions is not None:
            notes["completions_endpoint"] = self._completions
            notes["echo_logprobs"] = self._logprobs
        if self.unanswered_sends:
            notes["unanswered_sends"] = self.unanswered_sends
        return notes

    def close(self) -> None:
        self._http.close()


def list_models(base_url: str, *, timeout: float = 10.0) -> list[str]:
    """The models a server offers (GET /v1/models), for a check before a sweep is planned."""
    import httpx

    url = normalise_base_url(base_url)
    key = os.environ.get(KEY_VARIABLE, "")
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        response = httpx.get(url + "/models", headers=headers, timeout=timeout, follow_redirects=False)
    except httpx.HTTPError as exc:
        raise BackendError(f"cannot reach {url} ({type(exc).__name__}): is the server running?") from None
    if response.status_code in (401, 403):
        raise BackendError(f"{url} refused the key ({response.status_code}): set {KEY_VARIABLE} to a key it accepts")
    if response.status_code != 200:
        raise BackendError(f"{url}/models answered {response.status_code} {_error_text(response)}")
    try:
        return [str(m["id"]) for m in response.json()["data"]]
    except (ValueError, KeyError, TypeError):
        raise BackendError(f"{url}/models: not an OpenAI-compatible model list") from None


__all__ = ["OpenAIBackend", "Tally", "list_models", "normalise_base_url", "request_key", "retry_after_seconds"]
