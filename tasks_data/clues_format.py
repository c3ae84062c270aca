"""Reading CLUES JSONL lines into normalised records (plain Python, no Django import).

Every check names the file, the line and the field, so a bad release is refused with an
error a person can act on. The quirks of the official files are normalised here and
nowhere else:

* NER "no entity" is ``[""]``: it becomes the empty set;
* SQuADv2 lists the same alternative several times: alternatives are made distinct;
* ReCoRD entity offsets have an INCLUSIVE end: candidates are stored end-exclusive;
* MNLI's context is a [premise, hypothesis] pair: it is kept as two fields.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from .registry import AnswerKind, TaskSpec


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
    kind = spec.answer_kind
    not_found: tuple[str, ...] = ()
    gold: tuple[str, ...]

    if kind is AnswerKind.LABEL:
        if len(answer) != 1 or not isinstance(answer[0], str):
            raise fail("answer", f"must be a list of one label, got {answer!r}")
        if answer[0] not in spec.labels:
            raise fail("answer", f"{answer[0]!r} is not a label of {spec.name} ({', '.join(spec.labels)})")
        gold = (answer[0],)

    elif kind is AnswerKind.SPANS:
        if not all(isinstance(a, str) for a in answer):
            raise fail("answer", "must be a list of strings")
        if answer == [""] or answer == []:
            gold = ()  # CLUES writes the empty set as [""]
        elif any(not a.strip() for a in answer):
            raise fail("answer", 'an empty string is only allowed alone, as [""] (the empty set)')
        else:
            gold = _distinct(answer)
        not_found = tuple(a for a in gold if a not in context)

    else:  # SPAN_OR_NONE and ENTITY: MRC answers as {"text", "answer_start"}
        impossible = row.get("is_impossible")
        if not isinstance(impossible, bool):
            raise fail("is_impossible", "must be true or false")
        extras["is_impossible"] = impossible
        texts: list[str] = []
        starts: dict[str, int] = {}
        for i, item in enumerate(answer):
            if (
                not isinstance(item, dict)
                or not isinstance(item.get("text"), str)
                or not item["text"].strip()
                or isinstance(item.get("answer_start"), bool)
                or not isinstance(item.get("answer_start"), int)
            ):
                raise fail("answer", f'item {i} must be {{"text": non-empty string, "answer_start": integer}}')
            texts.append(item["text"])
            starts.setdefault(item["text"], item["answer_start"])
        if impossible and texts:
            raise fail("answer", "is_impossible is true but answers are given")
        if not impossible and not texts:
            raise fail("answer", "is_impossible is false but no answer is given")
        gold = _distinct(texts)
        not_found = tuple(a for a in gold if a not in context)
        extras["answer_starts"] = tuple(starts[t] for t in gold)

        if kind is AnswerKind.ENTITY:
            entities = row.get("entities")
            if not isinstance(entities, list) or not entities:
                raise fail("entities", 'must be a non-empty list of {"start", "end"}')
            spans: list[tuple[int, int]] = []
            for i, ent in enumerate(entities):
                if not isinstance(ent, dict) or any(
                    isinstance(ent.get(k), bool) or not isinstance(ent.get(k), int) for k in ("start", "end")
                ):
                    raise fail("entities", f'item {i} must be {{"start": int, "end": int}}')
                start, end = ent["start"], ent["end"] + 1  # CLUES ends are inclusive
                if not 0 <= start < end <= len(context):
                    raise fail("entities", f"item {i} ({ent['start']}..{ent['end']}) lies outside the context")
                spans.append((start, end))
            candidates = tuple(dict.fromkeys(spans))
            texts_of_candidates = {context[s:e] for s, e in candidates}
            for text_ in gold:
                if text_ not in texts_of_candidates:
                    raise fail("answer", f"{text_!r} is not one of the candidate entities")
            extras["candidates"] = candidates

    return Record(
        clues_id=str(clues_id),
        context=context,
        hypothesis=hypothesis,
        question=question,
        gold=gold,
        gold_not_in_context=not_found,
        **extras,
    )


def parse_file(spec: TaskSpec, text: str, *, file: str) -> list[Record]:
    """Parse a whole JSONL file; blank lines are refused (they are a sign of a broken file)."""
    records = []
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the final newline
    if not lines:
        raise CluesFormatError(file, None, None, "the file is empty")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            raise CluesFormatError(file, number, None, "blank line")
        records.append(parse_line(spec, line, file=file, line=number))
    return records
