"""``pt``: prompt-based fine-tuning, LM-BFF style (CLUES paper, section 5.1b; Gao et al. 2021,
"Making Pre-trained Language Models Better Few-shot Learners", princeton-nlp/LM-BFF).

Only SST-2 and MNLI: the paper uses LM-BFF's manual templates and verbalizers for them and
defers NER and MRC. The masked LM itself is the head (``AutoModelForMaskedLM``), nothing new is
initialised. Templates and verbalizers live on the task (``TaskSpec.prompt``), verbatim from LM-BFF
``run_experiment.sh`` and in its notation (``read_template``):

* SST-2 ``*cls**sent_0*_It_was*mask*.*sep+*`` -> ``<sentence> It was [MASK].``,
  {negative: "terrible", positive: "great"}.
* MNLI ``*cls**sent-_0*?*mask*,*+sentl_1**sep+*`` -> ``<premise>? [MASK], <hypothesis>``: the
  premise without its final punctuation mark, then "?", the mask, ",", and the hypothesis with
  its first letter lower-cased; {entailment: "Yes", neutral: "Maybe", contradiction: "No"}.

The loss is the cross-entropy over the verbalizer words' logits at the mask position (LM-BFF's
``num_labels``-way softmax over the label words), and the prediction is the label whose word
has the highest logit. Verbalizer words must be single tokens of the tokenizer; for BPE
tokenizers the leading-space form ("Ġgreat") is tried first, as the word follows a space in
the template. If the input is too long, the sentence(s) are cut (longest first) so that the
template and the mask always survive.

Hyperparameters: LM-BFF lr 1e-5, batch 8 (``run_experiment.sh``: LR recommendation 1e-5,
BS 8; AdamW, no warm-up, linear decay, no weight decay: the HF Trainer defaults it ran with);
max_seq_length 128 (SST-2) / 256 (MNLI). LM-BFF trains 1000 steps and keeps the best checkpoint
on a dev set; CLUES has no dev set, so we train 20 epochs (20 x ceil(N/8) steps) and keep the
final checkpoint. No default model: a local masked-LM checkpoint (e.g. roberta-large, as in
LM-BFF) must be given as ``AdapterConfig.model``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from tasks_data.registry import TaskSpec

from .backends import open_model_backend
from .base import (
    Adapter,
    AdapterConfig,
    AdapterError,
    AdapterExample,
    AdapterResult,
    Progress,
    gold_label,
)

DEFAULTS = {
    "lr": 1e-5,  # LM-BFF
    "epochs": 20,  # 20 x ceil(N/8) steps (see module docstring)
    "max_steps": None,
    "batch_size": 8,  # LM-BFF
    "eval_batch_size": 32,
    "warmup_ratio": 0.0,  # HF Trainer default in LM-BFF
    "weight_decay": 0.0,  # HF Trainer default in LM-BFF
    "max_grad_norm": 1.0,  # HF Trainer default in LM-BFF
    "max_length": None,  # None = 128 for SST-2, 256 for MNLI (LM-BFF)
    "optimizer": "adamw",
}

# The templates and verbalizers (LM-BFF run_experiment.sh) and max lengths live on the task registry entry
# (``TaskSpec.prompt``): a new task declares them or says why prompt FT does not apply.
_END_PUNCT = ".?!,;:"
LM_BFF_MAX_LENGTH = 128  # LM-BFF's max_seq_length default, for a task that declares none
_SENTENCE = re.compile(r"(\+)?sent([lu]?)(-?)_(\d)")


@dataclass(frozen=True)
class Sentence:
    """A template's sentence part: 0 the context (MNLI: the premise), 1 the hypothesis."""

    index: int
    space: bool = False  # "+": a space before it
    case: str = ""  # "l": first letter lower-cased; "u": upper-cased
    cut: bool = False  # "-": without its final punctuation mark (LM-BFF drops the last character, which
    # a sentence without one would lose)

    def text(self, ex: AdapterExample) -> str:
        text = (ex.context if self.index == 0 else ex.hypothesis).strip()
        if self.cut and text and text[-1] in _END_PUNCT:
            text = text[:-1]
        if self.case == "l":
            text = text[:1].lower() + text[1:]
        elif self.case == "u":
            text = text[:1].upper() + text[1:]
        return " " + text if self.space else text


