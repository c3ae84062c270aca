"""The migrations that put the server, then the backend, in a run's identity keep every existing run, and kept
answers stay usable (compressed) when the responses become compact."""

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor

BEFORE = ("baselines", "0001_initial")
AFTER = ("baselines", "0002_run_server_usage_and_kept_responses")


@pytest.mark.django_db(transaction=True)
def test_existing_runs_are_kept_and_the_server_joins_their_identity():
    executor = MigrationExecutor(connection)
    executor.migrate([BEFORE])
    old = executor.loader.project_state([BEFORE]).apps
    task = old.get_model("tasks_data", "Task").objects.create(slug="sst2", source="test", fingerprint="0" * 64)
    run = old.get_model("baselines", "BaselineRun").objects.create(
        task=task,
        method="ft",
        model="/models/bert",
        shots=10,
        split=1,
        seed=42,
        status="completed",
        s1=0.61,
        predictions=[{"id": "1", "prediction": ["positive"]}],
        item_scores=[1.0],
    )
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())

    from baselines.models import BaselineRun

    kept = BaselineRun.objects.get(pk=run.pk)
    assert (kept.server, kept.backend, kept.s1, kept.status, kept.usage, kept.predictions) == (
        "",
        "transformers",
        0.61,
        "completed",
        None,
        [{"id": "1", "prediction": ["positive"]}],
    )
    # the same model on another server is another run; on the same server and backend, still one
    BaselineRun.objects.create(
        task_id=task.pk,
        method="ft",
        model="/models/bert",
        backend="openai",
        server="http://a:8000/v1",
        shots=10,
        split=1,
        seed=42,
    )
    with pytest.raises(IntegrityError), transaction.atomic():
        BaselineRun.objects.create(
            task_id=task.pk, method="ft", model="/models/bert", backend="transformers", shots=10, split=1, seed=42
        )


@pytest.mark.django_db(transaction=True)
def test_the_backend_joins_the_identity_and_kept_answers_are_compressed_not_lost():
    from fewshot_models.backends.base import Tally
    from fewshot_models.backends.http import Exchange, request_key

    executor = MigrationExecutor(connection)
    executor.migrate([AFTER])
    old = executor.loader.project_state([AFTER]).apps
    task = old.get_model("tasks_data", "Task").objects.create(slug="sst2", source="test", fingerprint="0" * 64)
    Run, Response = old.get_model("baselines", "BaselineRun"), old.get_model("baselines", "BaselineResponse")
    common = {"task": task, "shots": 10, "split": 1, "seed": 42, "status": "completed", "s1": 0.5}
    served = Run.objects.create(
        method="worker", model="qwen", server="http://gpu:8000/v1", config={"backend": "openai"}, **common
    )
    local = Run.objects.create(method="icl", model="/models/gpt2", **common)
    reference = Run.objects.create(method="majority", model="", **common)
    body = {"model": "qwen", "messages": [{"role": "user", "content": "Text: fine"}], "max_tokens": 4}
    key = request_key("http://gpu:8000/v1/chat/completions", body)
    answer = {"choices": [{"message": {"role": "assistant", "content": "positive"}}], "usage": {"prompt_tokens": 9}}
    Response.objects.create(run=served, key=key, request={"url": "...", "body": body}, response=answer)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())

    from baselines.models import BaselineResponse, BaselineRun
    from baselines.store import RunStore

    backends = dict(BaselineRun.objects.values_list("pk", "backend"))
    assert backends == {served.pk: "openai", local.pk: "transformers", reference.pk: ""}
    row = BaselineResponse.objects.get()
    assert row.key == key and row.record == {"raw": answer} and not hasattr(row, "request")
    # a run resumed after the migration reads the kept answer again and sends nothing (nothing listens there)
    store = RunStore(BaselineRun.objects.get(pk=served.pk))
    exchange = Exchange(
        "http://gpu:8000/v1", headers={}, concurrency=1, timeout=1, max_retries=0, store=store, tally=Tally()
    )
    try:
        got = exchange.ask("chat/completions", [body], [lambda d: d["choices"][0]["message"]["content"]])
    finally:
        exchange.close()
    assert got == ["positive"] and exchange.tally.resumed == 1 and exchange.tally.requests == 0
