"""The HTTP exchange of a server backend: sends, retries, a bounded window of requests in flight, and the store
of answered requests. Plain httpx; nothing here knows a model or a method.

* ``send``: one request, retried on 429 / 5xx / a connection that failed or timed out, after a back-off
  (exponential, at least the server's ``Retry-After``), at most ``max_retries`` times; a refused key, an unknown
  model and a request too long for the model's window are not retried (``BackendError``, ``ContextTooSmall``).
* ``ask``: a batch. Requests answered before (the store) are not sent; the others go through ``concurrency``
  threads kept for the client's life, each taking the next request when its last is answered, so that the cost
  of a request does not grow with the batch (nor a small batch pay for starting threads). Answers are stored by
  the calling thread as they arrive, off the requests' path: those that come back within ``KEEP_EVERY`` (100 ms)
  of the first are written in one go (``ResponseStore.put_many``: a run's store makes it one transaction), so that
  the store costs at most 10 writes a second and a few microseconds per answer, and the window never waits for
  it. An answer counts as done (``done``, progress) only once it is kept: a run killed at any moment re-sends
  only what was in flight (sent, or answered in the last 100 ms and not yet kept). A store backed by a database
  is only ever used from the calling thread. On a failure the requests in flight are finished and stored, the
  others are dropped, and the failure is raised.
* What is stored: the request's key (a hash of its URL and body) and what reading the answer kept (``read``),
  with its token counts: never the request's text, never the full answer.
"""

from __future__ import annotations

import email.utils
import hashlib
import json
import logging
import os
import queue
import re
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any
from urllib.parse import unquote, urlsplit

from .base import BackendError, ContextTooSmall, Done

KEEP_EVERY = 0.1  # seconds: the answers that come back within this time are kept in one write...
MAX_BATCH = 500  # ... of at most this many
MAX_RETRY_AFTER = 300.0  # seconds: a longer Retry-After is a server to come back to later, not to wait for
_TRANSIENT = {408, 409, 425, 429, 500, 502, 503, 504}
#: What users paste from a client's configuration: the endpoint, where the base URL is meant.
ENDPOINTS = ("/chat/completions", "/completions", "/models", "/embeddings", "/responses")


def _request_line_at_debug(record: logging.LogRecord) -> bool:
    """httpx logs one INFO line per request; a sweep sends thousands. They are kept, at DEBUG."""
    if record.levelno == logging.INFO and str(record.msg).startswith("HTTP Request:"):
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)
    return True


def quiet_request_lines() -> None:
    logger = logging.getLogger("httpx")
    if _request_line_at_debug not in logger.filters:
        logger.addFilter(_request_line_at_debug)


# What a key looks like in a URL's path or host: the prefixes hosted APIs give their keys, or a long random token.
_KEY_PREFIX = re.compile(r"(?:sk|pk|rk|hf|gsk|xai|nvapi|key|api[-_]?key|token|bearer|r8|fw)[-_]", re.IGNORECASE)
_TOKEN = re.compile(r"[A-Za-z0-9_-]{32,}")
KEY_VARIABLE = "OPENAI_API_KEY"  # the OpenAI-compatible servers' key, read from the environment only


def _looks_like_a_key(part: str, *, host: bool = False) -> bool:
    if _KEY_PREFIX.match(part):
        return True
    # A host's labels may be long (a deployment's name): only a path's parts are judged by their length.
    return not host and bool(_TOKEN.fullmatch(part) and re.search(r"\d", part) and re.search(r"[A-Za-z]", part))