MASK = "mask"


def read_template(template: str) -> list[Sentence | str]:
    """An LM-BFF template -> its parts between the tokenizer's own affixes (``cls`` ... ``sep+``): sentences,
    ``MASK``, and literal text (``_`` a space). AdapterError names what it cannot read."""
    parts = [p for p in template.split("*") if p]
    if len(parts) < 3 or parts[0] != "cls" or parts[-1] not in ("sep+", "sep"):
        raise AdapterError(f"pt: the template {template!r} must start with *cls* and end with *sep+*")
    out: list[Sentence | str] = []
    for part in parts[1:-1]:
        sentence = _SENTENCE.fullmatch(part)
        if part == MASK:
            out.append(MASK)
        elif sentence:
            space, case, cut, index = sentence.groups()
            if int(index) > 1:
                raise AdapterError(f"pt: the template {template!r} names sentence {index}; a task has two at most")
            out.append(Sentence(int(index), space=bool(space), case=case, cut=bool(cut)))
        elif part in ("cls", "sep", "sep+"):
            raise AdapterError(f"pt: the template {template!r} has {part!r} inside it: one sequence only")
        else:
            out.append(part.replace("_", " "))
    if out.count(MASK) != 1:
        raise AdapterError(f"pt: the template {template!r} must hold exactly one *mask*")
    return out


def verbalizer_token_ids(tokenizer, words: Sequence[str]) -> list[int]:
    """One token id per word (leading-space variant first); AdapterError if a word is not a
    single token."""
    ids = []
    for word in words:
        found = None
        for variant in (" " + word, word):
            toks = tokenizer(variant, add_special_tokens=False)["input_ids"]
            if len(toks) == 1 and toks[0] != tokenizer.unk_token_id:
                found = toks[0]
                break
        if found is None:
            pieces = tokenizer.tokenize(" " + word)
            raise AdapterError(
                f"pt: verbalizer word {word!r} is not a single token of this tokenizer "
                f"(it splits into {pieces}); LM-BFF verbalizers need single-token words: use a "
                "model whose vocabulary has them (e.g. roberta-large, bert-base-uncased)"
            )
        ids.append(found)
    if len(set(ids)) != len(ids):
        raise AdapterError(f"pt: verbalizer words {list(words)} map to the same token")
    return ids


def special_affixes(tokenizer) -> tuple[list[int], list[int]]:
    """The special tokens the tokenizer puts before and after a single sequence ([CLS] / [SEP],
    <s> / </s>, ...), read off a probe encoding (``build_inputs_with_special_tokens`` ignores
    the post-processor of a generic ``PreTrainedTokenizerFast``)."""
    probe = "hello"
    bare = tokenizer(probe, add_special_tokens=False)["input_ids"]
    full = tokenizer(probe)["input_ids"]
    for i in range(len(full) - len(bare) + 1):
        if full[i : i + len(bare)] == bare:
            return list(full[:i]), list(full[i + len(bare) :])
    return [], []


