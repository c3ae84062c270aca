"""``icl``: in-context learning with a local causal LM (CLUES paper, section 5.1c, where GPT-3
was queried through its API; here any ``AutoModelForCausalLM`` checkpoint, no parameter update).

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

Context window: the model's maximum positions (``max_position_embeddings`` / ``n_positions``),
or ``max_length`` when given, minus room for the answer (the longest candidate continuation,
or ``max_new_tokens`` when generating). Demonstrations that do not fit are dropped from the
FRONT of the shuffled order (the ones nearest the query are kept); ``notes["demonstrations_used"]``
gives, per test item, how many were used (the last that many of ``notes["demonstration_order"]``).
If the query alone does not fit, its oldest tokens are cut (``notes["queries_truncated"]``).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from tasks_data.registry import AnswerKind, TaskSpec

from .base import (
    Adapter,
    AdapterConfig,
    AdapterExample,
    AdapterResult,
    Progress,
    candidate_texts,
    parse_answer_text,
    render_answer,
    snap_to_context,
)

DEFAULTS = {
    "max_length": None,  # context window; None = the model's maximum positions
    "max_new_tokens": 48,  # generation budget (SQuAD answers: <= 30 tokens; NER lists longer)
    "eval_batch_size": 8,  # sequences per forward pass
    "max_demonstrations": None,  # None = all training examples (CLUES: K = 10, 20 or 30)
}

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


class ICLSession:
    def __init__(self, task: TaskSpec, config: AdapterConfig, progress: Progress | None = None):
        import torch

        from . import runtime as rt

        self.task, self.config = task, config
        self.hp = config.resolve(DEFAULTS, "icl")
        self.device = rt.resolve_device(config.device)
        self.model_path = rt.resolve_model(config.model, None, "icl", "causal-LM checkpoint")
        if progress:
            progress("load", 0, 1)
        rt.seed_everything(config.seed)
        self.tokenizer = rt.load_tokenizer(self.model_path, "icl", "causal-LM checkpoint")
        from transformers import AutoModelForCausalLM

        dtype = torch.bfloat16 if self.device.type == "cuda" and config.bf16 else torch.float32
        self.model = rt.load_pretrained(AutoModelForCausalLM, self.model_path, "icl",
                                        "causal-LM checkpoint", dtype=dtype)
        self.model.to(self.device).eval()
        self.pad_id = rt.pad_token_id(self.tokenizer)
        self.window = int(self.hp["max_length"] or self._model_window())
        bos = self.tokenizer.bos_token_id
        probe = self.tokenizer("a")["input_ids"]
        # Prepend BOS only for tokenizers that add it themselves (Llama-style), not GPT-2.
        self.prefix = [bos] if bos is not None and probe and probe[0] == bos else []
        self._keep_ok = True
        if progress:
            progress("load", 1, 1)

    def _model_window(self) -> int:
        cfg = self.model.config
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

    def continuation_ids(self, option: str) -> list[int]:
        """Tokens of " <option>" as they follow "Answer:" (tokenised together and split, so that
        sentencepiece tokenizers do not add a spurious word-start piece)."""
        head = self.ids("Answer:")
        full = self.ids("Answer: " + option)
        if full[: len(head)] == head and len(full) > len(head):
            return full[len(head):]
        return self.ids(" " + option)

    def build_prompt(self, demo_ids: list[list[int]], query: AdapterExample, room: int):
        """-> (prompt ids, demonstrations used, query truncated?)"""
        q = self.ids(render_example(query, None))
        budget = self.window - room - len(self.prefix)
        n = fit_demonstrations([len(d) for d in demo_ids], len(q), budget)
        truncated = False
        if len(q) > budget:
            q, truncated = q[-max(1, budget):], True
        used = demo_ids[len(demo_ids) - n:] if n else []
        prompt = list(self.prefix) + [t for d in used for t in d] + q
        return prompt, n, truncated

    # ------------------------------------------------------------------ scoring

    def score_continuations(self, prompt: list[int], conts: list[list[int]]) -> list[float]:
        """Summed log p(continuation | prompt) for each continuation."""
        import torch

        from . import runtime as rt

        scores: list[float] = []
        bs = int(self.hp["eval_batch_size"])
        for i in range(0, len(conts), bs):
            chunk = conts[i:i + bs]
            n = max(len(c) for c in chunk)
            seqs = [prompt + c for c in chunk]
            width = max(len(s) for s in seqs)
            ids = torch.full((len(seqs), width), self.pad_id, dtype=torch.long)
            attn = torch.zeros((len(seqs), width), dtype=torch.long)
            for k, s in enumerate(seqs):  # left padding: continuations end at the same column
                ids[k, width - len(s):] = torch.tensor(s)
                attn[k, width - len(s):] = 1
            ids, attn = ids.to(self.device), attn.to(self.device)
            pos = (attn.cumsum(-1) - 1).clamp(min=0)
            with torch.inference_mode(), rt.autocast(self.device, self.config.bf16):
                logits = self._forward_last(ids, attn, pos, n + 1)
            logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)  # predicts last n tokens
            for k, c in enumerate(chunk):
                tgt = torch.tensor(c, device=logp.device)
                rows = logp[k, n - len(c):]
                scores.append(float(rows.gather(-1, tgt[:, None]).sum()))
        return scores

    def _forward_last(self, ids, attn, pos, keep: int):
        if self._keep_ok:
            try:
                out = self.model(input_ids=ids, attention_mask=attn, position_ids=pos,
                                 logits_to_keep=keep, use_cache=False)
                return out.logits[:, -keep:]
            except TypeError:
                self._keep_ok = False
        out = self.model(input_ids=ids, attention_mask=attn, position_ids=pos, use_cache=False)
        return out.logits[:, -keep:]

    # ------------------------------------------------------------------ generation

    def generate(self, prompts: list[list[int]]) -> list[str]:
        import torch
        from transformers import GenerationConfig, StoppingCriteria, StoppingCriteriaList

        from . import runtime as rt

        tok = self.tokenizer
        width = max(len(p) for p in prompts)
        ids = torch.full((len(prompts), width), self.pad_id, dtype=torch.long)
        attn = torch.zeros((len(prompts), width), dtype=torch.long)
        for k, p in enumerate(prompts):
            ids[k, width - len(p):] = torch.tensor(p)
            attn[k, width - len(p):] = 1

        class NewlineStop(StoppingCriteria):
            def __call__(self, input_ids, scores, **kwargs):
                texts = tok.batch_decode(input_ids[:, width:], skip_special_tokens=True)
                return torch.tensor(["\n" in t for t in texts], device=input_ids.device)

        gen = GenerationConfig(max_new_tokens=int(self.hp["max_new_tokens"]), do_sample=False,
                               num_beams=1, pad_token_id=self.pad_id,
                               eos_token_id=tok.eos_token_id,
                               bos_token_id=tok.bos_token_id)
        with torch.inference_mode(), rt.autocast(self.device, self.config.bf16):
            out = self.model.generate(input_ids=ids.to(self.device),
                                      attention_mask=attn.to(self.device), generation_config=gen,
                                      stopping_criteria=StoppingCriteriaList([NewlineStop()]))
        texts = tok.batch_decode(out[:, width:], skip_special_tokens=True)
        return [t.split("\n")[0] for t in texts]

    # ------------------------------------------------------------------ run

    def predict(self, train: Sequence[AdapterExample], test: Sequence[AdapterExample],
                progress: Progress | None = None):
        task, kind = self.task, self.task.answer_kind
        demos = shuffled_demonstrations(train, self.config.seed)
        if self.hp["max_demonstrations"] is not None:  # keep the last m of the shuffled order
            m = max(0, int(self.hp["max_demonstrations"]))
            demos = demos[max(0, len(demos) - m):] if m else []
        demo_ids = [self.ids(render_example(d, render_answer(task, d))) for d in demos]
        notes = {"demonstration_order": [d.uid for d in demos], "demonstrations_used": [],
                 "queries_truncated": 0, "spans_not_in_context": 0, "window": self.window}
        preds: list = [None] * len(test)
        pending: list[tuple[int, list[int]]] = []  # generation, batched

        def flush():
            if not pending:
                return
            texts = self.generate([p for _, p in pending])
            for (j, _), text in zip(pending, texts, strict=True):
                preds[j] = self._parse_generated(test[j], text, notes)
            pending.clear()

        for j, ex in enumerate(test):
            options = list(task.labels) if kind is AnswerKind.LABEL else (
                candidate_texts(ex) if kind is AnswerKind.ENTITY else [])
            if options:
                conts = [self.continuation_ids(o) for o in options]
                prompt, n, trunc = self.build_prompt(demo_ids, ex, max(len(c) for c in conts))
                scores = self.score_continuations(prompt, conts)
                preds[j] = [options[max(range(len(options)), key=lambda k: (scores[k], -k))]]
            else:
                prompt, n, trunc = self.build_prompt(demo_ids, ex, int(self.hp["max_new_tokens"]))
                pending.append((j, prompt))
                if len(pending) >= int(self.hp["eval_batch_size"]):
                    flush()
            notes["demonstrations_used"].append(n)
            notes["queries_truncated"] += int(trunc)
            if progress:
                progress("predict", j + 1, len(test))
        flush()
        return preds, notes

    def _parse_generated(self, ex: AdapterExample, text: str, notes: dict) -> list[str]:
        kind = self.task.answer_kind
        parsed = parse_answer_text(text, AnswerKind.SPANS if kind is AnswerKind.SPANS
                                   else AnswerKind.SPAN_OR_NONE)
        out = []
        for span in parsed:
            exact = snap_to_context(span, ex.context)
            if exact is None:
                notes["spans_not_in_context"] += 1
            elif exact not in out:
                out.append(exact)
        if kind is not AnswerKind.SPANS:
            out = out[:1]
        return out


class ICLAdapter(Adapter):
    method = "icl"
    defaults = DEFAULTS  # applies to every task (Adapter.applies_to)

    def run(self, task: TaskSpec, train: Sequence[AdapterExample], test: Sequence[AdapterExample],
            config: AdapterConfig, progress: Progress | None = None) -> AdapterResult:
        from . import runtime as rt

        self.check_applies(task)
        session = ICLSession(task, config, progress)
        rt.reset_peak_memory(session.device)
        with rt.Stopwatch(session.device) as sw:
            predictions, notes = session.predict(train, test, progress)
        notes.update(seed=config.seed, model=session.model_path, hyperparameters=session.hp,
                     prompt_format=PROMPT_FORMAT,
                     scoring="summed log-likelihood of ' <option>'" if task.answer_kind in (
                         AnswerKind.LABEL, AnswerKind.ENTITY) else "greedy generation to newline")
        return AdapterResult(
            predictions=predictions, device=str(session.device), train_seconds=0.0,
            predict_seconds=sw.seconds, train_examples_per_second=None,
            peak_gpu_memory_bytes=rt.peak_memory(session.device), notes=notes)
