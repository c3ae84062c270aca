"""Answer kinds: what a worker (or a model) gives as the answer to an item, one class per kind.

A kind owns everything that differs between answers of different shapes, so that no caller asks which
kind it holds:

* validating a worker's answer (the API's answer list, with the messages a worker sees) and reading
  the widget's form;
* the widget: its template (``templates/worker/``), its script (``static/js/widgets/<name>.js``, which
  registers the behaviour of ``data-widget="<name>"``), what the template is given, and the feedback
  page's part that shows the answers;
* the CLUES file format: reading a line's gold, and writing an answer as the official files spell it
  (``eval/S1.py`` reads the prediction files);
* the chance level of an item's S1;
* the model side: how a model is asked to answer, how a gold answer is written in a demonstration, how
  a model's reply or generated text is read;
* properties a caller may ask (``allows_empty``, ``max_spans``, ``gold_is_alternatives``, ...).

``KINDS`` holds one object per kind by name (the API's ``kind``); ``TaskSpec.answer_kind`` holds one of
them. A new kind is one class here (or anywhere, registered with ``register_kind``) plus its widget's
template and script. Plain Python (no Django): the model code imports it.
"""

from __future__ import annotations

import abc
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, TypeGuard, TypeVar

from .s1 import item_s1
from .text_spans import distinct, occurrences, snap_to_context, tokenize


class InvalidAnswer(ValueError):
    """An answer that is not one of this kind (a worker's, a model's reply, an expected answer); the message
    says why, in words the person who gave it can act on."""


class GoldFormatError(ValueError):
    """A CLUES line's answer that cannot be read; ``field`` names the line's field."""

    def __init__(self, field_name: str, message: str):
        super().__init__(message)
        self.field, self.message = field_name, message


@dataclass(frozen=True)
class ValidatedAnswer:
    texts: list[str]  # the answer set S1 scores
    spans: list[list[int]] | None  # where it is marked in the text (character offsets, end exclusive)


@dataclass(frozen=True)
class GoldReading:
    """A CLUES line's answer, read: the gold set (MRC: the distinct alternatives), the gold strings the
    context does not contain, and the extra fields the kind keeps on the record."""

    gold: tuple[str, ...]
    not_found: tuple[str, ...] = ()
    extras: dict[str, Any] = field(default_factory=dict)


class TaskSpec(Protocol):
    """What a kind reads of its task (``tasks_data.registry.TaskSpec``; declared here so that the registry,
    which holds kinds, and the kinds import each other in one direction only)."""

    @property
    def name(self) -> str: ...

    @property
    def labels(self) -> tuple[str, ...]: ...

    def label_of(self, text: str) -> str | None: ...


class Item(Protocol):
    """What a kind reads of an item: a stored example (``tasks_data.models.Example``) or a model's
    (``fewshot_models.AdapterExample``). Read-only (properties): a frozen dataclass is one."""

    @property
    def context(self) -> str: ...

    @property
    def hypothesis(self) -> str: ...

    @property
    def question(self) -> str: ...

    @property
    def candidates(self) -> Any: ...  # (start, end) pairs, end exclusive


class TextCutter(Protocol):
    """What the worker pages lend a widget to cut an item's text into pieces (``worker_pages.text``)."""

    def tokens(self, text: str, *, fine: bool) -> list: ...

    def candidates(self, item: Any) -> list: ...

    def marked(self, text: str, mine: list[tuple[int, int]], gold: list[tuple[int, int]]) -> list: ...


# Generated text that means the empty answer (a model's target and demonstrations write "none").
NONE_WORDS = ("none", "no answer", "")
# A chat model's reply that means the empty answer: the words the pages and the prompt use for it.
_REPLY_NONE = {"none", "no answer", "none in this text", "no name", "nothing"}
_REPLY_PREFIX = re.compile(r"^\s*(?:your\s+)?answer\s*:\s*", re.IGNORECASE)
_NAME = re.compile(r"\b[A-Z][\w'-]*")


def candidate_texts(context: str, candidates: Iterable[Sequence[int]]) -> list[str]:
    """The distinct texts of an item's candidate spans, in order."""
    return distinct(context[s:e] for s, e in candidates)


