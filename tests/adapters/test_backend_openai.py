"""The OpenAI-compatible HTTP backend, ``icl`` over it and the ``worker`` method, against a real HTTP fake
of the API on 127.0.0.1 (tests/baselines/fake_openai.py): no patched function."""

from __future__ import annotations

import json
import logging
import socket
import time

import pytest

from fewshot_models import METHODS, AdapterConfig, AdapterError
from fewshot_models.backends import (
    BackendError,
    ChatRequest,
    ContextTooSmall,
    GenerationRequest,
    LoglikelihoodRequest,
    MemoryStore,
    open_backend,
)
from fewshot_models.backends.http import context_too_small, retry_after_seconds
from fewshot_models.backends.openai import OpenAIBackend
from fewshot_models.worker import read_reply
from tests.adapters.adapter_helpers import task_and_data
from tests.baselines.fake_openai import TOKEN, FakeOpenAI


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", TOKEN)
    monkeypatch.setattr(OpenAIBackend, "backoff", 0.05)
    with FakeOpenAI() as server:
        yield server


def cfg(fake, **kw):
    base = {"model": "tiny-model", "backend": "openai", "server": fake.base_url, "max_retries": 3, "timeout": 5.0}
    return AdapterConfig(**{**base, **kw})


def chat(n=1, text="hi"):
    return [ChatRequest(messages=(("user", f"{text} {i}"),), max_tokens=4) for i in range(n)]


def posts(fake):
    return [c for c in fake.calls if c["body"] is not None]


def test_unknown_model_names_the_server_and_its_models(fake):
    fake.models = ["qwen-7b", "llama-8b"]
    with pytest.raises(BackendError) as err:
        open_backend(cfg(fake), method="worker")
    assert fake.base_url in str(err.value) and "qwen-7b, llama-8b" in str(err.value)
    assert "'tiny-model'" in str(err.value)


def test_unreachable_server_is_a_clear_error():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there
    config = AdapterConfig(model="m", backend="openai", server=f"http://127.0.0.1:{port}/v1", max_retries=1)
    start = time.monotonic()
    with pytest.raises(BackendError, match="cannot connect"):
        open_backend(config, method="icl")
    assert time.monotonic() - start < 10


def test_wrong_key_is_refused_and_never_printed(fake, monkeypatch, caplog):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong-key-SECRET-987")
    caplog.set_level(logging.DEBUG)
    with pytest.raises(BackendError) as err:
        open_backend(cfg(fake), method="worker")
    assert "401" in str(err.value) and "OPENAI_API_KEY" in str(err.value)
    assert len(fake.calls) == 1  # a refused key is not retried
    assert fake.calls[0]["authorization"] == "Bearer sk-wrong-key-SECRET-987"  # sent, as a header only
    assert "SECRET" not in str(err.value) and "SECRET" not in caplog.text


def test_429_waits_for_retry_after_then_answers_once(fake, caplog):
    caplog.set_level(logging.DEBUG)
    fake.faults = ["429"]
    fake.retry_after = "1"
    with open_backend(cfg(fake), method="worker") as backend:
        assert backend.chat(chat()) == ["positive"]
        tally = backend.tally.as_dict()
    sent = posts(fake)
    assert [c["status"] for c in sent] == [429, 200]
    assert sent[1]["at"] - sent[0]["at"] >= 0.95  # Retry-After honoured (the back-off alone is 0.05 s)
    assert tally["requests"] == 2 and tally["retries"] == 1 and tally["completion_tokens"] == 1
    assert all(c["authorization"] == f"Bearer {TOKEN}" for c in fake.calls)
    assert TOKEN not in caplog.text


def test_500_and_a_dropped_connection_are_retried_and_counted(fake):
    fake.faults = ["500", "drop"]
    store = MemoryStore()
    with open_backend(cfg(fake, store=store), method="worker") as backend:
        assert backend.chat(chat()) == ["positive"]
        notes, tally = backend.notes(), backend.tally.as_dict()
    assert [c["status"] for c in posts(fake)] == [500, 0, 200]
    assert tally["requests"] == 3 and tally["retries"] == 2
    assert notes["unanswered_sends"] == 1  # the dropped one may have been billed: said in the notes
    assert len(store.items) == 1


def test_gives_up_after_max_retries_and_stores_nothing(fake):
    fake.faults = ["500"] * 10
    store = MemoryStore()
    with open_backend(cfg(fake, store=store, max_retries=2), method="worker") as backend:
        with pytest.raises(BackendError, match="after 3 attempt"):
            backend.chat(chat())
    assert len(posts(fake)) == 3 and store.items == {}


def test_an_answer_in_no_known_form_is_an_error_and_not_kept(fake):
    fake.faults = ["garbage"]
    store = MemoryStore()
    with open_backend(cfg(fake, store=store), method="worker") as backend:
        with pytest.raises(BackendError, match="an answer in no known form"):
            backend.chat(chat())
    assert store.items == {}


def test_slow_server_times_out(fake):
    fake.latency = 1.0
    with open_backend(cfg(fake, timeout=0.3, max_retries=1), method="worker") as backend:
        start = time.monotonic()
        with pytest.raises(BackendError, match="no answer within 0.3 s"):
            backend.chat(chat())
        assert time.monotonic() - start < 3


