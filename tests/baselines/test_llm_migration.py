"""The migration that puts the server in a run's identity keeps every existing run (server "", its figures)."""

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
    assert (kept.server, kept.s1, kept.status, kept.usage, kept.predictions) == (
        "",
        0.61,
        "completed",
        None,
        [{"id": "1", "prediction": ["positive"]}],
    )
    # the same model on another server is another run; on the same server, still one
    BaselineRun.objects.create(
        task_id=task.pk, method="ft", model="/models/bert", server="http://a:8000/v1", shots=10, split=1, seed=42
    )
    with pytest.raises(IntegrityError), transaction.atomic():
        BaselineRun.objects.create(
            task_id=task.pk, method="ft", model="/models/bert", server="", shots=10, split=1, seed=42
        )