class AnswerKind(abc.ABC):
    """One kind of answer. Subclasses set the class attributes and implement ``validate_given`` and
    ``form_answer``; every other method has a default a new kind may keep."""

    name: ClassVar[str]  # the API's ``kind``; the key in ``KINDS``
    title: ClassVar[str]  # in a sentence ("answers are span or none")

    allows_empty: ClassVar[bool] = False  # "none" / "no answer" is an answer
    max_spans: ClassVar[int | None] = 1  # strings an answer holds at most (None: any number)
    gold_is_alternatives: ClassVar[bool] = False  # gold lists alternative answers, not one set (tasks_data.s1)
    from_labels: ClassVar[bool] = False  # the answer is one of the task's labels
    from_candidates: ClassVar[bool] = False  # the answer is one of the item's candidate spans
    marks_context: ClassVar[bool] = False  # the answer is marked in the item's text (so a gold string must be there)
    alpha_distance: ClassVar[str] = "jaccard"  # Krippendorff's alpha between two answers (results.measures)
    # How answers enter crowd-kit's Dawid-Skene (results.fits): "labels", "tokens" (a BIO label per word of the
    # context from every annotator), or None where it does not fit (an answer that is a span of the item's text).
    crowd_aggregation: ClassVar[str | None] = None

    # The worker pages.
    widget_template: ClassVar[str]
    widget_script: ClassVar[str | None] = None  # under static/; None: the form alone
    feedback_template: ClassVar[str] = "worker/_feedback_text.html"  # the answers part of the feedback
    none_text: ClassVar[str] = "no answer"  # the empty answer, as a worker reads it
    instructions_note: ClassVar[str] = ""  # what counts as the same answer, in the item's instructions
    description_rule: ClassVar[str] = ""  # the same, on the description page
    near_misses: ClassVar[bool] = True  # feedback shows where a wrong answer's characters differ
    # Seconds a careful worker takes to give the answer once the item is read (a click, marking names, finding
    # the answer in a paragraph): with the reading time, a task card's time per item when the card gives none.
    answer_seconds: ClassVar[float] = 8.0

    # The model side.
    none_reply: ClassVar[str] = "no answer"  # how a model writes the empty answer
    chat_rule: ClassVar[str] = ""  # the description_rule as a chat model reads it

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"<answer kind {self.name!r}>"

    @property
    def is_choice(self) -> bool:
        """The answer is picked among ``options`` (labels, candidates), not written or marked."""
        return self.from_labels or self.from_candidates

    # ------------------------------------------------------------ a worker's answer

    def validate(self, spec: TaskSpec, item: Item, answer: Any) -> ValidatedAnswer:
        """The API's answer list -> the answer set S1 scores (``InvalidAnswer`` names the problem)."""
        if not isinstance(answer, list):
            raise InvalidAnswer("answer must be a list")
        if not answer:
            if self.allows_empty:
                return ValidatedAnswer(texts=[], spans=[])
            raise InvalidAnswer(f"{spec.name} needs an answer: the empty answer is not allowed")
        return self.validate_given(spec, item, answer)

    @abc.abstractmethod
    def validate_given(self, spec: TaskSpec, item: Item, answer: list) -> ValidatedAnswer:
        """A non-empty answer list, validated."""

    @abc.abstractmethod
    def form_answer(self, form: Mapping[str, str]) -> list:
        """The API's answer list from the widget's form fields (``InvalidAnswer`` when they cannot be read)."""

    def expected_from_text(self, spec: TaskSpec, context: str, raw: str) -> tuple[list[str], list[list[int]]]:
        """An attention check's expected answer as a researcher types it -> (answer set, candidates shown)."""
        raw = raw.strip()
        if not raw:
            raise InvalidAnswer("write the expected answer")
        return [raw], []

    def simulated_texts(self, spec: TaskSpec, item: Item, gold: Sequence[str], *, right: bool) -> list[str]:
        """The answer set of a simulated worker (benchmarks): the gold, or one S1 counts as wrong."""
        if right:
            return list(gold[:1]) if self.gold_is_alternatives else list(gold)
        others = [o for o in self.options(spec, item) if o not in gold]
        if others:
            return others[:1]
        return [] if self.allows_empty and gold else ["xyz"]

    # ------------------------------------------------------------ the API and the CLUES files

    def item_fields(self, spec: TaskSpec, item: Item) -> dict:
        """What the API shows of an item besides its text and question (the choices, if any)."""
        return {}

    def read_gold(self, spec: TaskSpec, row: Mapping[str, Any], context: str) -> GoldReading:
        """A CLUES line's ``answer`` (a list) -> the gold (``GoldFormatError`` names the field)."""
        answer = row["answer"]
        if not all(isinstance(a, str) for a in answer):
            raise GoldFormatError("answer", "must be a list of strings")
        gold = tuple(dict.fromkeys(a for a in answer if a.strip()))
        return GoldReading(gold=gold, not_found=tuple(a for a in gold if a not in context))

    def as_published(self, texts: Iterable[str]) -> list[str]:
        """An answer set spelled as the CLUES files spell it (prediction files the official eval/S1.py reads)."""
        return list(texts)

    def gold_unproducible(self, gold: Sequence[str], context: str) -> bool:
        """Whether no answer a worker can give scores S1 1 (the data's quirk: the gold is not in the text)."""
        return False

    def chance_item_s1(self, spec: TaskSpec, gold: Sequence[str], candidate_texts: Iterable[str] = ()) -> float:
        """The S1 a worker who learned nothing expects on one item: by default, the empty answer's (the trivial
        predictor) where the kind allows it, else 0."""
        return item_s1([], gold, alternatives=self.gold_is_alternatives) if self.allows_empty else 0.0

    # ------------------------------------------------------------ the worker pages

    def widget_context(
        self, spec: TaskSpec, item: Item, pieces: TextCutter, *, revising: Sequence[str] | None = None
    ) -> dict:
        """What the widget's template needs besides the item (``revising``: the answer being changed)."""
        return {}

    def feedback_context(
        self,
        spec: TaskSpec,
        item: Item,
        pieces: TextCutter,
        *,
        mine_texts: list[str],
        gold_texts: list[str],
        mine_spans: Sequence[Sequence[int]] | None,
    ) -> dict:
        """What ``feedback_template`` needs besides the item and both answers."""
        return {}

    def gold_offsets(self, item: Any) -> list[tuple[int, int]]:
        """Where the gold strings are in the context, for the feedback (the gold has no offsets)."""
        return []

    # ------------------------------------------------------------ models

    def options(self, spec: TaskSpec, item: Item) -> list[str]:
        """The answers a model chooses among (empty: the answer is written, not chosen)."""
        return []

    def choose(self, spec: TaskSpec, options: Sequence[str], text: str) -> str | None:
        """A generated choice read as a worker's click: the option (exact, else the one case-insensitive
        match), or None."""
        text = text.strip().strip(".\"'").strip()
        if text in options:
            return text
        folded = [o for o in options if o.lower() == text.lower()]
        return folded[0] if len(folded) == 1 else None

    def reply_instruction(self, spec: TaskSpec) -> str:
        """How a chat model is told to type its answer."""
        return f'Reply with the answer and nothing else; reply "{self.none_reply}" if there is none.'

    def chat_item_text(self, spec: TaskSpec, item: Item) -> str:
        """An item as a chat model reads it: the text, the question."""
        text = f"Text: {item.context}\n"
        if item.hypothesis:
            text += f"Hypothesis: {item.hypothesis}\n"
        return text + f"Question: {item.question}"

    def demonstration_answer(self, spec: TaskSpec, answers: Sequence[str], context: str) -> str:
        """A gold answer as one text: a demonstration's answer, a sequence-to-sequence target."""
        texts = distinct(a.strip() for a in answers)
        return texts[0] if texts else "none"

    def split_generated(self, text: str) -> list[str]:
        """Generated answer text -> its answer strings; "none" (any case) or nothing = the empty set."""
        text = text.strip()
        if text.lower().strip(" .") in NONE_WORDS:
            return []
        return [text]

    def read_generated(self, spec: TaskSpec, text: str, context: str) -> list[str]:
        """A sequence-to-sequence model's output -> its answer set, each string snapped to the context's own
        spelling where it occurs there."""
        out: list[str] = []
        for span in self.split_generated(text):
            exact = snap_to_context(span, context)
            value = exact if exact is not None else span
            if value not in out:
                out.append(value)
        return out

    def read_reply(self, spec: TaskSpec, item: Item, reply: str) -> list[str]:
        """A chat model's reply read by the rules a worker's answer is validated by (``InvalidAnswer`` says
        why it reads as no valid answer)."""
        text = _REPLY_PREFIX.sub("", reply.strip()).strip()
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        if not lines:
            raise InvalidAnswer(f"{spec.name} needs an answer: the empty answer is not allowed.")
        return self.read_reply_text(spec, item, text, lines)

    def read_reply_text(self, spec: TaskSpec, item: Item, text: str, lines: list[str]) -> list[str]:
        """The reply without its "Answer:" prefix, whole and as lines: a choice among ``options``, or else its
        first line as the answer."""
        if not self.is_choice:
            if lines[0].lower().strip(" .") in _REPLY_NONE:
                return []
            return [lines[0]]
        options = self.options(spec, item)
        for candidate in (text, lines[0]):
            choice = self.choose(spec, options, candidate)
            if choice is not None:
                return [choice]
        raise InvalidAnswer(f"{text[:80]!r} is not one of {', '.join(options)}.")


