"""The model-backend interface: where a method's model runs (lm-evaluation-harness's ``LM``).

A method (``fewshot_models.<method>``) decides prompts, training and decoding; a backend
answers a small set of requests about one model, wherever that model runs:

* ``loglikelihood``: summed log p(continuation | context) of each continuation;
* ``generate_until``: greedy text after a context, up to a stop string;
* ``chat``: the assistant's reply to a conversation;
* ``count_tokens`` / ``context_budget``: how much of the model's window a prompt takes, where the
  backend can tell exactly (in process); a server says it per request (``prompt_tokens``), or in its refusal;
* for the methods that train, the in-process model itself (``InProcess``).

A context is a tuple of pieces (demonstrations, then the query) that the backend reads one after
the other: in process, each piece is tokenised on its own and the token lists are concatenated;
over HTTP the pieces are joined. Plain Python: neither Django nor torch is imported here.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from ..base import AdapterConfig, AdapterError

#: ``done()`` is called once per answered request (progress bars).
Done = Callable[[], None] | None


class BackendError(AdapterError):
    """The backend cannot answer (unreachable server, refused key, unknown model...): the message says why."""


class ContextTooSmall(BackendError):
    """A request does not fit the model's context window. ``index``: which request of the batch."""

    def __init__(self, message: str, *, index: int = 0, window: int | None = None, requested: int | None = None):
        super().__init__(message)
        self.index, self.window, self.requested = index, window, requested


@dataclass(frozen=True)
class LoglikelihoodRequest:
    context: tuple[str, ...]  # pieces read one after the other
    continuations: tuple[str, ...]  # each scored as the text right after the context


@dataclass(frozen=True)
class GenerationRequest:
    context: tuple[str, ...]
    max_tokens: int
    stop: str = "\n"  # the text is cut before it


@dataclass(frozen=True)
class ChatRequest:
    messages: tuple[tuple[str, str], ...]  # (role, content): system, user, assistant
    max_tokens: int
    temperature: float = 0.0
    seed: int | None = None


class ResponseStore(Protocol):
    """Where answered requests are kept, keyed by a hash of the full request: a request found here is not sent
    again (a run killed half-way and started again pays for nothing twice). A record is what scoring needs of
    the answer (``{"answer": ..., "usage": {...}}``), never the request's text."""

    def get(self, key: str) -> dict | None: ...

    def put_many(self, records: Sequence[tuple[str, dict]], *, tally: dict) -> None:
        """Keep answered requests ``(key, record)``, all of them or none, before returning. ``tally``: what the
        run's requests have cost so far (``Tally.as_dict``), for a store that records it as it goes."""
        ...


class MemoryStore:
    """A ``ResponseStore`` in memory (one process, one run)."""

    def __init__(self):
        self.items: dict[str, dict] = {}

    def get(self, key: str) -> dict | None:
        return self.items.get(key)

    def put(self, key: str, record: dict) -> None:
        self.items[key] = record

    def put_many(self, records: Sequence[tuple[str, dict]], *, tally: dict) -> None:
        for key, record in records:
            self.put(key, record)


@dataclass
class Tally:
    """What a run's requests cost: requests sent (retries included), of which refused as too long for the
    model's window, answered from the store, tokens from the servers' ``usage`` fields, and seconds spent
    waiting for answers (wall clock)."""

    requests: int = 0
    resumed: int = 0
    retries: int = 0
    refused: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, **amounts) -> None:
        with self._lock:
            for name, value in amounts.items():
                setattr(self, name, getattr(self, name) + value)

    def as_dict(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "resumed": self.resumed,
            "retries": self.retries,
            "refused": self.refused,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "seconds": round(self.seconds, 3),
        }


class Backend:
    """One model, wherever it runs. Subclasses set ``name`` (the registry key, ``BACKENDS``) and what they
    ``provide``; a method runs on every backend that provides what it ``needs`` (``Adapter.needs``)."""

    name: ClassVar[str] = ""
    #: Packages the backend imports when it runs (``run_baselines`` checks them before planning).
    requires: ClassVar[tuple[str, ...]] = ()
    #: "model" (the model itself, for a method that trains it), "loglikelihood", "generate", "chat".
    provides: ClassVar[frozenset[str]] = frozenset()
    #: The model is served elsewhere: a run needs the server's URL (``--api-base``), part of its identity.
    remote: ClassVar[bool] = False

    #: The model runs in this process (it provides the model itself): set from ``provides``.
    in_process: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.in_process = "model" in cls.provides

    @classmethod
    def check(cls, models: Sequence[str], server: str = "") -> str:
        """Before a sweep is planned: ``models`` can be opened here (and, for a remote backend, ``server`` is
        reachable and serves them). -> the server's URL as runs record it ("" in process). Raises
        ``BackendError`` saying what is wrong. In process: each model a local folder, or already cached."""
        from ..base import local_model_problem

        for name in models if cls.in_process else ():
            if name and local_model_problem(name):
                raise BackendError(local_model_problem(name))
        return ""

    model_name: str = ""  # what the run names the model
    server: str = ""  # where it runs: "" in this process, else the server's base URL
    device: str = ""
    window: int | None = None  # context window in tokens; None when unknown

    def __init__(self, config: AdapterConfig, *, method: str, **options: Any):
        """Every backend opens from the run's config, for a method (``open_backend``); ``options`` are the
        in-process backend's (what to load and how), which a server's backend ignores."""
        self.config, self.method = config, method
        self.tally = Tally()

    # ------------------------------------------------------------------ token budgets

    def count_tokens(self, texts: Sequence[str]) -> list[int] | None:
        """Tokens of each text read as a context piece; None when this backend cannot count."""
        return None

    def context_budget(self, request: LoglikelihoodRequest | GenerationRequest) -> int | None:
        """Tokens the request's context may take: the window less the room for its answer and any
        special tokens; None when unknown."""
        return None

    def prompt_tokens(self, context: Sequence[str]) -> int | None:
        """Tokens of a context as the model reads it, asked of the model (a server: one request of one token);
        None when it does not say. Raises ``ContextTooSmall`` (with the window) when it does not fit."""
        counts = self.count_tokens(["".join(context)])
        return counts[0] if counts else None

    # ------------------------------------------------------------------ requests

    def loglikelihood(self, requests: Sequence[LoglikelihoodRequest], done: Done = None) -> list[list[float]]:
        raise BackendError(f"the {self.name} backend cannot score continuations")

    def generate_until(self, requests: Sequence[GenerationRequest], done: Done = None) -> list[str]:
        raise BackendError(f"the {self.name} backend cannot generate text")

    def chat(self, requests: Sequence[ChatRequest], done: Done = None) -> list[str]:
        raise BackendError(f"the {self.name} backend cannot hold a conversation")

    @property
    def scores_loglikelihood(self) -> bool:
        """Whether ``loglikelihood`` is answered here (else a method generates and parses instead)."""
        return True

    # ------------------------------------------------------------------ bookkeeping

    def peak_memory_bytes(self) -> int | None:
        return None

    def notes(self) -> dict[str, Any]:
        """What the run's notes record about the backend."""
        return {"backend": self.name}

    def close(self) -> None:
        """Let go of what the backend holds (connections); the in-process model goes with the object."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


class Stopwatch:
    """Wall-clock seconds of a block, added to a tally."""

    def __init__(self, tally: Tally):
        self.tally = tally

    def __enter__(self):
        self._t = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.tally.add(seconds=time.perf_counter() - self._t)
        return False
