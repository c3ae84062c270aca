"""A fake OpenAI-compatible inference server: a real HTTP server on 127.0.0.1, in a thread, for the tests and
the benchmark.

Endpoints, with the shapes of the OpenAI API reference as vLLM serves them: ``GET /v1/models``,
``POST /v1/chat/completions``, ``POST /v1/completions`` (``echo`` + ``logprobs``: the prompt's tokens with
their log-probabilities and character offsets, the first one ``null``). Every answer carries ``usage``.
Tokens are whitespace-separated words (what the window and ``usage`` count).

The "model": ``reply(body) -> str`` answers a chat, ``complete(prompt) -> str`` a completion; a token's
log-probability is ``-len(word) / 4`` (so " no" beats " maybe"), or ``logprob(word)`` when set.

Switches: ``key`` (a request without ``Authorization: Bearer <key>`` gets 401), ``models``, ``window`` (a request
of more tokens than this gets vLLM's 400 "maximum context length"), ``latency`` (seconds before each POST's
answer), ``faults`` (consumed one per POST: "429" with ``Retry-After: retry_after``, "500", "drop": the
connection is closed without an answer, after the request was read and counted as done; "garbage": 200 with
no choice in it), ``no_completions``
(404 on /v1/completions), ``no_echo`` (400 on echo + logprobs), ``fail_after`` (after that many answered POSTs,
every POST gets 503: a server that went away).

Log-probabilities as servers get them wrong: ``echo_shift`` (the echoed prompt's log-probabilities shifted by one
token, as llama-cpp-python's are), ``no_prompt_logprobs`` (an echo answered with ``null`` for every prompt token).
A generated answer asked with ``logprobs`` carries its own tokens' log-probabilities. ``advertise_window`` puts the
window in ``/v1/models`` as vLLM does (``max_model_len``); ``stream`` answers every chat as server-sent events
whatever the request asks (as ``transformers serve`` 4.x does); ``unlisted`` models are served but not listed.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOKEN = "sk-fake-0123456789abcdefSECRET"


def words(text: str) -> list[str]:
    import re

    return re.findall(r"\s*\S+", text)


class FakeOpenAI:
    def __init__(self, *, models=("tiny-model",), key: str | None = TOKEN, latency: float = 0.0):
        self.models = list(models)
        self.key = key
        self.latency = latency
        self.window: int | None = None
        self.faults: list[str] = []
        self.retry_after = "1"
        self.no_completions = False
        self.no_echo = False
        self.fail_after: int | None = None
        self.echo_shift = False
        self.no_prompt_logprobs = False
        self.advertise_window = False
        self.stream = False
        self.unlisted: list[str] = []
        self.reply = lambda body: "positive"
        self.complete = lambda prompt: " none"
        self.logprob = None
        # what it was asked, for the tests; a benchmark's fake remembers nothing (its heap would grow with every
        # request and slow it down as a run goes on, the later of two compared clients most)
        self.remember = True
        self.calls: list[dict] = []  # every request: {"path", "body", "authorization", "status", "at"}
        self.answered: list[dict] = []  # bodies of POSTs answered 200
        self.in_flight = self.max_in_flight = 0
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # headers and body go out as two writes: without TCP_NODELAY, Nagle's algorithm and the client's
            # delayed ACK hold every answer ~40 ms (what real servers avoid too)
            disable_nagle_algorithm = True

            def log_message(self, *args):
                pass

            def do_GET(self):
                fake._get(self)

            def do_POST(self):
                fake._post(self)

        class Server(ThreadingHTTPServer):
            request_queue_size = 128  # 32 clients connecting at once must not overflow the listen backlog

        self.server = Server(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    # ------------------------------------------------------------------ plumbing

    def _send(self, handler, status: int, data: dict, headers: dict | None = None):
        blob = json.dumps(data).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(blob)))
        for k, v in (headers or {}).items():
            handler.send_header(k, v)
        handler.end_headers()
        handler.wfile.write(blob)

    def _error(self, handler, status: int, message: str, headers=None, code=None):
        self._send(
            handler, status, {"error": {"message": message, "type": "BadRequestError", "code": code or status}}, headers
        )

    def _authorised(self, handler, body) -> bool:
        """Whether the request carries the key; if not, it is recorded, then refused with a 401 (recorded first: a
        client that has its answer may look at ``calls`` at once)."""
        if self.key is None or handler.headers.get("Authorization") == f"Bearer {self.key}":
            return True
        self._record(handler, body, 401)
        self._error(handler, 401, "Incorrect API key provided.", code="invalid_api_key")
        return False

    def _record(self, handler, body, status):
        if not self.remember:
            return
        with self._lock:
            self.calls.append(
                {
                    "path": handler.path,
                    "body": body,
                    "status": status,
                    "at": time.monotonic(),
                    "authorization": handler.headers.get("Authorization"),
                }
            )

    def _get(self, handler):
        if handler.path.rstrip("/") != "/v1/models":
            self._record(handler, None, 404)
            return self._error(handler, 404, "Not Found")
        if not self._authorised(handler, None):
            return None
        self._record(handler, None, 200)
        self._send(
            handler,
            200,
            {
                "object": "list",
                "data": [
                    {
                        "id": m,
                        "object": "model",
                        "created": 0,
                        "owned_by": "fake",
                        **({"max_model_len": self.window} if self.advertise_window and self.window else {}),
                    }
                    for m in self.models
                ],
            },
        )

    def _post(self, handler):
        length = int(handler.headers.get("Content-Length") or 0)
        try:
            body = json.loads(handler.rfile.read(length) or b"{}")
        except ValueError:
            return self._error(handler, 400, "body is not JSON")
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            fault = self.faults.pop(0) if self.faults else None
        try:
            if self.latency:
                time.sleep(self.latency)
            self._answer(handler, body, fault)
        finally:
            with self._lock:
                self.in_flight -= 1

    def _answer(self, handler, body, fault):  # noqa: C901 (one branch per documented behaviour)
        path = handler.path.rstrip("/")
        if path not in ("/v1/chat/completions", "/v1/completions") or (
            path == "/v1/completions" and self.no_completions
        ):
            self._record(handler, body, 404)
            return self._error(handler, 404, "Not Found")
        if not self._authorised(handler, body):
            return None
        if fault == "429":
            self._record(handler, body, 429)
            return self._error(handler, 429, "Rate limit reached", {"Retry-After": self.retry_after})
        if fault == "500":
            self._record(handler, body, 500)
            return self._error(handler, 500, "Internal Server Error")
        if fault == "garbage":  # 200 with a body in no documented shape
            self._record(handler, body, 200)
            return self._send(handler, 200, {"choices": [], "note": "not an answer"})
        if self.fail_after is not None and len(self.answered) >= self.fail_after:
            self._record(handler, body, 503)
            return self._error(handler, 503, "Service Unavailable")
        if body.get("model") not in self.models + self.unlisted:
            self._record(handler, body, 404)
            return self._error(handler, 404, f"The model `{body.get('model')}` does not exist.", code=404)
        max_tokens = int(body.get("max_tokens") or 16)
        if path == "/v1/chat/completions":
            prompt = "\n".join(m["content"] for m in body["messages"])
        else:
            prompt = body["prompt"]
            if body.get("echo") and self.no_echo:
                self._record(handler, body, 400)
                return self._error(handler, 400, "echo is not supported with logprobs")
        n_prompt = len(words(prompt))
        if self.window is not None and n_prompt + max_tokens > self.window:
            self._record(handler, body, 400)
            return self._error(
                handler,
                400,
                f"This model's maximum context length is {self.window} tokens. However, "
                f"you requested {n_prompt + max_tokens} tokens ({n_prompt} in the "
                f"messages, {max_tokens} in the completion). Please reduce the length "
                "of the messages or completion.",
            )
        if fault == "drop":  # the work is done (and would be billed), then the connection goes
            self._record(handler, body, 0)
            with self._lock:
                self.answered.append(body if self.remember else None)
            handler.close_connection = True
            handler.connection.shutdown(2)
            return
        if path == "/v1/chat/completions":
            text = self.reply(body)
            choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        else:
            text = self.complete(prompt)
            for stop in body.get("stop") or []:
                text = text.split(stop)[0]
            choice = {"index": 0, "text": text, "finish_reason": "stop"}
            if body.get("echo"):
                choice["text"] = prompt + text
                choice["logprobs"] = self._logprobs(words(prompt) + words(text)[:1], echo=True)
            elif body.get("logprobs"):
                choice["logprobs"] = self._logprobs(words(text), echo=False)
        n_completion = len(words(text))
        with self._lock:
            self.answered.append(body if self.remember else None)
        self._record(handler, body, 200)
        if self.stream and path == "/v1/chat/completions":
            return self._stream(handler, body, text)
        self._send(
            handler,
            200,
            {
                "id": f"cmpl-{len(self.answered)}",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [choice],
                "usage": {
                    "prompt_tokens": n_prompt,
                    "completion_tokens": n_completion,
                    "total_tokens": n_prompt + n_completion,
                },
            },
        )

    def _lp(self, token: str) -> float:
        return self.logprob(token) if self.logprob else -len(token.strip()) / 4

    def _logprobs(self, toks: list[str], *, echo: bool) -> dict:
        """OpenAI's completions ``logprobs``: tokens, their log-probabilities and character offsets; echoed, the
        prompt's first token has none."""
        offsets, at = [], 0
        for t in toks:
            offsets.append(at)
            at += len(t)
        lp = [self._lp(t) for t in toks]
        if echo:
            lp[0] = None
            if self.echo_shift:  # each prompt token reported with the log-probability of the one after it
                lp = [None, *[self._lp(t) for t in toks[2:]], -0.01]
            if self.no_prompt_logprobs:
                lp = [None] * len(toks)
        return {"tokens": toks, "token_logprobs": lp, "text_offset": offsets, "top_logprobs": None}

    def _stream(self, handler, body: dict, text: str):
        """The answer as server-sent events, the way ``transformers serve`` 4.x sends every chat answer."""
        chunks = [{"delta": {"role": "assistant"}}, *({"delta": {"content": w}} for w in words(text) or [""])]
        chunks.append({"delta": {}, "finish_reason": "stop"})
        blob = "".join(
            "data: "
            + json.dumps(
                {
                    "id": "req_0",
                    "object": "chat.completion.chunk",
                    "model": body["model"],
                    "choices": [{"index": 0, **c}],
                }
            )
            + "\n\n"
            for c in chunks
        ).encode()
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Content-Length", str(len(blob)))
        handler.end_headers()
        handler.wfile.write(blob)


if __name__ == "__main__":  # a fake on its own process (the benchmark): prints its base URL, serves until killed
    import argparse
    import sys

    parser = argparse.ArgumentParser()
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--model", default="tiny-model")
    args = parser.parse_args()
    fake = FakeOpenAI(models=(args.model,), key=None, latency=args.latency)
    fake.reply = lambda body: "none"
    fake.remember = False
    print(fake.base_url, flush=True)
    try:
        fake.server.serve_forever()
    except KeyboardInterrupt:
        sys.exit(0)