# ---------------------------------------------------------------- the four kinds of the CLUES tasks


class LabelKind(AnswerKind):
    """One label from the task's label set (SST-2, MNLI)."""

    name = "label"
    title = "label"
    from_labels = True
    alpha_distance = "nominal"
    crowd_aggregation = "labels"
    near_misses = False  # a wrong label is another label, not a misspelling
    answer_seconds = 5.0

    widget_template = "worker/_widget_label.html"
    widget_script = "js/widgets/label.js"
    feedback_template = "worker/_feedback_label.html"

    def validate_given(self, spec: TaskSpec, item: Item, answer: list) -> ValidatedAnswer:
        if len(answer) != 1 or not isinstance(answer[0], str):
            raise InvalidAnswer(f'answer must be one label, e.g. ["{spec.labels[0]}"]')
        if answer[0] not in spec.labels:
            raise InvalidAnswer(f"{answer[0]!r} is not a label of {spec.name} ({', '.join(spec.labels)})")
        return ValidatedAnswer(texts=[answer[0]], spans=None)

    def form_answer(self, form: Mapping[str, str]) -> list:
        label = form.get("label", "")
        return [label] if label else []

    def expected_from_text(self, spec: TaskSpec, context: str, raw: str) -> tuple[list[str], list[list[int]]]:
        raw = raw.strip()
        if raw not in spec.labels:
            raise InvalidAnswer(f"choose one of the task's labels: {', '.join(spec.labels)}")
        return [raw], []

    def item_fields(self, spec: TaskSpec, item: Item) -> dict:
        return {"labels": list(spec.labels)}

    def read_gold(self, spec: TaskSpec, row: Mapping[str, Any], context: str) -> GoldReading:
        answer = row["answer"]
        if len(answer) != 1 or not isinstance(answer[0], str):
            raise GoldFormatError("answer", f"must be a list of one label, got {answer!r}")
        if answer[0] not in spec.labels:
            raise GoldFormatError("answer", f"{answer[0]!r} is not a label of {spec.name} ({', '.join(spec.labels)})")
        return GoldReading(gold=(answer[0],))

    def chance_item_s1(self, spec: TaskSpec, gold: Sequence[str], candidate_texts: Iterable[str] = ()) -> float:
        """A uniform guess among the labels."""
        return 1 / len(spec.labels) if spec.labels else 0.0

    def widget_context(
        self, spec: TaskSpec, item: Item, pieces: TextCutter, *, revising: Sequence[str] | None = None
    ) -> dict:
        return {
            "labels": [{"key": i + 1, "value": label} for i, label in enumerate(spec.labels)],
            "initial_label": revising[0] if revising else "",
        }

    def feedback_context(
        self,
        spec: TaskSpec,
        item: Item,
        pieces: TextCutter,
        *,
        mine_texts: list[str],
        gold_texts: list[str],
        mine_spans: Sequence[Sequence[int]] | None,
    ) -> dict:
        labels = [
            {"key": i + 1, "value": label, "mine": label in mine_texts, "gold": label in gold_texts}
            for i, label in enumerate(spec.labels)
        ]
        return {"labels": labels}

    def options(self, spec: TaskSpec, item: Item) -> list[str]:
        return list(spec.labels)

    def choose(self, spec: TaskSpec, options: Sequence[str], text: str) -> str | None:
        """A label of the task, case and aliases (MNLI's "contraction") forgiven."""
        return spec.label_of(text)

    def read_reply_text(self, spec: TaskSpec, item: Item, text: str, lines: list[str]) -> list[str]:
        try:
            return AnswerKind.read_reply_text(self, spec, item, text, lines)
        except InvalidAnswer:
            raise InvalidAnswer(f"{text[:80]!r} is not a label of {spec.name} ({', '.join(spec.labels)}).") from None

    def reply_instruction(self, spec: TaskSpec) -> str:
        return f"Reply with one of these answers and nothing else: {', '.join(spec.labels)}."

    @staticmethod
    def gold_label(spec: TaskSpec, answers: Sequence[str]) -> str:
        """The one gold label of an example (aliases mapped); ``InvalidAnswer`` when there is not exactly one."""
        given = [a for a in answers if a.strip()]
        if len(given) != 1:
            raise InvalidAnswer(f"needs exactly one label, has {list(answers)!r}")
        label = spec.label_of(given[0])
        if label is None:
            raise InvalidAnswer(f"{given[0]!r} is not one of the labels {spec.labels}")
        return label

    def demonstration_answer(self, spec: TaskSpec, answers: Sequence[str], context: str) -> str:
        return self.gold_label(spec, answers)

    def read_generated(self, spec: TaskSpec, text: str, context: str) -> list[str]:
        text = text.strip()
        if not text:
            return []
        return [spec.label_of(text) or text]


