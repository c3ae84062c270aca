"""What a server backend checks before it trusts a server, against the real HTTP fake (tests/baselines/
fake_openai.py): echoed log-probabilities proved on first use, the context window fitted once per (server,
model, task), answers streamed as events, a model served but not listed, endpoint URLs, quiet logs, the worker's
second try, and no model-hub traffic for a model that is not here."""

from __future__ import annotations

import logging
import time

import pytest

from fewshot_models import METHODS, AdapterConfig, AdapterError
from fewshot_models import icl as icl_module
from fewshot_models.backends import BACKENDS, BackendError, ChatRequest, open_backend
from fewshot_models.backends.http import normalise_base_url
from fewshot_models.backends.openai import OpenAIBackend
from fewshot_models.base import AdapterExample, ModelNotFound, local_model_problem
from fewshot_models.worker import UNPRODUCIBLE_NOTE, feedback_text
from tests.adapters.adapter_helpers import task_and_data
from tests.baselines.fake_openai import TOKEN, FakeOpenAI


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", TOKEN)
    monkeypatch.setattr(OpenAIBackend, "backoff", 0.02)
    # what a process learns about servers is the test's own
    monkeypatch.setattr(icl_module, "SERVER_FITS", {})
    monkeypatch.setattr(OpenAIBackend, "learned_windows", {})
    monkeypatch.setattr(OpenAIBackend, "answered_for", set())
    with FakeOpenAI() as server:
        yield server


def cfg(fake, **kw):
    base = {"model": "tiny-model", "backend": "openai", "server": fake.base_url, "max_retries": 2, "timeout": 5.0}
    return AdapterConfig(**{**base, **kw})


def posts(fake):
    return [c for c in fake.calls if c["body"] is not None]


# --------------------------------------------------------------------------- log-likelihood proves itself


def test_an_echo_shifted_by_one_token_is_refused_and_icl_generates(fake):
    fake.echo_shift = True
    fake.complete = lambda prompt: " none of these"  # the model's own continuation: three tokens
    task, data = task_and_data("label")
    result = METHODS["icl"]().run(task, data, data[:3], cfg(fake))
    notes = result.notes
    assert notes["echo_logprobs"] is False and "disagree" in notes["echo_refused"]
    assert "shifted by a token" in notes["echo_refused"]
    assert "generation" in notes["scoring"] and "log-likelihood" not in notes["scoring"]
    # after the check, no continuation was scored through the echo: every later request generates
    assert [b.get("echo", False) for b in fake.answered[2:]] == [False] * (len(fake.answered) - 2)


def test_the_same_echo_aligned_is_trusted(fake):
    fake.complete = lambda prompt: " none of these"
    task, data = task_and_data("label")
    result = METHODS["icl"]().run(task, data, data[:3], cfg(fake))
    assert result.notes["echo_logprobs"] is True and "echo_refused" not in result.notes
    assert result.notes["scoring"].startswith("summed log-likelihood")


def test_no_prompt_logprobs_means_generation_said_in_the_notes(fake):
    fake.no_prompt_logprobs = True
    task, data = task_and_data("label")
    result = METHODS["icl"]().run(task, data, data[:2], cfg(fake))
    assert result.notes["echo_refused"] == "the server returns no log-probabilities for the prompt's tokens (echo)"
    assert "read as a worker's choice" in result.notes["scoring"]
    assert len(result.predictions) == 2


# --------------------------------------------------------------------------- the context window, fitted once


def _long_test(data, words=60):
    return [AdapterExample(**{**ex.__dict__, "context": " ".join(["word"] * words)}) for ex in data[:3]]


def test_a_window_too_small_for_the_demonstrations_is_refused_once_per_task_and_model(fake):
    task, data = task_and_data("label")
    test = _long_test(data)
    demo_words = sum(len(d.context.split()) + len(d.question.split()) + 3 for d in data)
    fake.window = demo_words // 2 + 80  # about half the demonstrations fit with a test item
    first = METHODS["icl"]().run(task, data, test, cfg(fake))
    refused = [c for c in fake.calls if c["status"] == 400]
    assert len(refused) == 1 and first.usage["refused"] == 1
    assert first.notes["context_fit"]["refused"] == 1 and first.notes["context_fit"]["window"] == fake.window
    used = first.notes["demonstrations_used"]
    assert 0 < min(used) and max(used) < len(data)  # fewer demonstrations, chosen once, never halved per item
    # every prompt sent after the refusal fitted, and another run on the same task and model is refused nothing
    second = METHODS["icl"]().run(task, data[1:], test, cfg(fake, seed=7))
    assert len([c for c in fake.calls if c["status"] == 400]) == 1 and second.usage["refused"] == 0
    assert second.notes["context_fit"]["measured"] is False


def test_a_window_the_server_lists_is_never_exceeded(fake):
    task, data = task_and_data("label")
    fake.window = sum(len(d.context.split()) + len(d.question.split()) + 3 for d in data) // 2 + 80
    fake.advertise_window = True  # vLLM's max_model_len in /v1/models
    result = METHODS["icl"]().run(task, data, _long_test(data), cfg(fake))
    assert not [c for c in fake.calls if c["status"] == 400] and result.usage["refused"] == 0
    assert result.notes["window"] == fake.window and max(result.notes["demonstrations_used"]) < len(data)


def test_a_test_item_alone_too_long_fails_before_anything_is_sent(fake):
    task, data = task_and_data("label")
    fake.window = 40
    fake.advertise_window = True
    with pytest.raises(AdapterError, match="alone .* does not fit the model's context window"):
        METHODS["icl"]().run(task, data, _long_test(data, words=200), cfg(fake))
    assert not [c for c in fake.calls if c["status"] == 400]


