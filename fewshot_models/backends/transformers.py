"""The in-process backend: a transformers checkpoint loaded in this process (CPU or CUDA).

It answers the requests of ``backends.base`` with a causal LM (``loglikelihood``,
``generate_until``) and hands the methods that train (``ft``, ``pt``, ``s2s``) their tokenizer and
model (``load_model``). Torch and transformers are imported when it is opened, never before.

Token budgets: a context's pieces are tokenised one by one (no special tokens) and concatenated,
after the BOS token for tokenizers that add one themselves (Llama-style, not GPT-2). A context
longer than its budget (the window less the room for the answer and the BOS token) loses its
OLDEST tokens. A continuation is tokenised together with the last word of its context and split
off, so that sentencepiece tokenizers do not add a spurious word-start piece ("Answer:" +
" positive" -> the pieces of " positive" as they follow "Answer:").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..base import AdapterConfig, Progress
from .base import Backend, BackendError, Done, GenerationRequest, LoglikelihoodRequest


class TransformersBackend(Backend):
    name = "transformers"
    requires = ("torch", "transformers")
    provides = frozenset({"model", "loglikelihood", "generate"})

    def __init__(
        self,
        config: AdapterConfig,
        *,
        method: str,
        what: str,
        default_model: Callable[[], str] | None = None,
        progress: Progress | None = None,
        causal_lm: bool = False,
        batch_size: int = 8,
        max_length: int | None = None,
    ):
        from .. import runtime as rt

        super().__init__(config, method=method)
        self.what = what
        self.torch_device = rt.resolve_device(config.device)
        self.device = str(self.torch_device)
        self.model_path = rt.resolve_model(config.model, default_model, method, what)
        self.model_name = self.model_path
        if progress:
            progress("load", 0, 1)
        rt.seed_everything(config.seed)  # a new head's initialisation depends on it
        self.tokenizer = rt.load_tokenizer(self.model_path, method, what)
        self.pad_id = rt.pad_token_id(self.tokenizer)
        self.batch_size = int(batch_size)
        self.lm: Any = None  # the causal LM (a torch module), when loaded: causal_lm=True
        if causal_lm:
            self._load_causal_lm(max_length)
        rt.reset_peak_memory(self.torch_device)

    def load_model(self, auto_cls, **kwargs):
        """The checkpoint loaded with ``auto_cls`` (a method that trains puts it on the device itself)."""
        from .. import runtime as rt

        return rt.load_pretrained(auto_cls, self.model_path, self.method, self.what, **kwargs)

    # ------------------------------------------------------------------ the causal LM

    def _load_causal_lm(self, max_length: int | None) -> None:
        import torch
        from transformers import AutoModelForCausalLM

        dtype = torch.bfloat16 if self.torch_device.type == "cuda" and self.config.bf16 else torch.float32
        self.lm = self.load_model(AutoModelForCausalLM, dtype=dtype)
        self.lm.to(self.torch_device).eval()
        self.window = int(max_length or self._model_window())
        bos = self.tokenizer.bos_token_id
        probe = self.tokenizer("a")["input_ids"]
        self.prefix = [bos] if bos is not None and probe and probe[0] == bos else []
        self._keep_ok = True

    def _lm_window(self) -> int:
        """The causal LM's context window, set when it is loaded."""
        if self.window is None:
            raise BackendError(f"{self.method} asked the causal LM, which this backend did not load (causal_lm)")
        return self.window

    def _model_window(self) -> int:
        cfg = self.lm.config
        for name in ("max_position_embeddings", "n_positions", "n_ctx", "max_sequence_length"):
            value = getattr(cfg, name, None)
            if isinstance(value, int) and value > 0:
                return value
        tok_max = getattr(self.tokenizer, "model_max_length", None)
        if isinstance(tok_max, int) and 0 < tok_max < 1_000_000:
            return tok_max
        return 2048

    def ids(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def continuation_ids(self, context: Sequence[str], continuation: str) -> list[int]:
        """Tokens of ``continuation`` as they follow the last word of ``context`` (tokenised together and
        split, so that sentencepiece tokenizers do not add a spurious word-start piece)."""
        words = context[-1].rsplit(None, 1) if context else []
        tail = words[-1] if words else ""
        head = self.ids(tail)
        full = self.ids(tail + continuation)
        if tail and full[: len(head)] == head and len(full) > len(head):
            return full[len(head) :]
        return self.ids(continuation)

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return [len(self.ids(t)) for t in texts]

    def _room(self, request) -> int:
        if isinstance(request, GenerationRequest):
            return int(request.max_tokens)
        return max(len(self.continuation_ids(request.context, c)) for c in request.continuations)

    def context_budget(self, request) -> int:
        return self._lm_window() - self._room(request) - len(self.prefix)

    def prompt_ids(self, context: Sequence[str], budget: int) -> list[int]:
        """The context's tokens after the BOS prefix, its oldest cut when over ``budget``."""
        ids = [t for piece in context for t in self.ids(piece)]
        if len(ids) > budget:
            ids = ids[-max(1, budget) :]
        return list(self.prefix) + ids

    # ------------------------------------------------------------------ scoring

    def loglikelihood(self, requests: Sequence[LoglikelihoodRequest], done: Done = None) -> list[list[float]]:
        out = []
        for request in requests:
            conts = [self.continuation_ids(request.context, c) for c in request.continuations]
            prompt = self.prompt_ids(request.context, self._lm_window() - max(len(c) for c in conts) - len(self.prefix))
            out.append(self.score_continuations(prompt, conts))
            if done:
                done()
        return out

    def score_continuations(self, prompt: list[int], conts: list[list[int]]) -> list[float]:
        """Summed log p(continuation | prompt) for each continuation (token ids)."""
        import torch

        from .. import runtime as rt

        scores: list[float] = []
        bs = self.batch_size
        for i in range(0, len(conts), bs):
            chunk = conts[i : i + bs]
            n = max(len(c) for c in chunk)
            seqs = [prompt + c for c in chunk]
            width = max(len(s) for s in seqs)
            ids = torch.full((len(seqs), width), self.pad_id, dtype=torch.long)
            attn = torch.zeros((len(seqs), width), dtype=torch.long)
            for k, s in enumerate(seqs):  # left padding: continuations end at the same column
                ids[k, width - len(s) :] = torch.tensor(s)
                attn[k, width - len(s) :] = 1
            ids, attn = ids.to(self.torch_device), attn.to(self.torch_device)
            pos = (attn.cumsum(-1) - 1).clamp(min=0)
            with torch.inference_mode(), rt.autocast(self.torch_device, self.config.bf16):
                logits = self._forward_last(ids, attn, pos, n + 1)
            logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)  # predicts last n tokens
            for k, c in enumerate(chunk):
                tgt = torch.tensor(c, device=logp.device)
                rows = logp[k, n - len(c) :]
                scores.append(float(rows.gather(-1, tgt[:, None]).sum()))
        return scores

    def _forward_last(self, ids, attn, pos, keep: int):
        if self._keep_ok:
            try:
                out = self.lm(
                    input_ids=ids, attention_mask=attn, position_ids=pos, logits_to_keep=keep, use_cache=False
                )
                return out.logits[:, -keep:]
            except TypeError:
                self._keep_ok = False
        out = self.lm(input_ids=ids, attention_mask=attn, position_ids=pos, use_cache=False)
        return out.logits[:, -keep:]

    # ------------------------------------------------------------------ generation

    def generate_until(self, requests: Sequence[GenerationRequest], done: Done = None) -> list[str]:
        """Greedy generation, in batches of ``batch_size`` requests in the order given."""
        out: list[str] = []
        for i in range(0, len(requests), self.batch_size):
            chunk = requests[i : i + self.batch_size]
            prompts = [self.prompt_ids(r.context, self.context_budget(r)) for r in chunk]
            out += self._generate(prompts, max(int(r.max_tokens) for r in chunk), chunk[0].stop)
            if done:
                for _ in chunk:
                    done()
        return out

    def _generate(self, prompts: list[list[int]], max_new_tokens: int, stop: str) -> list[str]:
        import torch
        from transformers import GenerationConfig, StoppingCriteria, StoppingCriteriaList

        from .. import runtime as rt

        tok = self.tokenizer
        width = max(len(p) for p in prompts)
        ids = torch.full((len(prompts), width), self.pad_id, dtype=torch.long)
        attn = torch.zeros((len(prompts), width), dtype=torch.long)
        for k, p in enumerate(prompts):
            ids[k, width - len(p) :] = torch.tensor(p)
            attn[k, width - len(p) :] = 1

        class StopString(StoppingCriteria):
            def __call__(self, input_ids, scores, **kwargs):
                texts = tok.batch_decode(input_ids[:, width:], skip_special_tokens=True)
                return torch.tensor([stop in t for t in texts], device=input_ids.device)

        gen = GenerationConfig(
            max_new_tokens=max_new_tokens,
            do_sample=False,
            num_beams=1,
            pad_token_id=self.pad_id,
            eos_token_id=tok.eos_token_id,
            bos_token_id=tok.bos_token_id,
        )
        with torch.inference_mode(), rt.autocast(self.torch_device, self.config.bf16):
            out = self.lm.generate(
                input_ids=ids.to(self.torch_device),
                attention_mask=attn.to(self.torch_device),
                generation_config=gen,
                stopping_criteria=StoppingCriteriaList([StopString()]),
            )
        texts = tok.batch_decode(out[:, width:], skip_special_tokens=True)
        return [t.split(stop)[0] for t in texts]

    # ------------------------------------------------------------------ bookkeeping

    def peak_memory_bytes(self) -> int | None:
        from .. import runtime as rt

        return rt.peak_memory(self.torch_device)

    def notes(self) -> dict[str, Any]:
        notes: dict[str, Any] = {"backend": self.name}
        if self.lm is not None:
            notes["window"] = self.window
        return notes