class _MarkedSpans(AnswerKind):
    """Answers marked in the item's text: the API gives character offsets into the context."""

    marks_context = True
    none_button: ClassVar[str] = "\u201cno answer\u201d"  # the widget's button for the empty answer
    fine_tokens: ClassVar[bool] = False  # the widget marks words and single punctuation marks, not whole words
    feedback_template = "worker/_feedback_marks.html"

    def validate_given(self, spec: TaskSpec, item: Item, answer: list) -> ValidatedAnswer:
        spans = [_span(given, i, item.context) for i, given in enumerate(answer)]
        if self.max_spans is not None and len(spans) > self.max_spans:
            raise InvalidAnswer(f"{spec.name} takes at most {self.max_spans} span, got {len(spans)}")
        ordered = sorted(spans)
        for (s1, e1), (s2, e2) in zip(ordered, ordered[1:], strict=False):
            if (s1, e1) == (s2, e2):
                raise InvalidAnswer(f"the span {s1}..{e1} is given twice")
            if s2 < e1:
                raise InvalidAnswer(f"the spans {s1}..{e1} and {s2}..{e2} overlap")
        self.check_spans(item, spans)
        texts = list(dict.fromkeys(item.context[s:e] for s, e in ordered))
        return ValidatedAnswer(texts=texts, spans=[list(s) for s in ordered])

    def check_spans(self, item: Item, spans: list[tuple[int, int]]) -> None:
        """A further rule on well-formed spans (``InvalidAnswer``)."""

    def form_answer(self, form: Mapping[str, str]) -> list:
        if form.get("none") == "1":
            return []
        try:
            spans = json.loads(form.get("spans") or "[]")
        except (ValueError, RecursionError):  # RecursionError: nesting deep enough to exhaust the decoder
            raise InvalidAnswer("the marked spans could not be read; please mark them again") from None
        if not isinstance(spans, list) or not all(isinstance(s, list) and len(s) == 2 for s in spans):
            raise InvalidAnswer("the marked spans could not be read; please mark them again")
        if not spans:
            raise InvalidAnswer(
                f"nothing is marked: mark the answer in the text, or choose the {self.none_button} button"
            )
        return [{"start": s, "end": e} for s, e in spans]

    def expected_from_text(self, spec: TaskSpec, context: str, raw: str) -> tuple[list[str], list[list[int]]]:
        """``|`` separates answers; each must be text of the context."""
        raw = raw.strip()
        parts = [p.strip() for p in raw.split("|") if p.strip()] if raw else []
        missing = [p for p in parts if p not in context]
        if missing:
            raise InvalidAnswer(f"not in the text: {', '.join(repr(p) for p in missing)}")
        self.check_markable(parts, context)
        if self.max_spans is not None and len(parts) > self.max_spans:
            raise InvalidAnswer(
                "this task takes one answer (or none)"
                if self.max_spans == 1
                else f"this task takes at most {self.max_spans} answers"
            )
        return parts, self.expected_candidates(parts, context)

    def check_markable(self, parts: list[str], context: str) -> None:
        """``InvalidAnswer`` when the widget could not mark one of the expected answers."""

    def expected_candidates(self, parts: list[str], context: str) -> list[list[int]]:
        return []

    def gold_unproducible(self, gold: Sequence[str], context: str) -> bool:
        """Spans: some gold string is not in the context; alternatives: none of them is."""
        if not gold:
            return False
        missing = [g for g in gold if g not in context]
        return len(missing) == len(gold) if self.gold_is_alternatives else bool(missing)

    def widget_context(
        self, spec: TaskSpec, item: Item, pieces: TextCutter, *, revising: Sequence[str] | None = None
    ) -> dict:
        return {
            "pieces": pieces.tokens(item.context, fine=self.fine_tokens),
            "max_spans": 1 if self.max_spans == 1 else 0,  # the widget's data-max: 0 = any number
        }

    def feedback_context(
        self,
        spec: TaskSpec,
        item: Item,
        pieces: TextCutter,
        *,
        mine_texts: list[str],
        gold_texts: list[str],
        mine_spans: Sequence[Sequence[int]] | None,
    ) -> dict:
        mine = [(int(s), int(e)) for s, e in (mine_spans or [])]
        return {"pieces": pieces.marked(item.context, mine, self.gold_offsets(item))}

    def gold_offsets(self, item: Any) -> list[tuple[int, int]]:
        """Every occurrence of each gold string, on the widget's token edges where it occurs there."""
        gold = [g for g in item.gold if g and g.strip()]
        tokens = tokenize(item.context, fine=self.fine_tokens)
        boundaries = {s for s, _ in tokens} | {e for _, e in tokens}
        spans: set[tuple[int, int]] = set()
        for g in gold:
            spans.update(occurrences(item.context, g, boundaries))
        return sorted(spans)

    def read_reply_text(self, spec: TaskSpec, item: Item, text: str, lines: list[str]) -> list[str]:
        """Spans of the context (a worker can mark nothing else), separated by "|", at most as many as the
        task takes; each snapped to the context's own spelling."""
        if text.lower().strip(" .") in _REPLY_NONE:
            return []
        spans: list[str] = []
        for part in (p.strip() for line in lines for p in line.split("|")):
            if not part or part.lower().strip(" .") in _REPLY_NONE:
                continue
            exact = snap_to_context(part, item.context)
            if exact is None:
                raise InvalidAnswer(
                    f"{part[:80]!r} is not text of the passage: copy the words exactly as they are written."
                )
            if exact not in spans:
                spans.append(exact)
        if self.max_spans is not None and len(spans) > self.max_spans:
            raise InvalidAnswer(f"{spec.name} takes at most {self.max_spans} span, got {len(spans)}.")
        return spans