# --------------------------------------------------------------------------- servers as they are


def test_answers_streamed_as_events_are_read_as_one(fake):
    fake.stream = True  # transformers serve 4.x streams every chat answer
    fake.reply = lambda body: "the capital is Paris"
    with open_backend(cfg(fake), method="worker") as backend:
        assert backend.chat([ChatRequest(messages=(("user", "hi"),), max_tokens=8)]) == ["the capital is Paris"]


def test_a_model_served_but_not_listed_is_asked_for_once(fake):
    fake.unlisted = ["/models/tiny-llama"]  # transformers serve lists a fixed catalogue, loads any checkpoint
    server = BACKENDS["openai"].check(["/models/tiny-llama"], fake.base_url)
    assert server == fake.base_url and len(posts(fake)) == 1
    with open_backend(cfg(fake, model="/models/tiny-llama"), method="worker") as backend:
        backend.chat([ChatRequest(messages=(("user", "hi"),), max_tokens=2)])
        assert backend.tally.requests == 1
    assert len(posts(fake)) == 2  # the one-token question was not asked again
    with pytest.raises(BackendError, match=r"does not serve /models/other; it offers: tiny-model"):
        BACKENDS["openai"].check(["/models/other"], fake.base_url)


def test_a_full_endpoint_url_is_read_as_its_base(fake):
    assert normalise_base_url(fake.base_url + "/chat/completions") == fake.base_url
    assert normalise_base_url(fake.base_url + "/completions/") == fake.base_url
    assert BACKENDS["openai"].check(["tiny-model"], fake.base_url + "/chat/completions") == fake.base_url
    bare = fake.base_url.removesuffix("/v1")
    with pytest.raises(BackendError, match=rf"the base URL usually ends in /v1: {bare}/v1\?"):
        BACKENDS["openai"].check(["tiny-model"], bare)


def test_the_request_lines_of_httpx_are_at_debug(fake, caplog):
    caplog.set_level(logging.INFO)
    with open_backend(cfg(fake), method="worker") as backend:
        backend.chat([ChatRequest(messages=(("user", "hi"),), max_tokens=2)])
    assert "HTTP Request" not in caplog.text
    caplog.clear()
    caplog.set_level(logging.DEBUG)
    with open_backend(cfg(fake), method="worker") as backend:
        backend.chat([ChatRequest(messages=(("user", "hi"),), max_tokens=2)])
    assert "HTTP Request: POST" in caplog.text and TOKEN not in caplog.text


def test_a_failure_stops_the_window_at_what_is_in_flight(fake):
    fake.latency = 0.02
    fake.fail_after = 10
    with open_backend(cfg(fake, concurrency=4, max_retries=0), method="worker") as backend:
        with pytest.raises(BackendError, match="503"):
            backend.chat([ChatRequest(messages=(("user", f"hi {i}"),), max_tokens=2) for i in range(200)])
    # the failing thread stops the window; the others finish what they hold (at most one more each)
    assert fake.max_in_flight <= 4 and len(posts(fake)) <= 10 + 2 * 4  # not the 200


# --------------------------------------------------------------------------- the worker mirrors the human page


def test_an_invalid_reply_gets_the_validation_message_and_one_more_try(fake):
    task, data = task_and_data("label")

    def reply(body):
        last = body["messages"][-1]["content"]
        return "negative" if "Please answer again" in last else "I think it is good"

    fake.reply = reply
    result = METHODS["worker"]().run(task, data[:2], data[2:4], cfg(fake))
    retries = [b for b in fake.answered if "Please answer again" in b["messages"][-1]["content"]]
    assert len(retries) == 4  # two training items, two test items
    assert "'I think it is good' is not a label of" in retries[0]["messages"][-1]["content"]
    assert result.predictions == [["negative"], ["negative"]] and result.notes["unparseable_replies"] == 0
    assert result.notes["re_asked_items"] == [ex.uid for ex in data[:4]] or len(result.notes["re_asked_items"]) == 4
    assert result.usage["requests"] == 8
    # the training conversation goes on after the second try, as the page does
    last_training = [b for b in fake.answered if "Training item 2 of 2" in b["messages"][-1]["content"]][0]
    assert any("Please answer again" in m["content"] for m in last_training["messages"])


def test_feedback_says_when_the_gold_cannot_be_marked_exactly():
    task, data = task_and_data("spans")
    ex = data[0]
    quirky = AdapterExample(**{**ex.__dict__, "gold_unproducible": True})
    assert UNPRODUCIBLE_NOTE in feedback_text(task, quirky, [])[0]
    assert UNPRODUCIBLE_NOTE not in feedback_text(task, ex, [])[0]


# --------------------------------------------------------------------------- nothing from the model hub


def test_an_unknown_bare_model_name_fails_at_once_in_one_line(monkeypatch, tmp_path):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path))  # an empty cache
    start = time.monotonic()
    problem = local_model_problem("no-such-org/no-such-model")
    assert "not a local folder, and not in the Hugging Face cache" in problem and "\n" not in problem
    assert "--models ft=/path/to/checkpoint" in problem
    task, data = task_and_data("label")
    with pytest.raises(ModelNotFound) as err:
        METHODS["ft"]().run(task, data, data[:2], AdapterConfig(model="no-such-org/no-such-model", device="cpu"))
    assert str(err.value).startswith("ft: no model 'no-such-org/no-such-model'") and "\n" not in str(err.value)
    assert time.monotonic() - start < 5
    assert (
        local_model_problem(str(tmp_path))
        == f"{str(tmp_path)!r} is a folder without config.json: not a saved checkpoint"
    )
