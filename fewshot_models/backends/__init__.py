"""Model backends, one registry entry each (``BACKENDS``): where a method's model runs.

``transformers``: a local checkpoint in this process (the methods that train need it);
``openai``: any server speaking the OpenAI-compatible API (vLLM, SGLang, TGI, llama.cpp,
``transformers serve``, Ollama, hosted APIs). A method runs on every backend that provides what it
needs (``backends_for``); ``open_backend(config, ...)`` opens the one ``config.backend`` names.
Importing this package imports neither torch nor httpx: each backend imports what it needs when it
is opened.
"""

from __future__ import annotations

from ..base import AdapterConfig, AdapterError
from .base import (
    Backend,
    BackendError,
    ChatRequest,
    ContextTooSmall,
    GenerationRequest,
    LoglikelihoodRequest,
    MemoryStore,
    ResponseStore,
    Tally,
)
from .openai import OpenAIBackend
from .transformers import TransformersBackend

BACKENDS: dict[str, type[Backend]] = {cls.name: cls for cls in (TransformersBackend, OpenAIBackend)}


def backends_for(needs) -> tuple[str, ...]:
    """The backends that provide everything in ``needs``, in the registry's order (the first is the default)."""
    return tuple(name for name, cls in BACKENDS.items() if needs and set(needs) <= cls.provides)


def open_backend(config: AdapterConfig, *, method: str, needs=(), **options) -> Backend:
    """The backend ``config.backend`` names (none named: the first that provides what the method ``needs``),
    opened for ``method``. ``options`` are the in-process backend's (what to load and how); a server's
    backend takes what it needs from ``config``."""
    name = config.backend or next(iter(backends_for(needs)), "")
    cls = BACKENDS.get(name)
    if cls is None:
        raise AdapterError(f"unknown backend {name!r}; known: {', '.join(BACKENDS)}")
    if not set(needs) <= cls.provides:
        raise AdapterError(
            f"{method} needs {' and '.join(sorted(set(needs) - cls.provides))} of its backend, which the {name} "
            f"backend does not provide (use {' or '.join(backends_for(needs)) or 'another'})"
        )
    return cls(config, method=method, **options)


def open_model_backend(config: AdapterConfig, *, method: str, **options) -> TransformersBackend:
    """``open_backend`` for a method that trains its model: the backend that holds the model in this process."""
    backend = open_backend(config, method=method, needs=("model",), **options)
    if not isinstance(backend, TransformersBackend):
        raise AdapterError(f"{method} needs the model in this process; the {backend.name} backend does not hold it")
    return backend


__all__ = [
    "BACKENDS",
    "open_model_backend",
    "Backend",
    "BackendError",
    "ChatRequest",
    "ContextTooSmall",
    "GenerationRequest",
    "LoglikelihoodRequest",
    "MemoryStore",
    "OpenAIBackend",
    "ResponseStore",
    "Tally",
    "TransformersBackend",
    "backends_for",
    "open_backend",
]