_EXACT_SPANS_NOTE = (
    "Answers are matched exactly: mark exactly the words of the answer, no more and no fewer. A word or a "
    "punctuation mark too many or too few (for example a final \u201c.\u201d) makes the answer wrong."
)
_EXACT_SPANS_RULE = (
    "Answers are matched exactly: mark exactly the words of the answer, no more and no fewer (a word or a "
    "final \u201c.\u201d too many counts as wrong)."
)
_EXACT_SPANS_CHAT = (
    "Answers are matched exactly: give exactly the words of the answer, no more and no fewer "
    '(a word or a final "." too many counts as wrong).'
)


class SpansKind(_MarkedSpans):
    """A set of context spans, possibly empty (NER: every name of one kind)."""

    crowd_aggregation = "tokens"

    name = "spans"
    title = "spans"
    allows_empty = True
    max_spans = None
    none_button = "\u201cnone\u201d"
    answer_seconds = 9.0  # marking each name of one kind

    widget_template = "worker/_widget_spans.html"
    widget_script = "js/widgets/spans.js"
    none_text = "none in this text"
    instructions_note = _EXACT_SPANS_NOTE
    description_rule = _EXACT_SPANS_RULE
    none_reply = "none"
    chat_rule = _EXACT_SPANS_CHAT

    def check_markable(self, parts: list[str], context: str) -> None:
        # The widget marks whole whitespace-separated words (tasks_data.text_spans.tokenize): "river." is one
        # word, so "river" could not be marked there.
        unmarkable = [p for p in parts if not re.search(rf"(?<!\S){re.escape(p)}(?!\S)", context)]
        if unmarkable:
            raise InvalidAnswer(
                "the worker marks whole words between spaces: "
                f"{', '.join(repr(p) for p in unmarkable)} is part of a word "
                "(write the text with a space around it)"
            )

    def read_gold(self, spec: TaskSpec, row: Mapping[str, Any], context: str) -> GoldReading:
        answer = row["answer"]
        if not all(isinstance(a, str) for a in answer):
            raise GoldFormatError("answer", "must be a list of strings")
        if answer == [""] or answer == []:
            return GoldReading(gold=())  # CLUES writes the empty set as [""]
        if any(not a.strip() for a in answer):
            raise GoldFormatError("answer", 'an empty string is only allowed alone, as [""] (the empty set)')
        gold = tuple(dict.fromkeys(answer))
        return GoldReading(gold=gold, not_found=tuple(a for a in gold if a not in context))

    def as_published(self, texts: Iterable[str]) -> list[str]:
        """The NER empty set is ``[""]`` in the CLUES files."""
        texts = list(texts)
        return texts if texts else [""]

    def reply_instruction(self, spec: TaskSpec) -> str:
        return (
            'Reply with every name of the kind asked, copied exactly from the text, separated by " | "; '
            'reply "none" if the text contains no name of that kind. Nothing else.'
        )

    def demonstration_answer(self, spec: TaskSpec, answers: Sequence[str], context: str) -> str:
        """The names in order of first appearance in the context (as the CLUES reference
        ``prepro_clues_gen.py`` orders them), joined by ", "."""
        texts = distinct(a.strip() for a in answers)
        if not texts:
            return "none"

        def position(text: str) -> int:
            i = context.find(text)
            return i if i >= 0 else len(context)

        return ", ".join(sorted(texts, key=position))

    def split_generated(self, text: str) -> list[str]:
        """Comma-separated (", " is what targets and demonstrations use)."""
        text = text.strip()
        if text.lower().strip(" .") in NONE_WORDS:
            return []
        parts = [p.strip() for p in text.split(",")]
        return distinct(p for p in parts if p.lower() not in NONE_WORDS)