def test_concurrency_is_bounded_and_answers_keep_their_order(fake):
    fake.latency = 0.05
    fake.reply = lambda body: body["messages"][-1]["content"].upper()
    with open_backend(cfg(fake, concurrency=4), method="worker") as backend:
        answers = backend.chat(chat(24))
    assert answers == [f"HI {i}" for i in range(24)]
    assert 2 <= fake.max_in_flight <= 4


def test_answered_requests_are_never_sent_again(fake):
    store = MemoryStore()
    with open_backend(cfg(fake, store=store), method="worker") as backend:
        backend.chat(chat(5))
    assert len(fake.answered) == 5
    with open_backend(cfg(fake, store=store), method="worker") as backend:
        assert len(backend.chat(chat(7))) == 7
        tally = backend.tally.as_dict()
    assert len(fake.answered) == 7 and tally["resumed"] == 5 and tally["requests"] == 2
    bodies = [json.dumps(b, sort_keys=True) for b in fake.answered]
    assert len(set(bodies)) == 7


def test_each_answer_is_kept_as_it_arrives_and_counted_done_only_once_kept(fake):
    """Not at the end of a batch: a run killed in the middle keeps every answer that came back, and no answer is
    counted as done (progress) before it is kept."""
    fake.latency = 0.15  # longer than a batch's 100 ms: each answer (pair) is kept before the next comes
    done: list[int] = []

    class Watching(MemoryStore):
        answered_at_put: list[int] = []

        def put_many(self, records, *, tally):
            self.answered_at_put.append(len(fake.answered))
            assert len(done) == len(self.items)  # every answer counted so far is kept
            super().put_many(records, tally=tally)

    store = Watching()
    with open_backend(cfg(fake, store=store, concurrency=2), method="worker") as backend:
        backend.chat(chat(10), done=lambda: done.append(1))
    assert len(store.items) == 10 == len(done)
    assert store.answered_at_put[0] <= 3  # the first answer was kept while the others were still coming
    assert len(store.answered_at_put) >= 3  # as they came: not one write at the end


def test_context_too_small_is_recognised(fake):
    fake.window = 5
    with open_backend(cfg(fake), method="worker") as backend:
        with pytest.raises(ContextTooSmall) as err:
            backend.chat([ChatRequest(messages=(("user", "one two three"),), max_tokens=4)])
    assert err.value.window == 5 and err.value.requested == 7
    assert context_too_small(400, "the request exceeds the available context size, n_ctx: 2048") == (2048, None)
    assert context_too_small(500, "maximum context length is 10") is None


def test_retry_after_as_date():
    assert retry_after_seconds("3") == 3.0
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0
    assert retry_after_seconds("soon") is None


def test_loglikelihood_from_echoed_logprobs(fake):
    with open_backend(cfg(fake), method="icl") as backend:
        assert backend.scores_loglikelihood
        (scores,) = backend.loglikelihood([LoglikelihoodRequest(("Q: x\nAnswer:",), (" no", " maybe"))])
    # the fake's log p of a word is -len(word) / 4
    assert scores == [-0.5, -1.25]
    # the check (the model's own continuation, then its echo), then the two continuations
    assert [c["body"].get("echo", False) for c in posts(fake)] == [False, True, True, True]
    assert len(posts(fake)) == 4


def test_no_echo_then_icl_generates_and_reads_a_choice(fake):
    fake.no_echo = True
    fake.complete = lambda prompt: " Negative\n"
    task, data = task_and_data("label")
    result = METHODS["icl"]().run(task, data, data[:3], cfg(fake))
    assert result.predictions == [["negative"]] * 3
    assert "read as a worker's choice" in result.notes["scoring"]
    assert result.notes["echo_logprobs"] is False and "refuses echo" in result.notes["echo_refused"]
    # the check (generation with logprobs, the refused echo), the fit's measure, then three generations
    assert result.usage["requests"] == 2 + 1 + 3


def test_chat_only_server_generates_through_chat(fake):
    fake.no_completions = True
    fake.reply = lambda body: "Paris\nmore"
    with open_backend(cfg(fake), method="icl") as backend:
        assert not backend.scores_loglikelihood
        assert backend.generate_until([GenerationRequest(("Where?",), max_tokens=4)]) == ["Paris"]
    assert posts(fake)[-1]["path"] == "/v1/chat/completions"


def test_icl_scores_labels_over_the_server(fake):
    fake.logprob = lambda word: 0.0 if word.strip() == "positive" else -3.0
    task, data = task_and_data("label")
    result = METHODS["icl"]().run(task, data, data[:4], cfg(fake))
    assert result.predictions == [["positive"]] * 4
    assert result.notes["scoring"].startswith("summed log-likelihood")
    assert result.notes["server"] == fake.base_url and result.usage["requests"] == 2 + 1 + 4 * len(task.labels)
    prompt = posts(fake)[3]["body"]["prompt"]  # after the echo check and the fit's measure
    assert prompt.count("Answer:") == len(data) + 1  # every demonstration, then the query


