"""SQuADv2 in the ``ft`` adapter as the CLUES reference (mt-dnn) decides it, against the
``utils_qa`` option: padded windows with attention over the padding, every position in the n-best."""

from __future__ import annotations

import numpy as np
import pytest

from fewshot_models import AdapterConfig, AdapterError, AdapterExample
from fewshot_models.span_ft import FTSession, char_to_token_span
from tasks_data.registry import CLUES_TASKS

CONTEXT = "the cat sat on the mat and the dog sat on the rug"
EXAMPLES = [
    AdapterExample(
        uid="a",
        context=CONTEXT,
        question="where did the dog sit",
        answers=("the rug",),
        answer_starts=(CONTEXT.rindex("the rug"),),
    ),
    AdapterExample(uid="b", context=CONTEXT, question="where did the bird sit", answers=()),
]


def _session(bert_path, max_length=48, **extra):
    return FTSession(
        CLUES_TASKS["squad2"], AdapterConfig(model=bert_path, device="cpu", max_length=max_length, extra=extra)
    )


def test_reference_pads_every_window_and_attends_to_the_padding(bert_path):
    session = _session(bert_path)
    features, windows = session.encode(EXAMPLES, training=True)
    assert all(len(f["input_ids"]) == 48 and all(m == 1 for m in f["attention_mask"]) for f in features)
    assert features[0]["input_ids"][-1] == session.pad_id
    # Unanswerable: start = end = [CLS]; answerable: the occurrence answer_start names (the 2nd "the").
    assert (features[1]["start_positions"], features[1]["end_positions"]) == (0, 0)
    s, e = features[0]["start_positions"], features[0]["end_positions"]
    offs = windows[0].raw_offsets
    assert CONTEXT[offs[s][0] : offs[e][1]] == "the rug" and offs[s][0] == CONTEXT.rindex("the rug")
    hf_features, _ = _session(bert_path, span_decoding="utils_qa").encode(EXAMPLES, training=True)
    assert len(hf_features[0]["input_ids"]) < 48  # the option keeps dynamic padding


def _decide(session, window, start, end):
    return session._decode_span_mtdnn(CONTEXT, [(window, (np.asarray(start), np.asarray(end)))])


def test_reference_decision_over_every_position(bert_path):
    session = _session(bert_path, max_length=72)
    _, windows = session.encode(EXAMPLES[:1], training=False)
    win = windows[0]
    n = len(win.raw_offsets)
    s_tok, e_tok = char_to_token_span(
        win.raw_offsets[: len(win.seq_ids)], win.seq_ids, 1, CONTEXT.rindex("the rug"), len(CONTEXT)
    )
    pads = list(range(len(win.seq_ids), n))
    assert len(pads) >= 20
    # Padding scores highest: the 20 best are all empty texts -> "no answer" (utils_qa, which
    # looks at context tokens only, answers with the best context span instead).
    start, end = np.zeros(n), np.zeros(n)
    start[pads[:15]], end[pads[:15]] = 5.0, 5.0  # 15 x 15 / 2 empty pad spans fill the n-best
    start[s_tok], end[e_tok] = 1.0, 1.0
    start[0] = end[0] = -3.0
    assert _decide(session, win, start, end) == []
    hf = _session(bert_path, max_length=72, span_decoding="utils_qa")
    assert hf._decode_span(CONTEXT, [(win, (start, end))], allow_null=True) == ["the rug"]
    # A context span above the padding and above [CLS]: answered.
    start[s_tok], end[e_tok] = 9.0, 9.0
    assert _decide(session, win, start, end) == ["the rug"]
    # [CLS] beats it by more than the threshold 0.0: "no answer".
    start[0] = end[0] = 9.5
    assert _decide(session, win, start, end) == []


def test_unknown_decoding_is_refused(bert_path):
    with pytest.raises(AdapterError, match="span_decoding"):
        _session(bert_path, span_decoding="best")