def _read_mrc_gold(row: Mapping[str, Any], context: str) -> GoldReading:
    """MRC answers: ``[{"text", "answer_start"}, ...]`` with ``is_impossible``; the alternatives made distinct."""
    impossible = row.get("is_impossible")
    if not isinstance(impossible, bool):
        raise GoldFormatError("is_impossible", "must be true or false")
    texts: list[str] = []
    starts: dict[str, int] = {}
    for i, given in enumerate(row["answer"]):
        if (
            not isinstance(given, dict)
            or not isinstance(given.get("text"), str)
            or not given["text"].strip()
            or isinstance(given.get("answer_start"), bool)
            or not isinstance(given.get("answer_start"), int)
        ):
            raise GoldFormatError("answer", f'item {i} must be {{"text": non-empty string, "answer_start": integer}}')
        texts.append(given["text"])
        starts.setdefault(given["text"], given["answer_start"])
    if impossible and texts:
        raise GoldFormatError("answer", "is_impossible is true but answers are given")
    if not impossible and not texts:
        raise GoldFormatError("answer", "is_impossible is false but no answer is given")
    gold = tuple(dict.fromkeys(texts))
    return GoldReading(
        gold=gold,
        not_found=tuple(a for a in gold if a not in context),
        extras={"is_impossible": impossible, "answer_starts": tuple(starts[t] for t in gold)},
    )


class SpanOrNoneKind(_MarkedSpans):
    """At most one context span, or none (SQuADv2); the gold lists alternative answers."""

    name = "span_or_none"
    title = "span or none"
    allows_empty = True
    gold_is_alternatives = True
    fine_tokens = True
    answer_seconds = 12.0  # finding the answer in the paragraph, then marking it

    widget_template = "worker/_widget_spans.html"
    widget_script = "js/widgets/spans.js"
    instructions_note = _EXACT_SPANS_NOTE
    description_rule = _EXACT_SPANS_RULE
    chat_rule = _EXACT_SPANS_CHAT

    def read_gold(self, spec: TaskSpec, row: Mapping[str, Any], context: str) -> GoldReading:
        return _read_mrc_gold(row, context)

    def reply_instruction(self, spec: TaskSpec) -> str:
        return (
            "Reply with the answer copied exactly from the text (only the words of the answer), or "
            '"no answer" if the text does not contain it. Nothing else.'
        )


# ---------------------------------------------------------------- a ReCoRD-like text's names

