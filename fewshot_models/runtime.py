"""Torch plumbing shared by the neural adapters: device, seeds, precision, padding, the
training loop, timing and memory. Imported only when an adapter runs (it imports torch)."""

from __future__ import annotations

import contextlib
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from .base import AdapterError, ModelNotFound, Progress, hub_offline, local_model_problem, model_not_found


def resolve_device(name: str) -> torch.device:
    """``auto`` picks CUDA when available, else CPU."""
    name = (name or "auto").lower()
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise AdapterError(f"device {name!r} requested but CUDA is not available")
    if name != "cpu" and not name.startswith("cuda"):
        raise AdapterError(f"unknown device {name!r}; use auto, cpu or cuda")
    return torch.device(name)


def seed_everything(seed: int) -> None:
    """Fix python, numpy and torch (CPU and CUDA) random state."""
    random.seed(seed)
    np.random.seed(seed % (2**32))
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


def autocast(device: torch.device, enabled: bool):
    """bf16 autocast on CUDA; a no-op context on CPU (CPU runs stay in fp32 and deterministic)."""
    if device.type == "cuda" and enabled:
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()


# What a missing / incomplete / incompatible checkpoint raises inside from_pretrained.
_LOAD_ERRORS = (OSError, ValueError, KeyError, ImportError)


def load_pretrained(auto_cls, path: str, method: str, what: str, **kwargs):
    try:
        return auto_cls.from_pretrained(path, local_files_only=hub_offline(), **kwargs)
    except _LOAD_ERRORS as exc:
        raise model_not_found(method, path, what, exc) from exc


def load_tokenizer(path: str, method: str, what: str):
    from transformers import AutoTokenizer

    try:
        tok = AutoTokenizer.from_pretrained(path, use_fast=True, local_files_only=hub_offline())
    except _LOAD_ERRORS as exc:
        raise model_not_found(method, path, what, exc) from exc
    return tok


def check_local_or_cached(path: str, method: str, what: str) -> None:
    """Fail at once, in one line, for a model that is not here: nothing is fetched from the model hub."""
    problem = local_model_problem(path)
    if problem:
        raise ModelNotFound(f"{method}: {problem}")


def resolve_model(config_model: str | None, default: Callable[[], str] | None, method: str, what: str) -> str:
    """The checkpoint to load: ``config.model``, else the method's default (if it has one)."""
    path = config_model if config_model else (default() if default else None)
    if path is None:
        raise model_not_found(method, None, what)
    path = str(path)
    check_local_or_cached(path, method, what)
    return path


# --------------------------------------------------------------------------- batching


def pad_batch(features: Sequence[dict[str, Any]], pad_id: int, padding_side: str = "right") -> dict[str, torch.Tensor]:
    """Dynamic padding: lists padded to the longest in the batch, scalars stacked.
    ``input_ids``/``decoder_input_ids`` -> pad_id, ``labels`` (list) -> -100, others -> 0."""
    out: dict[str, torch.Tensor] = {}
    for key in features[0]:
        values = [f[key] for f in features]
        if isinstance(values[0], (list, tuple)):
            longest = max(len(v) for v in values)
            fill = pad_id if key in ("input_ids", "decoder_input_ids") else (-100 if key == "labels" else 0)
            rows = []
            for v in values:
                pad = [fill] * (longest - len(v))
                rows.append(list(v) + pad if padding_side == "right" else pad + list(v))
            out[key] = torch.tensor(rows, dtype=torch.long)
        else:
            out[key] = torch.tensor(values, dtype=torch.long)
    return out


def to_device(batch: dict[str, torch.Tensor], device: torch.device) -> dict[str, torch.Tensor]:
    return {k: v.to(device, non_blocking=True) for k, v in batch.items()}


