"""Reading CLUES JSONL lines into normalised records (plain Python, no Django import).

Every check names the file, the line and the field, so a bad release is refused with an
error a person can act on. The quirks of the official files are normalised here and, for
the answer field, by the task's answer kind (``AnswerKind.read_gold``), nowhere else:

* NER "no entity" is ``[""]``: it becomes the empty set;
* SQuADv2 lists the same alternative several times: alternatives are made distinct;
* ReCoRD entity offsets have an INCLUSIVE end: candidates are stored end-exclusive;
* MNLI's context is a [premise, hypothesis] pair: it is kept as two fields.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from .kinds import GoldFormatError
from .registry import TaskSpec


class CluesFormatError(ValueError):
    def __init__(self, file: str, line: int | None, field_name: str | None, message: str):
        self.file, self.line, self.field, self.message = file, line, field_name, message
        where = file if line is None else f"{file}, line {line}"
        if field_name:
            where += f", field {field_name!r}"
        super().__init__(f"{where}: {message}")


@dataclass(frozen=True)
class Record:
    """One CLUES line, normalised."""

    clues_id: str
    context: str
    question: str
    gold: tuple[str, ...]  # the answer set, or for MRC the distinct alternatives; () = empty
    hypothesis: str = ""  # MNLI only
    genre: str = ""  # MNLI only
    is_impossible: bool | None = None  # SQuADv2 and ReCoRD
    candidates: tuple[tuple[int, int], ...] = ()  # ReCoRD, end exclusive
    # SQuADv2 / ReCoRD: the given answer_start of each alternative in ``gold`` (its first listing),
    # so a model is trained on the occurrence the annotator marked, not the first one found.
    answer_starts: tuple[int, ...] = field(default=(), compare=False)
    gold_not_in_context: tuple[str, ...] = field(default=(), compare=False)

    @property
    def content_key(self) -> str:
        """Identity by content (CLUES ids collide across files): context, hypothesis, question."""
        payload = json.dumps([self.context, self.hypothesis, self.question], ensure_ascii=False)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def _distinct(items) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


def parse_line(spec: TaskSpec, text: str, *, file: str, line: int) -> Record:
    """Parse and validate one line of a ``spec`` task file."""

    def fail(field_name: str | None, message: str) -> CluesFormatError:
        return CluesFormatError(file, line, field_name, message)

    try:
        row = json.loads(text)
    except json.JSONDecodeError as exc:
        raise fail(None, f"not valid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(row, dict):
        raise fail(None, f"expected a JSON object, got {type(row).__name__}")

    if spec.default_question and "question" not in row:
        row["question"] = spec.default_question  # the task's one question (its card's)
    for name in ("id", "question", "context", "answer"):
        if name not in row:
            raise fail(name, "missing")
    clues_id = row["id"]
    if isinstance(clues_id, bool) or not isinstance(clues_id, (str, int)) or str(clues_id) == "":
        raise fail("id", f"must be a non-empty string or an integer, got {clues_id!r}")
    question = row["question"]
    if not isinstance(question, str) or not question.strip():
        raise fail("question", "must be a non-empty string")

    context, hypothesis = row["context"], ""
    if spec.context_is_pair:
        if (
            not isinstance(context, list)
            or len(context) != 2
            or not all(isinstance(c, str) and c.strip() for c in context)
        ):
            raise fail("context", "must be a list of two non-empty strings [premise, hypothesis]")
        context, hypothesis = context
    elif not isinstance(context, str) or not context.strip():
        raise fail("context", "must be a non-empty string")

    extras: dict = {}
    if "genre" in spec.extra_fields:
        genre = row.get("genre")
        if not isinstance(genre, str) or not genre:
            raise fail("genre", "must be a non-empty string")
        extras["genre"] = genre

    answer = row["answer"]
    if not isinstance(answer, list):
        raise fail("answer", f"must be a list, got {type(answer).__name__}")
    try:
        reading = spec.answer_kind.read_gold(spec, row, context)
    except GoldFormatError as exc:
        raise fail(exc.field, exc.message) from None
    extras.update(reading.extras)

    return Record(
        clues_id=str(clues_id),
        context=context,
        hypothesis=hypothesis,
        question=question,
        gold=reading.gold,
        gold_not_in_context=reading.not_found,
        **extras,
    )


def parse_file(spec: TaskSpec, text: str, *, file: str, errors: list[str] | None = None) -> list[Record]:
    """Parse a whole JSONL file; blank lines are refused (they are a sign of a broken file). With ``errors``, every
    line is checked and each bad line's problem added there (the good lines are returned); else the first raises."""
    records = []
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the final newline
    if not lines:
        raise CluesFormatError(file, None, None, "the file is empty")
    for number, line in enumerate(lines, start=1):
        try:
            if not line.strip():
                raise CluesFormatError(file, number, None, "blank line")
            records.append(parse_line(spec, line, file=file, line=number))
        except CluesFormatError as exc:
            if errors is None:
                raise
            errors.append(str(exc))
    return records