def normalise_base_url(url: str) -> str:
    """``http://host:8000/v1`` (no trailing slash): what a run records, lists and shows as its server. A full
    endpoint URL (``.../v1/chat/completions``) is read as its base. A URL carrying a key anywhere
    (``user:pass@``, a query string, a fragment, ``OPENAI_API_KEY``'s value or a part of its path or host that
    looks like a key) is refused, without echoing it: the key goes in OPENAI_API_KEY, never into something
    stored or shown."""
    url = (url or "").strip().rstrip("/")
    if not re.match(r"https?://[^/\s]+", url):
        raise BackendError("not a server base URL (expected e.g. http://127.0.0.1:8000/v1)")
    parts = urlsplit(url)
    if parts.username or parts.password or parts.query or parts.fragment:
        raise BackendError(
            "the server's base URL may not carry credentials or a query string (user:password@, "
            f"?key=...): give the key in {KEY_VARIABLE}"
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
    for endpoint in ENDPOINTS:
        if url.endswith(endpoint):
            return url[: -len(endpoint)].rstrip("/")
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


def error_text(response) -> str:
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
_TOO_LONG = ("context length", "context_length", "context size", "context window", "n_ctx", "too many tokens")


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
    if not any(s in lowered for s in (*_TOO_LONG, "prompt is too long")):
        return None
    return _first_int(_WINDOW, text), _first_int(_REQUESTED, text)


def read_event_stream(text: str) -> dict:
    """A streamed answer (``text/event-stream``: ``data: {chunk}`` lines) as the one answer it stands for.
    Some servers stream whatever the request asks (``transformers serve`` 4.x always does)."""
    chat, parts, finish, usage = False, [], None, None
    for line in text.splitlines():
        if not line.startswith("data:") or line[5:].strip() == "[DONE]":
            continue
        chunk = json.loads(line[5:])
        if "error" in chunk:
            raise BackendError(f"the server's stream ended in an error: {str(chunk['error'])[:200]}")
        usage = chunk.get("usage") or usage
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta")
            chat = chat or delta is not None
            parts.append((delta or {}).get("content") or choice.get("text") or "")
            finish = choice.get("finish_reason") or finish
    text = "".join(parts)
    choice = {"message": {"role": "assistant", "content": text}} if chat else {"text": text}
    return {"choices": [{"index": 0, **choice, "finish_reason": finish}], "usage": usage or {}}


class _Inbox:
    """The answers of one ``ask`` as the window's threads hand them over; ``all_in`` is set with the last (once
    ``expect`` has said how many there will be)."""

    def __init__(self):
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        self.all_in = threading.Event()
        self._lock = threading.Lock()
        self._total: int | None = None
        self._count = 0

    def put(self, item) -> None:
        self.queue.put(item)
        with self._lock:
            self._count += 1
            if self._count == self._total:
                self.all_in.set()

    def expect(self, total: int) -> None:
        with self._lock:
            self._total = total
            if self._count >= total:
                self.all_in.set()


class Exchange:
    """Requests to one server: ``send`` one, ``ask`` a batch (see the module's docstring)."""

    backoff = 0.5  # first back-off in seconds, doubled at each retry (at least the server's Retry-After)
    max_backoff = 30.0

    def __init__(self, server: str, *, headers: dict, concurrency: int, timeout: float, max_retries: int, store, tally):
        import httpx

        quiet_request_lines()
        self.server, self.store, self.tally = server, store, tally
        self.concurrency = max(1, int(concurrency))
        self.max_retries = max(0, int(max_retries))
        self.timeout = float(timeout)
        self._httpx = httpx
        self._http = httpx.Client(
            base_url=server + "/",
            headers=headers,
            limits=httpx.Limits(max_connections=self.concurrency, max_keepalive_connections=self.concurrency),
            follow_redirects=False,
            timeout=httpx.Timeout(self.timeout, connect=min(10.0, self.timeout)),
        )
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self.unanswered_sends = 0  # sends whose connection dropped after the request went out (outcome unknown)
        #: raise for an error answer another try would not change: (status, message, path, body) -> None
        self.refuse: Callable[[int, str, str, dict | None], None] = lambda *a: None

    def close(self) -> None:
        for _ in self._threads:
            self._jobs.put(None)
        self._threads = []
        self._http.close()

    # ------------------------------------------------------------------ one request

    def send(self, method: str, path: str, body: dict | None = None, *, retries: int | None = None) -> dict:
        """One request, retried on 429 / 5xx / a failed connection; -> the JSON answer. Tallied."""
        attempt, limit = 0, self.max_retries if retries is None else retries
        while True:
            data, problem, wait_s = self.attempt(method, path, body)
            if data is not None:
                return data
            if attempt >= limit:
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

    def attempt(self, method: str, path: str, body: dict | None) -> tuple[dict | None, str, float | None]:
        """One try: (the JSON answer, "", None), or (None, what went wrong, the server's Retry-After) when it may
        be tried again; raises when it may not (a refused key, an unknown model, a request too long...)."""
        httpx = self._httpx
        try:
            response = self._http.request(method, path, json=body)
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            return None, f"cannot connect ({type(exc).__name__})", None
        except (httpx.ReadTimeout, httpx.WriteTimeout, httpx.PoolTimeout) as exc:
            self._unknown_outcome()
            return None, f"no answer within {self.timeout:g} s ({type(exc).__name__})", None
        except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
            self._unknown_outcome()
            return None, f"the connection dropped before an answer ({type(exc).__name__})", None
        self.tally.add(requests=1)
        status = response.status_code
        if status < 300:
            try:
                if response.headers.get("content-type", "").startswith("text/event-stream"):
                    return read_event_stream(response.text), "", None
                return response.json(), "", None
            except ValueError:
                raise BackendError(f"{self.server}/{path}: the answer is not JSON ({response.text[:120]!r})") from None
        text = error_text(response)
        try:
            self.refuse(status, text, path, body)
        except ContextTooSmall:
            self.tally.add(refused=1)
            raise
        if status not in _TRANSIENT:
            raise BackendError(f"{self.server}/{path}: {status} {text}")
        return None, f"{status} {text[:120]}", retry_after_seconds(response.headers.get("retry-after"))

    def _unknown_outcome(self) -> None:
        # The request went out and no answer came back: a server may have done (and billed) the work.
        self.tally.add(requests=1)
        with self._lock:
            self.unanswered_sends += 1

    # ------------------------------------------------------------------ a batch

    def ask(self, path: str, bodies: Iterable[dict], reads: Sequence[Callable[[dict], Any]], done: Done = None) -> list:
        """What ``reads[i]`` keeps of the answer to the i-th body, for every body (one per read): from the store,
        else sent. Each body is sent as soon as it is known not to be in the store, so that the window's threads
        send while the rest are looked up (and, given lazily, written)."""
        results: list = [None] * len(reads)
        keys: list[str] = []
        answers, stop = _Inbox(), threading.Event()
        sent: list[int] = []
        began = 0.0
        try:
            for i, body in enumerate(bodies):
                keys.append(request_key(f"{self.server}/{path}", body))
                hit = self.store.get(keys[i])
                if hit is None:
                    if not sent:
                        began = time.perf_counter()
                        self._start_threads()
                    sent.append(i)
                    self._jobs.put((path, body, i, answers, stop))
                    continue
                # a response kept before answers were kept compactly is read again
                results[i] = hit["answer"] if "answer" in hit else reads[i](hit["raw"])
                self.tally.add(resumed=1)
                if done:
                    done()
        except BaseException:
            stop.set()  # what was sent is answered and dropped: nothing else of this batch goes out
            raise
        if sent:
            answers.expect(len(sent))
            try:
                self._collect(path, reads, keys, len(sent), results, done, answers, stop)
            finally:  # wall-clock seconds spent waiting for answers
                self.tally.add(seconds=time.perf_counter() - began)
        return results

    def _collect(self, path, reads, keys, left: int, results: list, done: Done, answers: _Inbox, stop) -> None:
        """The answers of the requests sent, kept here, in batches, as they arrive."""
        failure: BaseException | None = None
        try:
            while left:
                batch = self._next_batch(answers, left)
                left -= len(batch)
                kept: list[tuple[int, str, dict]] = []
                for i, data, exc in batch:
                    if data is None and exc is None:  # not sent: the batch had already failed
                        continue
                    problem = exc if exc is not None else self._read(data, reads[i], path, results, i)
                    if problem is None:
                        kept.append((i, keys[i], {"answer": results[i], "usage": self._tokens(data)}))
                        continue
                    if isinstance(problem, ContextTooSmall):
                        problem.index = i
                    failure = failure or problem
                    stop.set()
                self._keep(kept, done)
        finally:
            stop.set()  # whatever went wrong here, no thread sends another request of this batch
        if failure is not None:
            raise failure

    @staticmethod
    def _next_batch(answers: _Inbox, left: int) -> list:
        """The answers to keep in one write: those that come back within ``KEEP_EVERY`` of the first (at most
        ``MAX_BATCH``; at once when no other is awaited). A write per batch, not per answer, keeps the store's
        cost per answer small beside the client's own, so that keeping answers never slows the window. The calling
        thread wakes twice a batch (its first answer, then its time or the ask's last answer), not at each answer,
        so as to take the interpreter lock from the threads sending requests as seldom as it can."""
        batch, want = [answers.queue.get()], min(left, MAX_BATCH)
        until = time.monotonic() + KEEP_EVERY
        while True:
            try:
                while len(batch) < want:
                    batch.append(answers.queue.get_nowait())
            except queue.Empty:
                pass
            now = time.monotonic()
            if len(batch) >= want or now >= until:
                return batch
            answers.all_in.wait(until - now)

    def _start_threads(self) -> None:
        """The window: ``concurrency`` threads for the client's life, each sending the next request as soon as its
        last is answered (no thread is started per batch)."""
        if self._threads:
            return
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        for _ in range(self.concurrency):
            thread = threading.Thread(target=self._work, daemon=True, name="llm-request")
            thread.start()
            self._threads.append(thread)

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            path, body, i, answers, stop = job
            if stop.is_set():
                answers.put((i, None, None))
                continue
            try:
                answers.put((i, self.send("POST", path, body), None))
            except BaseException as exc:  # noqa: BLE001 - handed to the calling thread, which raises it
                stop.set()
                answers.put((i, None, exc))

    def _read(self, data: dict, read, path: str, results: list, i: int) -> BaseException | None:
        """An answer read into ``results[i]`` and its tokens tallied; or what went wrong."""
        self.tally.add(**self._tokens(data, every=True))
        try:
            results[i] = read(data)
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
            return BackendError(f"{self.server}/{path}: an answer in no known form ({type(exc).__name__}: {exc})")
        return None

    @staticmethod
    def _tokens(data: dict, *, every: bool = False) -> dict[str, int]:
        usage = data.get("usage") or {}
        tokens = {k: int(usage.get(k) or 0) for k in ("prompt_tokens", "completion_tokens")}
        return tokens if every else {k: v for k, v in tokens.items() if v}

    def _keep(self, kept: list[tuple[int, str, dict]], done: Done) -> None:
        """A batch of answers written to the store in one go (with the run's tally, for a run's store); each is
        counted as done only once it is kept."""
        if not kept:
            return
        self.store.put_many([(key, record) for _, key, record in kept], tally=self.tally.as_dict())
        if done:
            for _ in kept:
                done()