def length_sorted_batches(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Index batches for inference, longest first (less padding); callers restore order."""
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


# --------------------------------------------------------------------------- training


class TrainLoop:
    """One optimizer step = forward (autocast on CUDA), backward, grad clipping, optimizer and
    scheduler step, zero_grad. ``loss_fn(model, batch) -> loss`` defaults to ``model(**batch).loss``.

    The optimizer is AdamW (torch) with weight decay off for biases and LayerNorm weights (the
    BERT recipe); ``optimizer="adamax"`` gives the mt-dnn reference optimizer instead."""

    def __init__(
        self,
        model,
        *,
        lr: float,
        total_steps: int,
        device: torch.device,
        warmup_ratio: float = 0.0,
        weight_decay: float = 0.0,
        max_grad_norm: float | None = 1.0,
        bf16: bool = True,
        optimizer: str = "adamw",
        loss_fn: Callable | None = None,
    ):
        self.model = model
        self.device = device
        self.bf16 = bf16
        self.max_grad_norm = max_grad_norm
        self.loss_fn = loss_fn or (lambda m, b: m(**b).loss)
        decay: list = []  # torch parameters
        no_decay: list = []
        for name, p in model.named_parameters():
            if not p.requires_grad:
                continue
            (no_decay if p.ndim < 2 or "norm" in name.lower() else decay).append(p)
        groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
        name = optimizer.lower()
        self.optimizer: torch.optim.Optimizer
        if name == "adamw":
            self.optimizer = torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.999), eps=1e-8)
        elif name == "adamax":
            self.optimizer = torch.optim.Adamax(groups, lr=lr)
        else:
            raise AdapterError(f"unknown optimizer {optimizer!r}; use adamw or adamax")
        # transformers' own schedule (linear warm-up from 0, then linear decay to 0) with the
        # warm-up as mt-dnn's MTDNNModel._setup_optim computes it: warmup * num_train_step, not
        # rounded (0.3 of 3 steps: lr factors 0, 0.74, 0.37).
        from transformers import get_linear_schedule_with_warmup

        warmup_steps = warmup_ratio * total_steps
        self.scheduler = get_linear_schedule_with_warmup(self.optimizer, warmup_steps, total_steps)
        self.steps = 0

    def step(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        self.model.train()
        with autocast(self.device, self.bf16):
            loss = self.loss_fn(self.model, batch)
        loss.backward()
        if self.max_grad_norm:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.max_grad_norm)
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.steps += 1
        return loss.detach()


@dataclass
class TrainStats:
    steps: int
    seconds: float
    features_seen: int
    first_loss: float | None
    last_loss: float | None

    @property
    def examples_per_second(self) -> float | None:
        if self.steps == 0 or self.seconds <= 0:
            return None
        return self.features_seen / self.seconds


def total_steps(n: int, batch_size: int, epochs: float, max_steps: int | None) -> int:
    if n == 0:
        return 0
    if max_steps:
        return int(max_steps)
    return int(math.ceil(epochs * math.ceil(n / batch_size)))


def train(
    loop: TrainLoop,
    features: Sequence[dict],
    *,
    pad_id: int,
    batch_size: int,
    steps: int,
    seed: int,
    progress: Progress | None = None,
) -> TrainStats:
    """Shuffled mini-batches (a seeded torch generator), epoch after epoch, for ``steps``
    optimizer steps; the last checkpoint is kept (no dev set in CLUES to select one)."""
    n = len(features)
    gen = torch.Generator().manual_seed(seed)
    sync(loop.device)
    start = time.perf_counter()
    done = seen = 0
    first = last = None
    while done < steps and n:
        perm = torch.randperm(n, generator=gen).tolist()
        for i in range(0, n, batch_size):
            idx = perm[i : i + batch_size]
            batch = to_device(pad_batch([features[j] for j in idx], pad_id), loop.device)
            loss = loop.step(batch)
            if first is None:
                first = float(loss)
            done += 1
            seen += len(idx)
            if progress:
                progress("train", done, steps)
            if done >= steps:
                last = float(loss)
                break
    sync(loop.device)
    return TrainStats(done, time.perf_counter() - start, seen, first, last)


# --------------------------------------------------------------------------- bookkeeping


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def reset_peak_memory(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def peak_memory(device: torch.device) -> int | None:
    if device.type == "cuda":
        return int(torch.cuda.max_memory_allocated(device))
    return None


class Stopwatch:
    def __init__(self, device: torch.device):
        self.device = device

    def __enter__(self):
        sync(self.device)
        self._t = time.perf_counter()
        return self

    def __exit__(self, *exc):
        sync(self.device)
        self.seconds = time.perf_counter() - self._t
        return False


def pad_token_id(tokenizer) -> int:
    for tid in (tokenizer.pad_token_id, tokenizer.eos_token_id, tokenizer.unk_token_id):
        if tid is not None:
            return int(tid)
    return 0


def require_fast(tokenizer, method: str) -> None:
    if not getattr(tokenizer, "is_fast", False):
        raise AdapterError(
            f"{method} needs a fast (Rust) tokenizer for offset mappings; {type(tokenizer).__name__} is not one"
        )


def fit_and_predict(session, train, test, config, progress, notes: dict):
    """What every fine-tuning adapter's run does: adapt ``session`` on ``train``, then predict
    ``test`` (timed apart), and report with the run's seed, model and hyperparameters."""
    from .base import AdapterResult

    reset_peak_memory(session.device)
    stats = session.fit(train, progress)
    with Stopwatch(session.device) as sw:
        predictions = session.predict(test, progress)
    return AdapterResult(
        predictions=predictions,
        device=str(session.device),
        train_seconds=stats.seconds,
        predict_seconds=sw.seconds,
        train_examples_per_second=stats.examples_per_second,
        peak_gpu_memory_bytes=peak_memory(session.device),
        notes={
            "seed": config.seed,
            "model": session.model_path,
            "hyperparameters": session.hp,
            "train_steps": stats.steps,
            "first_loss": stats.first_loss,
            "last_loss": stats.last_loss,
            **notes,
            **getattr(session, "notes", {}),
        },
    )


def session_loop(session, n_features: int, loss_fn=None) -> tuple[TrainLoop, int]:
    """The training loop and step count of a fine-tuning session, from its hyperparameters."""
    hp = session.hp
    steps = total_steps(n_features, int(hp["batch_size"]), float(hp["epochs"]), hp["max_steps"])
    loop = TrainLoop(
        session.model,
        lr=float(hp["lr"]),
        total_steps=max(steps, 1),
        device=session.device,
        warmup_ratio=float(hp["warmup_ratio"]),
        weight_decay=float(hp["weight_decay"]),
        max_grad_norm=hp["max_grad_norm"],
        bf16=session.config.bf16,
        optimizer=str(hp["optimizer"]),
        loss_fn=loss_fn,
    )
    return loop, steps


def fit_features(session, features: list, progress, loss_fn=None):
    """Train a fine-tuning session's model on its encoded training features."""
    loop, steps = session_loop(session, len(features), loss_fn)
    return train(
        loop,
        features,
        pad_id=session.pad_id,
        batch_size=int(session.hp["batch_size"]),
        steps=steps,
        seed=session.config.seed,
        progress=progress,
    )


def predict_batches(session, features: list, progress=None):
    """Batched inference over encoded ``features``: yields ``(indices, batch)``, batches of similar
    length (dynamic padding), padded and on the session's device; the model is put in eval mode and
    ``progress("predict", done, total)`` is called after each batch is used."""
    batches = length_sorted_batches([len(f["input_ids"]) for f in features], int(session.hp["eval_batch_size"]))
    session.model.eval()
    for b, idx in enumerate(batches):
        yield idx, to_device(pad_batch([features[j] for j in idx], session.pad_id), session.device)
        if progress:
            progress("predict", b + 1, len(batches))