# --------------------------------------------------------------------------- the worker method


def _last_user(body):
    return body["messages"][-1]["content"]


def test_worker_goes_through_the_protocol(fake):
    task, data = task_and_data("label")
    train, test = data[:3], data[3:6]
    fake.reply = lambda body: "Positive." if "Training item" in _last_user(body) else "negative"
    result = METHODS["worker"]().run(task, train, test, cfg(fake, seed=7))
    chats = [c["body"] for c in posts(fake)]
    assert len(chats) == len(train) + len(test)
    # training: one conversation, each request carrying everything before it, in file order
    for i, body in enumerate(chats[:3]):
        assert len(body["messages"]) == 2 * i + 1 and body["seed"] == 7 and body["temperature"] == 0
        assert train[i].context in _last_user(body)
        assert f"Training item {i + 1} of 3" in _last_user(body)
    first = chats[0]["messages"][0]["content"]
    assert task.description in first and "Training: 3 items" in first and "Test: 3 items" in first
    assert "positive, negative" in first or "negative, positive" in first
    # the feedback of item i (its gold, its S1) opens the next user message
    assert chats[1]["messages"][1] == {"role": "assistant", "content": "Positive."}
    gold0 = train[0].answers[0]
    assert f"Correct answer: {gold0}" in chats[1]["messages"][2]["content"]
    verdict = "Correct. Score for this item: 100%" if gold0 == "positive" else "Not correct. Score for this item: 0%"
    assert verdict in chats[1]["messages"][2]["content"]
    # test: the whole transcript, the test item, never a test gold (sent concurrently: in any order)
    by_item = {next(ex.uid for ex in test if ex.context in _last_user(body)): body for body in chats[3:]}
    assert sorted(by_item) == sorted(ex.uid for ex in test)
    for ex in test:
        body = by_item[ex.uid]
        assert len(body["messages"]) == 2 * 3 + 1
        assert body["messages"][:6] == chats[2]["messages"][:4] + [
            chats[2]["messages"][4],
            {"role": "assistant", "content": "Positive."},
        ]
        assert "training step is over" in _last_user(body) and ex.context in _last_user(body)
        assert "Correct answer" not in _last_user(body).split("training step is over")[1]
    assert result.predictions == [["negative"]] * 3
    assert result.notes["training_s1"] == [1.0 if ex.answers[0] == "positive" else 0.0 for ex in train]
    assert result.usage["requests"] == 6 and result.notes["unparseable_replies"] == 0


def test_worker_zero_shot_is_the_description_then_the_item(fake):
    task, data = task_and_data("spans")
    ex = data[0]
    fake.reply = lambda body: "banana | " + ex.context.split()[0]
    result = METHODS["worker"]().run(task, [], data[:2], cfg(fake))
    bodies = [c["body"] for c in posts(fake)]
    body = next(b for b in bodies if len(b["messages"]) == 1)
    assert "Training" not in body["messages"][0]["content"] and "Test item:" in body["messages"][0]["content"]
    # "banana" is no text of the context: the validation message and one more try (as a worker gets), then
    # the reply is unparseable, scored as the empty answer
    retry = next(b for b in bodies if len(b["messages"]) == 3)
    assert "'banana' is not text of the passage" in retry["messages"][2]["content"]
    assert len(bodies) == 4 and result.predictions == [[], []] and result.notes["unparseable_replies"] == 2
    assert sorted(result.notes["unparseable_items"]) == sorted([data[0].uid, data[1].uid])
    assert sorted(result.notes["re_asked_items"]) == sorted([data[0].uid, data[1].uid])


def test_worker_replies_read_as_a_worker_answer_is_validated():
    task, data = task_and_data("spans")
    ex = data[0]
    names = [a for a in ex.answers]
    assert read_reply(task, ex, "none") == []
    if names:
        assert read_reply(task, ex, "Answer: " + " | ".join(n.lower() for n in names)) == names
    label_task, labels = task_and_data("label")
    assert read_reply(label_task, labels[0], "POSITIVE") == ["positive"]
    assert read_reply(label_task, labels[0], "great") is None
    squad, rows = task_and_data("span_or_none")
    ex = rows[0]
    words = ex.context.split()
    assert read_reply(squad, ex, f"{words[0]} | {words[1]}") is None  # one span at most
    assert read_reply(squad, ex, "no answer") == []
    record, rc = task_and_data("entity")
    assert read_reply(record, rc[0], rc[0].answers[0].upper()) == [rc[0].answers[0]]
    assert read_reply(record, rc[0], "Nobody") is None


def test_worker_says_how_many_training_items_fit(fake):
    task, data = task_and_data("label")
    fake.window = 260
    with pytest.raises(AdapterError) as err:
        METHODS["worker"]().run(task, data, data[:2], cfg(fake))
    message = str(err.value)
    assert "context window (260 tokens)" in message and "training item(s) fit" in message
    n_fit = int(message.split("training item(s) fit")[0].split()[-1])
    assert 0 < n_fit < len(data)
    # exactly that many training requests were answered before the refusal
    assert len(fake.answered) == n_fit