_WORD = re.compile(r"[^\W_][\w'’&.]*")
# Capitalised at the start of a sentence or as a title, never a name: a real item's candidates never include them.
_NOT_NAMES = frozenset(
    """
    a an the this that these those some any each every all both either neither no other another such
    i i'm i've i'd i'll me my mine we us our you your he him his she her it its they them their there here
    and or but nor so yet for if then than when while where whereas after before since until because though
    although as at by from in into of on onto off out over to up with within without about above across against
    along among around behind below beneath beside between beyond down during except inside like near per through
    toward towards under unlike upon via according
    is are was were be been being am do does did have has had will would shall should can could may might must
    not also however meanwhile now today yesterday tomorrow tonight still just only even yes oh ok okay
    what which who whom whose why how
    please read choose mark select click answer follow pick type write note find tick press
    ignore attention check warning important remember instruction instructions question test task
    one two three four five six seven eight nine ten first second third
    monday tuesday wednesday thursday friday saturday sunday
    january february march april may june july august september october november december
    mr mrs ms dr sir
    """.split()
)
_SENTENCE_START = re.compile(r"(?:^|[.!?:;\n]\s*|@highlight\s*)$")


def entity_candidates(context: str) -> list[tuple[int, int]]:
    """The candidates a ReCoRD-like item offers in ``context``: its names, a run of capitalised words being one
    ("Barack Obama", "White House" out of "The White House"), a possessive left out, never a capitalised function
    word, instruction word, weekday or month. A single word opening a sentence is capitalised whatever it is: it is
    one only if the text writes it capitalised elsewhere too (mid-sentence, or opening another sentence) and never in
    lower case: "Ignore the text" or "Attention:" opening a check's sentence is no name.

    Real items take their candidates from the data; measured on the official ReCoRD test set this finds 85% of
    them, and 82% of what it finds is one (tests/annotation/test_attention_disguise.py). An attention check offers them
    (``EntityKind.expected_candidates``)."""
    lower: set[str] = set()
    capitalised: dict[str, int] = {}
    mid_sentence: set[str] = set()
    runs: list[list[int]] = []
    run: list[int] | None = None
    for match in _WORD.finditer(context):
        (start, end), text = match.span(), match.group()
        while text and (text[-1] in "'’" or (text.endswith(".") and text.count(".") == 1)):
            text, end = text[:-1], end - 1
        if text.endswith(("'s", "’s")):
            text, end = text[:-2], end - 2
        if text and text[0].islower():
            lower.add(text.lower())
        elif text:
            capitalised[text] = capitalised.get(text, 0) + 1
            if not _opens_sentence(context, start):
                mid_sentence.add(text)
        if not text or not text[0].isupper() or text.lower() in _NOT_NAMES:
            run = None
        elif run is not None and context[run[1] : start] == " ":
            run[1] = end
        else:
            run = [start, end]
            runs.append(run)

    def is_name(s: int, e: int) -> bool:
        text = context[s:e]
        if " " in text or not _opens_sentence(context, s):
            return True
        return text.lower() not in lower and (text in mid_sentence or capitalised.get(text, 0) > 1)

    return [(s, e) for s, e in runs if is_name(s, e)]


def _opens_sentence(context: str, start: int) -> bool:
    return bool(_SENTENCE_START.search(context[max(0, start - 12) : start]))


