"""Validating a worker's answer against the task's answer kind (protocol rule 6).

The API's answer is a list: ``["positive"]`` for a label; ``[{"start": s, "end": e}, ...]``
for spans (character offsets into the context, end exclusive; an optional ``"text"`` must
equal the slice); ``[]`` for "none". A valid answer becomes the set of strings S1 scores,
plus the offsets where there are any. Anything else is an ``InvalidAnswer`` naming the
problem, and nothing is stored.
"""

from __future__ import annotations

from dataclasses import dataclass

from tasks_data.models import Example
from tasks_data.registry import AnswerKind, TaskSpec


class InvalidAnswer(ValueError):
    pass


@dataclass(frozen=True)
class ValidatedAnswer:
    texts: list[str]
    spans: list[list[int]] | None


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _span(item, index: int, context: str) -> tuple[int, int]:
    if not isinstance(item, dict):
        raise InvalidAnswer(f'answer[{index}] must be an object {{"start": int, "end": int}}')
    unknown = set(item) - {"start", "end", "text"}
    if unknown:
        raise InvalidAnswer(f"answer[{index}] has unknown field(s): {', '.join(sorted(unknown))}")
    start, end = item.get("start"), item.get("end")
    if not _is_int(start) or not _is_int(end):
        raise InvalidAnswer(f"answer[{index}]: start and end must be integers")
    if not 0 <= start < end <= len(context):
        raise InvalidAnswer(
            f"answer[{index}]: offsets {start}..{end} are outside the context "
            f"(0..{len(context)}, end exclusive, start < end)"
        )
    text = context[start:end]
    if "text" in item and item["text"] != text:
        raise InvalidAnswer(
            f"answer[{index}]: text {item['text']!r} does not match the context at {start}..{end} ({text!r})"
        )
    if text != text.strip():
        raise InvalidAnswer(f"answer[{index}]: the span {text!r} starts or ends with whitespace")
    return start, end


def validate_answer(spec: TaskSpec, example: Example, answer) -> ValidatedAnswer:
    kind = spec.answer_kind
    if not isinstance(answer, list):
        raise InvalidAnswer("answer must be a list")
    if not answer:
        if kind.allows_empty:
            return ValidatedAnswer(texts=[], spans=[])
        raise InvalidAnswer(f"{spec.name} needs an answer: the empty answer is not allowed")

    if kind is AnswerKind.LABEL:
        if len(answer) != 1 or not isinstance(answer[0], str):
            raise InvalidAnswer(f'answer must be one label, e.g. ["{spec.labels[0]}"]')
        if answer[0] not in spec.labels:
            raise InvalidAnswer(f"{answer[0]!r} is not a label of {spec.name} ({', '.join(spec.labels)})")
        return ValidatedAnswer(texts=[answer[0]], spans=None)

    spans = [_span(item, i, example.context) for i, item in enumerate(answer)]
    if kind.max_spans is not None and len(spans) > kind.max_spans:
        raise InvalidAnswer(f"{spec.name} takes at most {kind.max_spans} span, got {len(spans)}")
    ordered = sorted(spans)
    for (s1, e1), (s2, e2) in zip(ordered, ordered[1:], strict=False):
        if (s1, e1) == (s2, e2):
            raise InvalidAnswer(f"the span {s1}..{e1} is given twice")
        if s2 < e1:
            raise InvalidAnswer(f"the spans {s1}..{e1} and {s2}..{e2} overlap")
    if kind is AnswerKind.ENTITY:
        candidates = {tuple(c) for c in example.candidates}
        if spans[0] not in candidates:
            raise InvalidAnswer(f"the span {spans[0][0]}..{spans[0][1]} is not one of the candidate entities")
    texts = list(dict.fromkeys(example.context[s:e] for s, e in ordered))
    return ValidatedAnswer(texts=texts, spans=[list(s) for s in ordered])
