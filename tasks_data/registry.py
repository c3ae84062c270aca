"""The task registry: every task the platform knows, in one place.

``tasks()`` lists every task and ``get_task(slug)`` gives one; nothing else in the codebase lists tasks.
The six tasks of the CLUES benchmark are written here (``CLUES_TASKS``, the paper's); any other task is
data, a task card read with its files (``tasks_data.cards``), fed to the registry by whoever holds it:
the Django side's imported tasks through ``set_task_source``, a script on a GPU box with
``register_task``. This module is plain Python (no Django import) so that the model adapters in
``fewshot_models`` can use it on a GPU box. What differs between answers of different shapes lives on the
task's answer kind (``tasks_data.kinds``).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache

from .kinds import AnswerKind, get_kind


class Category(str, enum.Enum):
    SENTENCE_CLASSIFICATION = "sentence classification"
    NAMED_ENTITY_RECOGNITION = "named entity recognition"
    MACHINE_READING_COMPREHENSION = "machine reading comprehension"
    OTHER = "other"  # a task of one's own that names none of the paper's three


SHOTS = (10, 20, 30)  # the training-file sizes CLUES ships

#: Where a task's ``paper_ft_bert_base`` row comes from.
PAPER_TABLES = {
    Category.SENTENCE_CLASSIFICATION: "Table 6",
    Category.NAMED_ENTITY_RECOGNITION: "Table 7",
    Category.MACHINE_READING_COMPREHENSION: "Table 7",
}


@dataclass(frozen=True)
class PromptMethod:
    """How prompt-based fine-tuning (``pt``) reads a task: its template and label -> verbalizer word, or
    ``not_applicable`` with the reason (the paper leaves NER and MRC to future work).

    ``template`` is in LM-BFF's notation (``run_experiment.sh``), read by ``fewshot_models.prompt_ft``:
    ``*``-separated parts, ``cls`` / ``sep+`` the tokenizer's own affixes, ``mask`` the mask, ``sent_0`` the
    context (MNLI: the premise) and ``sent_1`` the hypothesis (``+`` a space before it, ``l`` its first letter
    lower-cased, ``-`` without its final punctuation mark), anything else literal text with ``_`` a space.
    """

    verbalizer: dict[str, str] = field(default_factory=dict)
    template: str = ""
    max_length: int | None = None  # LM-BFF's max_seq_length for this task
    not_applicable: str = ""

    @property
    def applies(self) -> bool:
        return bool(self.verbalizer) and bool(self.template) and not self.not_applicable


_NO_PROMPT = PromptMethod(
    not_applicable=(
        "prompt-based fine-tuning covers only SST-2 and MNLI (the paper, section 5.1b, uses LM-BFF's "
        "templates for them and leaves NER and MRC to future work)"
    )
)
SPLITS = (1, 2, 3, 4, 5)  # five training files per size


@dataclass(frozen=True)
class TaskSpec:
    slug: str
    name: str
    category: Category
    # What a worker or a model gives as the answer (``tasks_data.kinds``); a kind's name is resolved in KINDS.
    answer_kind: AnswerKind
    description: str  # worker-facing, plain English
    clues_folder: str  # folder inside CLUES-JSON/
    clues_prefix: str  # file prefix: <prefix>_test.jsonl, <prefix>_train_<K>_<SPLIT>.jsonl
    labels: tuple[str, ...] = ()
    # Words the data's question text uses for a label, where they differ from the label.
    label_aliases: dict[str, str] = field(default_factory=dict)
    # MNLI's context is a [premise, hypothesis] pair.
    context_is_pair: bool = False
    # Rows of one training file per example; the NER files hold K sentences x 3 question types.
    train_rows_per_shot: int = 1
    # Extra per-line fields the CLUES files carry, kept on the example.
    extra_fields: tuple[str, ...] = ()
    # Words of an item's question -> the badge shown beside it, each in its own colour (NER: the kind of name
    # asked for); the first word the question contains wins.
    question_badges: tuple[tuple[str, str], ...] = ()
    # Prompt-based fine-tuning: its template and verbalizers, or why there is none. Required: a new task says.
    prompt: PromptMethod | None = None
    # The paper's BERT-base classic fine-tuning row: shots -> (S1 mean, std over 5 splits), in
    # percent, from ``paper_table`` (PAPER_TABLES) of CLUES-paper.txt.
    paper_ft_bert_base: dict[int, tuple[float, float]] = field(default_factory=dict)

    # Where the data is, as file names: the test file and the training files' pattern ({shots}, {split}); by
    # default the CLUES release's names from ``clues_prefix``.
    test_file: str = ""
    train_file: str = ""
    # The training-file sizes and split numbers the task has (a task of one's own: those its files have).
    shots: tuple[int, ...] = SHOTS
    splits: tuple[int, ...] = SPLITS
    # Training files nest, smaller in larger (CLUES: 10 in 20 in 30): a chain follows one 10-shot file up. Files
    # that do not nest make a chain per split number.
    nested: bool = True
    # The question of every line that gives none (a task whose lines all ask the same).
    default_question: str = ""

    @property
    def paper_table(self) -> str:
        return PAPER_TABLES.get(self.category, "")

    def __post_init__(self) -> None:
        if isinstance(self.answer_kind, str):
            object.__setattr__(self, "answer_kind", get_kind(self.answer_kind))
        if not self.test_file:
            object.__setattr__(self, "test_file", f"{self.clues_prefix}_test.jsonl")
        if not self.train_file:
            object.__setattr__(self, "train_file", f"{self.clues_prefix}_train_{{shots}}_{{split}}.jsonl")

    def chance_item_s1(self, gold, candidate_texts=()) -> float:
        """The S1 a worker who learned nothing expects on one item: the chance level the dashboard flags
        training S1 against (the study's fraction rule cannot see a cohort's first workers, who have no one
        to be compared with). Its answer kind's: a uniform guess among labels or candidates, else the empty
        answer (the trivial predictor), so a new task needs nothing more."""
        return self.answer_kind.chance_item_s1(self, gold, candidate_texts)

    def label_words(self) -> dict[str, list[str]]:
        """label -> the words that may stand for it (the label itself first, then its aliases)."""
        out: dict[str, list[str]] = {label: [label] for label in self.labels}
        for word, label in self.label_aliases.items():
            out.setdefault(label, [label]).append(word)
        return out

    def label_of(self, text: str) -> str | None:
        """The label a word stands for (any case, an alias such as MNLI's "contraction"), or None."""
        t = text.strip().strip(".,;:!?\"'").strip().lower()
        for label, words in self.label_words().items():
            if t in (w.lower() for w in words):
                return label
        return None

    def question_badge(self, question: str) -> str:
        """The badge of an item's question ("people", ...), or ""."""
        question = question.lower()
        return next((badge for word, badge in self.question_badges if word in question), "")

    # Answer-time signal (cohort page, annotator export): a test answer given faster than this, from
    # the item being served to the answer, is too fast to have read the item. Set per task from
    # what must be read: a value well under a careful reader's time, so that only skimming shows.
    min_answer_seconds: float = 2.0
    # What a careful worker typically spends on one item: the official test items' mean length in words read
    # at 250 words a minute, plus the time to answer (a click for labels, marking for spans). The description
    # page multiplies it by the items to say how long the study takes and what it pays.
    seconds_per_item: float = 15.0

    @property
    def test_filename(self) -> str:
        return self.test_file

    def train_filename(self, shots: int, split: int) -> str:
        return self.train_file.format(shots=shots, split=split)

    def train_file_of(self, name: str) -> tuple[int, int] | None:
        """(shots, split) of a training file's name, or None for a name the pattern does not give."""
        match = train_file_pattern(self.train_file).fullmatch(name)
        return (int(match["shots"]), int(match["split"])) if match else None


@lru_cache(maxsize=64)
def train_file_pattern(pattern: str) -> re.Pattern:
    """A training files' pattern ("train_{shots}_{split}.jsonl") as a regular expression of its names."""
    parts = re.split(r"(\{shots\}|\{split\})", pattern)
    groups = {"{shots}": r"(?P<shots>[0-9]+)", "{split}": r"(?P<split>[0-9]+)"}
    return re.compile("".join(groups.get(part) or re.escape(part) for part in parts))


# The kind of name an NER question asks for, shown as a badge in its colour.
_NER_BADGES = (("people", "people"), ("person", "people"), ("organization", "organizations"), ("location", "locations"))

_NER_DESCRIPTION = (
    "Each item shows a short text and asks for one kind of name: people, organizations or "
    "locations. Mark every name of that kind in the text, exactly as written and without extra "
    "words around it. Mark each different name once. If the text contains no name of that kind, "
    "choose \u201cnone in this text\u201d."
)

#: The six tasks of the CLUES benchmark, in the paper's order: what "the CLUES tasks" means anywhere.
CLUES_TASKS: dict[str, TaskSpec] = {
    spec.slug: spec
    for spec in (
        TaskSpec(
            slug="sst2",
            name="SST-2",
            category=Category.SENTENCE_CLASSIFICATION,
            answer_kind=get_kind("label"),
            labels=("positive", "negative"),
            description=(
                "Each item is a short piece of a movie review, sometimes only a few words. "
                "Decide whether it expresses a positive or a negative opinion."
            ),
            clues_folder="SST-2",
            clues_prefix="sst",
            prompt=PromptMethod(
                verbalizer={"negative": "terrible", "positive": "great"},
                template="*cls**sent_0*_It_was*mask*.*sep+*",  # <sentence> It was [MASK].
                max_length=128,
            ),
            paper_ft_bert_base={10: (46.2, 5.6), 20: (54.0, 2.8), 30: (53.6, 5.5)},
            min_answer_seconds=1.5,  # one sentence, often a few words, and one click
            seconds_per_item=8.0,  # 12 words: 3 s to read, a choice and Enter
        ),
        TaskSpec(
            slug="mnli",
            name="MNLI",
            category=Category.SENTENCE_CLASSIFICATION,
            answer_kind=get_kind("label"),
            labels=("entailment", "neutral", "contradiction"),
            # The CLUES question reads "entailment, contraction, or neutral?" (sic).
            label_aliases={"contraction": "contradiction"},
            description=(
                "Each item shows a premise and a hypothesis. Assuming the premise is true, "
                "choose entailment if the hypothesis must then be true, contradiction if it "
                "must then be false, and neutral if it could be either."
            ),
            clues_folder="MNLI",
            clues_prefix="mnli",
            min_answer_seconds=3.0,  # two sentences to read and compare
            seconds_per_item=15.0,  # 34 words: 8 s to read and compare, then a choice
            context_is_pair=True,
            extra_fields=("genre",),
            prompt=PromptMethod(
                verbalizer={"entailment": "Yes", "neutral": "Maybe", "contradiction": "No"},
                template="*cls**sent-_0*?*mask*,*+sentl_1**sep+*",  # <premise>? [MASK], <hypothesis>
                max_length=256,
            ),
            paper_ft_bert_base={10: (37.0, 5.2), 20: (35.2, 2.7), 30: (35.4, 3.2)},
        ),
        TaskSpec(
            slug="conll03",
            name="CoNLL03",
            category=Category.NAMED_ENTITY_RECOGNITION,
            answer_kind=get_kind("spans"),
            description=_NER_DESCRIPTION + " The texts are sentences from news articles.",
            clues_folder="CoNLL2003",
            clues_prefix="conll",
            min_answer_seconds=2.0,  # one sentence, scanned for one kind of name, "none" is one click
            seconds_per_item=15.0,  # 25 words: 6 s to read, then marking each name of one kind
            train_rows_per_shot=3,
            question_badges=_NER_BADGES,
            prompt=_NO_PROMPT,
            paper_ft_bert_base={10: (51.3, 0.0), 20: (51.3, 0.0), 30: (51.3, 0.0)},
        ),
        TaskSpec(
            slug="wikiann",
            name="WikiANN",
            category=Category.NAMED_ENTITY_RECOGNITION,
            answer_kind=get_kind("spans"),
            description=_NER_DESCRIPTION + " The texts are fragments of Wikipedia articles.",
            clues_folder="WikiANN_EN",
            clues_prefix="wikiann",
            min_answer_seconds=1.5,  # short fragments
            seconds_per_item=10.0,  # 16 words: 4 s to read, then marking
            train_rows_per_shot=3,
            question_badges=_NER_BADGES,
            prompt=_NO_PROMPT,
            paper_ft_bert_base={10: (62.8, 0.0), 20: (62.8, 0.0), 30: (62.8, 0.0)},
        ),
        TaskSpec(
            slug="squad2",
            name="SQuADv2",
            category=Category.MACHINE_READING_COMPREHENSION,
            answer_kind=get_kind("span_or_none"),
            description=(
                "Each item shows a paragraph and a question about it. Mark the shortest part of "
                "the paragraph that answers the question. Some questions cannot be answered from "
                "the paragraph: then choose \u201cno answer\u201d."
            ),
            clues_folder="SQuAD-v2",
            clues_prefix="squad-v2",
            min_answer_seconds=5.0,  # a paragraph and a question: no answer can be found or ruled out faster
            seconds_per_item=45.0,  # 138 words: 33 s to read, then finding and marking the answer
            extra_fields=("is_impossible",),
            prompt=_NO_PROMPT,
            paper_ft_bert_base={10: (46.0, 2.4), 20: (34.9, 9.0), 30: (32.6, 5.8)},
        ),
        TaskSpec(
            slug="record",
            name="ReCoRD",
            category=Category.MACHINE_READING_COMPREHENSION,
            answer_kind=get_kind("entity"),
            description=(
                "Each item shows a news article and a sentence with a blank (@placeholder). "
                "Choose the highlighted name from the article that best fills the blank."
            ),
            clues_folder="ReCoRD",
            clues_prefix="record",
            min_answer_seconds=5.0,  # a news article and a cloze sentence
            seconds_per_item=60.0,  # 197 words: 47 s to read, then choosing the name
            extra_fields=("entities",),
            prompt=_NO_PROMPT,
            paper_ft_bert_base={10: (10.3, 1.8), 20: (11.7, 2.4), 30: (13.1, 3.3)},
        ),
    )
}


class UnknownTask(KeyError):
    pass


#: Tasks registered in this process beside the CLUES tasks (a card read on a GPU box, a test's task), and those
#: last read from the source.
_REGISTERED: dict[str, TaskSpec] = {}
_FROM_SOURCE: set[str] = set()
#: Where the tasks that are data live (the Django side: the imported tasks' cards), asked for one slug, or for
#: every task with None.
TaskSource = Callable[[str | None], Iterable[TaskSpec]]
_source: TaskSource | None = None


def set_task_source(source: TaskSource | None) -> None:
    """Where ``tasks()`` and ``get_task`` find the tasks that are not in this module (None: nowhere)."""
    global _source
    _source = source
    for slug in _FROM_SOURCE:
        _REGISTERED.pop(slug, None)
    _FROM_SOURCE.clear()


def register_task(spec: TaskSpec) -> None:
    """Add a task (or replace the one of its slug); a CLUES task's slug is refused."""
    if spec.slug in CLUES_TASKS:
        raise ValueError(f"{spec.slug!r} is a CLUES task's slug")
    _REGISTERED[spec.slug] = spec


def refresh_task(spec: TaskSpec) -> None:
    """The source's task as just read (the Django side's stored card), kept for look-ups by slug."""
    if spec.slug not in CLUES_TASKS:
        _REGISTERED[spec.slug] = spec
        _FROM_SOURCE.add(spec.slug)


def unregister_task(slug: str) -> None:
    _REGISTERED.pop(slug, None)
    _FROM_SOURCE.discard(slug)


def _from_source(slug: str | None) -> list[TaskSpec]:
    if _source is None:
        return []
    found = [spec for spec in _source(slug) if spec.slug not in CLUES_TASKS]
    if slug is None:  # a full listing: what the source no longer holds is gone
        for gone in _FROM_SOURCE - {spec.slug for spec in found}:
            _REGISTERED.pop(gone, None)
        _FROM_SOURCE.clear()
    for spec in found:
        refresh_task(spec)
    return found


def tasks() -> dict[str, TaskSpec]:
    """Every task: the CLUES tasks in the paper's order, then the others by slug (the source read afresh)."""
    _from_source(None)
    return {**CLUES_TASKS, **dict(sorted(_REGISTERED.items()))}


def find_task(slug: str) -> TaskSpec | None:
    """The task of ``slug``, or None."""
    spec = CLUES_TASKS.get(slug) or _REGISTERED.get(slug)
    if spec is None:
        spec = next((s for s in _from_source(slug) if s.slug == slug), None)
    return spec


def unknown_tasks(slugs: Iterable[str], known: Iterable[str] | None = None) -> str:
    """What to tell someone who named tasks the registry does not hold: each, with the slug it likely means (a
    near slug, or a task's name typed for its slug: "SQuADv2" is squad2), then every known slug. ``known``: the
    slugs they may use (None: the CLUES tasks; a researcher is never told another's task of their own)."""
    import difflib

    known = list(CLUES_TASKS if known is None else known)
    names = {spec.name.lower(): slug for slug in known if (spec := find_task(slug))}
    said = []
    for given in slugs:
        near = names.get(given.lower()) or next(
            iter(difflib.get_close_matches(given.lower(), [*known, *names], n=1, cutoff=0.6)), None
        )
        said.append(f"{given} (did you mean {names.get(near, near)}?)" if near else given)
    return f"unknown task{'s' if len(said) != 1 else ''}: {', '.join(said)}; known tasks: {', '.join(known)}"


def get_task(slug: str) -> TaskSpec:
    spec = find_task(slug)
    if spec is None:
        raise UnknownTask(unknown_tasks([slug], known=tasks()))  # an operator's look-up (commands, the admin)
    return spec


def task_name(slug: str) -> str:
    """A task's name, or its slug when no task has it (a study that names a task since removed)."""
    spec = find_task(slug)
    return spec.name if spec else slug


def task_order(slug: str) -> tuple[int, str]:
    """The sort key of ``tasks()``'s order, without a look-up: the CLUES tasks first, in the paper's order."""
    return (_CLUES_ORDER.get(slug, len(_CLUES_ORDER)), slug)


_CLUES_ORDER = {slug: i for i, slug in enumerate(CLUES_TASKS)}