class EntityKind(_MarkedSpans):
    """One of the item's candidate entities (ReCoRD); the gold lists alternative answers."""

    name = "entity"
    title = "entity"
    gold_is_alternatives = True
    from_candidates = True
    answer_seconds = 13.0  # weighing the names against the blank

    widget_template = "worker/_widget_entity.html"
    widget_script = "js/widgets/entity.js"
    feedback_template = "worker/_feedback_entity.html"
    instructions_note = "Only the exact name counts: pick the name itself, as it is highlighted in the article."

    def check_spans(self, item: Item, spans: list[tuple[int, int]]) -> None:
        candidates = {tuple(c) for c in item.candidates}
        if spans[0] not in candidates:
            raise InvalidAnswer(f"the span {spans[0][0]}..{spans[0][1]} is not one of the candidate entities")

    def expected_candidates(self, parts: list[str], context: str) -> list[list[int]]:
        """The choices an attention check shows, as a real item of the task offers them: the text's names
        (``entity_candidates``) and the expected answer, offered all the same when it is not a name as the text
        has it."""
        if not parts:
            raise InvalidAnswer("this task needs the entity to choose")
        spans = set(entity_candidates(context))
        if not any(context[s:e] == parts[0] for s, e in spans):
            start = context.index(parts[0])
            expected = (start, start + len(parts[0]))
            spans = {(s, e) for s, e in spans if e <= expected[0] or s >= expected[1]} | {expected}
        return [list(s) for s in sorted(spans)]

    def item_fields(self, spec: TaskSpec, item: Item) -> dict:
        return {"candidates": [{"start": s, "end": e, "text": item.context[s:e]} for s, e in item.candidates]}

    def read_gold(self, spec: TaskSpec, row: Mapping[str, Any], context: str) -> GoldReading:
        """MRC answers, plus the candidate entities (CLUES ends are inclusive; stored end-exclusive)."""
        reading = _read_mrc_gold(row, context)
        entities = row.get("entities")
        if not isinstance(entities, list) or not entities:
            raise GoldFormatError("entities", 'must be a non-empty list of {"start", "end"}')
        spans: list[tuple[int, int]] = []
        for i, ent in enumerate(entities):
            if not isinstance(ent, dict) or any(
                isinstance(ent.get(k), bool) or not isinstance(ent.get(k), int) for k in ("start", "end")
            ):
                raise GoldFormatError("entities", f'item {i} must be {{"start": int, "end": int}}')
            start, end = ent["start"], ent["end"] + 1
            if not 0 <= start < end <= len(context):
                raise GoldFormatError("entities", f"item {i} ({ent['start']}..{ent['end']}) lies outside the context")
            spans.append((start, end))
        candidates = tuple(dict.fromkeys(spans))
        texts_of_candidates = {context[s:e] for s, e in candidates}
        for text in reading.gold:
            if text not in texts_of_candidates:
                raise GoldFormatError("answer", f"{text!r} is not one of the candidate entities")
        return GoldReading(reading.gold, reading.not_found, {**reading.extras, "candidates": candidates})

    def chance_item_s1(self, spec: TaskSpec, gold: Sequence[str], candidate_texts: Iterable[str] = ()) -> float:
        """A uniform pick among the item's candidate entities."""
        texts = list(candidate_texts)
        if not texts:
            return 0.0
        return sum(item_s1([t], gold, alternatives=self.gold_is_alternatives) for t in texts) / len(texts)

    def widget_context(
        self, spec: TaskSpec, item: Item, pieces: TextCutter, *, revising: Sequence[str] | None = None
    ) -> dict:
        return {"pieces": pieces.candidates(item)}

    def feedback_context(
        self,
        spec: TaskSpec,
        item: Item,
        pieces: TextCutter,
        *,
        mine_texts: list[str],
        gold_texts: list[str],
        mine_spans: Sequence[Sequence[int]] | None,
    ) -> dict:
        ctx = super().feedback_context(
            spec, item, pieces, mine_texts=mine_texts, gold_texts=gold_texts, mine_spans=mine_spans
        )
        ctx.update(mine_fill=mine_texts[0] if mine_texts else "", gold_fill=" / ".join(gold_texts))
        return ctx

    def gold_offsets(self, item: Any) -> list[tuple[int, int]]:
        """The candidates whose text is a gold answer."""
        gold = [g for g in item.gold if g and g.strip()]
        return sorted((int(s), int(e)) for s, e in item.candidates if item.context[s:e] in gold)

    def options(self, spec: TaskSpec, item: Item) -> list[str]:
        return candidate_texts(item.context, item.candidates)

    def read_reply_text(self, spec: TaskSpec, item: Item, text: str, lines: list[str]) -> list[str]:
        try:
            return AnswerKind.read_reply_text(self, spec, item, text, lines)
        except InvalidAnswer:
            raise InvalidAnswer(f"{text[:80]!r} is not one of the names in the list.") from None

    def reply_instruction(self, spec: TaskSpec) -> str:
        return (
            "Reply with the name that fills the blank (@placeholder), copied exactly from the list of names. "
            "Nothing else."
        )

    def chat_item_text(self, spec: TaskSpec, item: Item) -> str:
        names = candidate_texts(item.context, item.candidates)
        return f"Passage: {item.context}\nQuery: {item.question}\nNames: {' ; '.join(names)}"


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _span(given: Any, index: int, context: str) -> tuple[int, int]:
    if not isinstance(given, dict):
        raise InvalidAnswer(f'answer[{index}] must be an object {{"start": int, "end": int}}')
    unknown = set(given) - {"start", "end", "text"}
    if unknown:
        raise InvalidAnswer(f"answer[{index}] has unknown field(s): {', '.join(sorted(unknown))}")
    start, end = given.get("start"), given.get("end")
    if not _is_int(start) or not _is_int(end):
        raise InvalidAnswer(f"answer[{index}]: start and end must be integers")
    if not 0 <= start < end <= len(context):
        raise InvalidAnswer(
            f"answer[{index}]: offsets {start}..{end} are outside the context "
            f"(0..{len(context)}, end exclusive, start < end)"
        )
    text = context[start:end]
    if "text" in given and given["text"] != text:
        raise InvalidAnswer(
            f"answer[{index}]: text {given['text']!r} does not match the context at {start}..{end} ({text!r})"
        )
    if text != text.strip():
        raise InvalidAnswer(f"answer[{index}]: the span {text!r} starts or ends with whitespace")
    return start, end


# ---------------------------------------------------------------- the registry of kinds


class UnknownKind(KeyError):
    pass


KINDS: dict[str, AnswerKind] = {}

K = TypeVar("K", bound=type[AnswerKind])


def register_kind(cls: K) -> K:
    """Add a kind to ``KINDS`` under its ``name`` (usable as a class decorator); a name is taken once."""
    kind = cls()
    if kind.name in KINDS and type(KINDS[kind.name]) is not cls:
        raise ValueError(f"the answer kind name {kind.name!r} is taken by {type(KINDS[kind.name]).__name__}")
    KINDS[kind.name] = kind
    return cls


def unregister_kind(name: str) -> None:
    KINDS.pop(name, None)


def get_kind(name: str) -> AnswerKind:
    try:
        return KINDS[name]
    except KeyError:
        raise UnknownKind(f"unknown answer kind {name!r}; known kinds: {', '.join(KINDS)}") from None


for _cls in (LabelKind, SpansKind, SpanOrNoneKind, EntityKind):
    register_kind(_cls)
