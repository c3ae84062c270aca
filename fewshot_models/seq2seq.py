"""``s2s``: sequence-to-sequence fine-tuning, T5 style (the paper's T5 rows; CLUES reference
``classic_finetuning/prepro_clues_gen.py``), for every task.

Source: ``tokenizer(context, question)``, which for T5 reads ``context </s> question </s>``
(the reference used pad_on_right=False: context first). MNLI's context is
``premise </s> hypothesis`` (the model's EOS/SEP token between them). Sources longer than
``max_length`` lose the end of the context, never the question.

Target: the label; the first alternative answer of an MRC item; the entities of an NER
question in order of first appearance joined by ", " (as the reference orders them);
"none" for the empty set. Targets may be up to ``max_target_length`` = 32 tokens: the
reference's TGT_MAX_SEQ_LEN = 4 truncated most answers (an entity list or a SQuAD answer
rarely fits in 4 sentencepieces), which alone caps its MRC and NER scores.

Decoding: greedy (``num_beams=1``), up to ``max_target_length`` new tokens, parsed back into a
set: "none" -> empty; NER split on ", " (commas); a label answer mapped to its label (case and
MNLI's "contraction" alias forgiven). Span answers are mapped to their exact substring of the
context when one exists (``base.snap_to_context``: detokenisation can change spacing or case);
otherwise the generated text is kept as is.

Hyperparameters: lr 1e-4 with AdamW — the transformers T5 documentation's advice for
fine-tuning T5 with AdamW ("typically 1e-4 and 3e-4 work well for most problems"); the other
values follow the CLUES reference script used for its T5 runs too (run_clues_finetune.sh:
3 epochs, batch 16; mt-dnn: linear warm-up 10 %, grad clipping 1.0, no weight decay). The
reference's own LR was 5e-5 with Adamax (``lr=5e-5, optimizer="adamax"`` in ``extra``/fields
reproduces it).
"""

from __future__ import annotations

from collections.abc import Sequence

from tasks_data.registry import TaskSpec

from .backends import open_model_backend
from .base import (
    Adapter,
    AdapterConfig,
    AdapterError,
    AdapterExample,
    AdapterResult,
    Progress,
    render_answer,
)

DEFAULTS = {
    "lr": 1e-4,  # transformers T5 docs (AdamW: 1e-4 .. 3e-4)
    "epochs": 3,  # CLUES run_clues_finetune.sh EPOCH
    "max_steps": None,
    "batch_size": 16,  # CLUES run_clues_finetune.sh BS
    "eval_batch_size": 32,
    "warmup_ratio": 0.1,  # mt-dnn --warmup 0.1
    "weight_decay": 0.0,  # mt-dnn --weight_decay 0
    "max_grad_norm": 1.0,  # mt-dnn --global_grad_clipping 1.0
    "max_length": 512,  # T5's trained input length
    "max_target_length": 32,  # >= 32 (reference: 4, which truncates answers)
    "optimizer": "adamw",
}


class S2SSession:
    def __init__(self, task: TaskSpec, config: AdapterConfig, progress: Progress | None = None):
        from . import runtime as rt

        self.task, self.config = task, config
        self.hp = config.resolve(DEFAULTS, "s2s")
        if int(self.hp["max_target_length"]) < 1:
            raise AdapterError("s2s: max_target_length must be positive")
        self.backend = open_model_backend(config, method="s2s", what="seq2seq (T5-style) checkpoint", progress=progress)
        self.device, self.model_path, self.tokenizer = (
            self.backend.torch_device,
            self.backend.model_path,
            self.backend.tokenizer,
        )
        from transformers import AutoModelForSeq2SeqLM

        self.model = self.backend.load_model(AutoModelForSeq2SeqLM)
        self.model.to(self.device)
        self.pad_id = rt.pad_token_id(self.tokenizer)
        self.max_length = int(self.hp["max_length"])
        self.target_truncated = 0
        if progress:
            progress("load", 1, 1)

    def source(self, ex: AdapterExample) -> dict:
        tok = self.tokenizer
        context = ex.context
        if ex.hypothesis:
            sep = tok.eos_token or tok.sep_token or ""
            context = f"{ex.context} {sep} {ex.hypothesis}" if sep else f"{ex.context} {ex.hypothesis}"
        enc = tok(context, ex.question, truncation="only_first", max_length=self.max_length)
        return {"input_ids": list(enc["input_ids"]), "attention_mask": list(enc["attention_mask"])}

    def target_ids(self, ex: AdapterExample) -> list[int]:
        text = render_answer(self.task, ex)
        full = self.tokenizer(text_target=text)["input_ids"]
        limit = int(self.hp["max_target_length"])
        if len(full) > limit:
            self.target_truncated += 1
            eos = self.tokenizer.eos_token_id
            full = full[: limit - 1] + ([eos] if eos is not None else [full[limit - 1]])
        return list(full)

    def fit(self, train: Sequence[AdapterExample], progress: Progress | None = None):
        from . import runtime as rt

        features = []
        for ex in train:
            feat = self.source(ex)
            feat["labels"] = self.target_ids(ex)
            features.append(feat)
        return rt.fit_features(self, features, progress)

    def predict(self, test: Sequence[AdapterExample], progress: Progress | None = None):
        import torch
        from transformers import GenerationConfig

        from . import runtime as rt

        tok = self.tokenizer
        features = [self.source(ex) for ex in test]
        start_id = self.model.config.decoder_start_token_id
        gen = GenerationConfig(
            max_new_tokens=int(self.hp["max_target_length"]),
            do_sample=False,
            num_beams=1,
            decoder_start_token_id=start_id if start_id is not None else self.pad_id,
            eos_token_id=tok.eos_token_id,
            pad_token_id=self.pad_id,
        )
        texts: list = [None] * len(test)
        with torch.inference_mode():
            for idx, batch in rt.predict_batches(self, features, progress):
                with rt.autocast(self.device, self.config.bf16):
                    out = self.model.generate(**batch, generation_config=gen)
                decoded = tok.batch_decode(out, skip_special_tokens=True, clean_up_tokenization_spaces=False)
                for k, j in enumerate(idx):
                    texts[j] = decoded[k]
        self.generated = texts  # the raw generations, kept in the run's notes
        return [self.parse(ex, text) for ex, text in zip(test, texts, strict=True)]

    def parse(self, ex: AdapterExample, text: str) -> list[str]:
        """The generated text as the answer kind reads it (a label; spans snapped to the context)."""
        return self.task.answer_kind.read_generated(self.task, text, ex.context)


class Seq2SeqAdapter(Adapter):
    method = "s2s"
    defaults = DEFAULTS  # applies to every task (Adapter.applies_to)
    needs = ("model",)  # trains the model: in this process; no default model (a T5 is named)

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
        session = S2SSession(task, config, progress)
        result = rt.fit_and_predict(session, train, test, config, progress, {})
        result.notes.update(targets_truncated=session.target_truncated, generated=session.generated)
        return result