class PromptSession:
    def __init__(self, task: TaskSpec, config: AdapterConfig, progress: Progress | None = None):
        from . import runtime as rt

        self.task, self.config = task, config
        if task.prompt is None:
            raise AdapterError(f"pt: {task.slug} has no prompt (template and verbalizer) to fine-tune with")
        prompt = task.prompt
        self.hp = config.resolve(DEFAULTS, "pt")
        self.backend = open_model_backend(config, method="pt", what="masked-LM checkpoint", progress=progress)
        self.device, self.model_path, self.tokenizer = (
            self.backend.torch_device,
            self.backend.model_path,
            self.backend.tokenizer,
        )
        if self.tokenizer.mask_token_id is None:
            raise AdapterError(f"pt: the tokenizer at {self.model_path} has no mask token")
        from transformers import AutoModelForMaskedLM

        self.model = self.backend.load_model(AutoModelForMaskedLM)
        self.model.to(self.device)
        self.labels = list(task.labels)
        self.verbalizer = dict(prompt.verbalizer)
        self.label_token_ids = verbalizer_token_ids(self.tokenizer, [self.verbalizer[label] for label in self.labels])
        self.template = read_template(prompt.template)
        self.max_length = int(self.hp["max_length"] or prompt.max_length or LM_BFF_MAX_LENGTH)
        self.pad_id = rt.pad_token_id(self.tokenizer)
        self.prefix, self.suffix = special_affixes(self.tokenizer)
        self.truncated = 0
        if progress:
            progress("load", 1, 1)

    def _ids(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def encode(self, ex: AdapterExample) -> dict:
        """Template -> input ids with exactly one mask token (segments encoded separately so that
        the sentence(s) can be shortened without touching the template)."""
        parts = [self._ids(p) if isinstance(p, str) and p != MASK else p for p in self.template]
        sents = [self._ids(p.text(ex)) for p in parts if isinstance(p, Sentence)]

        def pieces(sents: list[list[int]]) -> list[int]:
            ids: list[int] = []
            n = 0
            for part in parts:
                if isinstance(part, Sentence):
                    ids += sents[n]
                    n += 1
                elif isinstance(part, str):  # MASK, the only text left unencoded
                    ids.append(self.tokenizer.mask_token_id)
                else:
                    ids += part
            return ids

        budget = self.max_length - len(self.prefix) - len(self.suffix)
        body = pieces(sents)
        if len(body) > budget:
            self.truncated += 1
            while len(body) > budget:
                longest = max(range(len(sents)), key=lambda k: len(sents[k]))
                if not sents[longest]:
                    raise AdapterError("pt: max_length is too small for the template")
                sents[longest] = sents[longest][:-1]
                body = pieces(sents)
        input_ids = self.prefix + body + self.suffix
        feat = {"input_ids": input_ids, "attention_mask": [1] * len(input_ids)}
        return feat

    def loss_fn(self, model, batch):
        import torch

        logits = self._label_logits(model, batch)
        return torch.nn.functional.cross_entropy(logits.float(), batch["labels_idx"])

    def _label_logits(self, model, batch):
        import torch

        inputs = {k: v for k, v in batch.items() if k != "labels_idx"}
        logits = model(**inputs).logits  # [B, T, V]
        mask_pos = (inputs["input_ids"] == self.tokenizer.mask_token_id).float().argmax(dim=1)
        at_mask = logits[torch.arange(logits.size(0), device=logits.device), mask_pos]
        return at_mask[:, torch.tensor(self.label_token_ids, device=logits.device)]

    def fit(self, train: Sequence[AdapterExample], progress: Progress | None = None):
        from . import runtime as rt

        features = []
        for ex in train:
            feat = self.encode(ex)
            feat["labels_idx"] = self.labels.index(gold_label(self.task, ex))
            features.append(feat)
        return rt.fit_features(self, features, progress, loss_fn=self.loss_fn)

    def predict(self, test: Sequence[AdapterExample], progress: Progress | None = None):
        import torch

        from . import runtime as rt

        features = [self.encode(ex) for ex in test]
        preds: list = [None] * len(test)
        with torch.inference_mode():
            for idx, batch in rt.predict_batches(self, features, progress):
                with rt.autocast(self.device, self.config.bf16):
                    logits = self._label_logits(self.model, batch).float()
                best = logits.argmax(dim=-1).tolist()
                for k, j in enumerate(idx):
                    preds[j] = [self.labels[best[k]]]
        return preds


class PromptFTAdapter(Adapter):
    method = "pt"
    defaults = DEFAULTS
    needs = ("model",)  # trains the model: in this process; no default model (a masked LM is named)

    def applies_to(self, task: TaskSpec) -> str | None:
        if task.prompt is not None and task.prompt.applies:
            return None
        if task.prompt is None:
            return f"{task.name} declares no prompt method in the task registry (TaskSpec.prompt)"
        return task.prompt.not_applicable

    def run(
        self,
        task: TaskSpec,
        train: Sequence[AdapterExample],
        test: Sequence[AdapterExample],
        config: AdapterConfig,
        progress: Progress | None = None,
    ) -> AdapterResult:
        from . import runtime as rt

        self.check_applies(task)
        session = PromptSession(task, config, progress)
        result = rt.fit_and_predict(
            session,
            train,
            test,
            config,
            progress,
            {
                "max_length": session.max_length,
                "verbalizer": dict(session.verbalizer),
                "verbalizer_tokens": session.tokenizer.convert_ids_to_tokens(session.label_token_ids),
            },
        )
        result.notes["inputs_truncated"] = session.truncated  # counted while predicting
        return result
