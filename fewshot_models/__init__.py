"""Model adapters for the CLUES baselines (paper section 5.1).

``METHODS`` maps a method name to its adapter class::

    from fewshot_models import METHODS, AdapterConfig
    adapter = METHODS["ft"]()
    reason = adapter.applies_to(task)          # None, or why not
    result = adapter.run(task, train, test, AdapterConfig(seed=1))

Importing this package imports neither Django nor torch/transformers (the neural adapters
import them when they run), so it is safe in a web process and works on a GPU box or Celery
worker that has only torch + transformers.
"""

from __future__ import annotations

from .base import (
    Adapter,
    AdapterConfig,
    AdapterError,
    AdapterExample,
    AdapterResult,
    ModelNotFound,
    NotApplicable,
    Progress,
    default_encoder_path,
)
from .icl import ICLAdapter
from .prompt_ft import PromptFTAdapter
from .reference import EmptyAdapter, MajorityAdapter
from .seq2seq import Seq2SeqAdapter
from .span_ft import SpanFTAdapter
from .worker import WorkerAdapter

METHODS: dict[str, type[Adapter]] = {
    cls.method: cls
    for cls in (
        SpanFTAdapter,
        PromptFTAdapter,
        ICLAdapter,
        WorkerAdapter,
        Seq2SeqAdapter,
        EmptyAdapter,
        MajorityAdapter,
    )
}

__all__ = [  # the adapter classes are importable too; METHODS is how they are found
    "METHODS",
    "Adapter",
    "AdapterConfig",
    "AdapterError",
    "AdapterExample",
    "AdapterResult",
    "ModelNotFound",
    "NotApplicable",
    "Progress",
    "default_encoder_path",
]
