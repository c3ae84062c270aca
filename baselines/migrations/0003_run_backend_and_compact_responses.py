"""The backend joins a run's identity; kept answers become compact (the request's hash and what scoring needs).

Existing runs keep every field and get the backend they ran on: the one their config names, else the server's
(a run with a server ran on one) or the in-process one (a run with a model), else none (reference predictors).
The names are the registry's as they were when this migration was written. Existing answers are kept whole,
compressed (``{"raw": answer}``: the backend reads them again when a run resumes); their request bodies go.
"""

import json
import zlib

from django.db import migrations, models

SERVER_BACKEND, IN_PROCESS_BACKEND = "openai", "transformers"
NO_MODEL = ("empty", "majority")


def fill_backend(apps, schema_editor):
    BaselineRun = apps.get_model("baselines", "BaselineRun")
    for run in BaselineRun.objects.all().only("pk", "method", "server", "config"):
        named = (run.config or {}).get("backend") if isinstance(run.config, dict) else None
        if not named:
            named = SERVER_BACKEND if run.server else ("" if run.method in NO_MODEL else IN_PROCESS_BACKEND)
        BaselineRun.objects.filter(pk=run.pk).update(backend=named)


def pack_responses(apps, schema_editor):
    BaselineResponse = apps.get_model("baselines", "BaselineResponse")
    for row in BaselineResponse.objects.all().only("pk", "response").iterator():
        blob = json.dumps({"raw": row.response}, ensure_ascii=False, separators=(",", ":")).encode()
        BaselineResponse.objects.filter(pk=row.pk).update(data=zlib.compress(blob, 9))


class Migration(migrations.Migration):
    dependencies = [("baselines", "0002_run_server_usage_and_kept_responses")]

    operations = [
        migrations.AddField(
            model_name="baselinerun",
            name="backend",
            field=models.CharField(
                blank=True,
                default="",
                help_text="where the model ran (fewshot_models.backends.BACKENDS)",
                max_length=40,
            ),
        ),
        migrations.RunPython(fill_backend, migrations.RunPython.noop),
        migrations.RemoveConstraint(model_name="baselinerun", name="baselinerun_unique_run_per_server"),
        migrations.AddConstraint(
            model_name="baselinerun",
            constraint=models.UniqueConstraint(
                fields=("task", "method", "model", "backend", "server", "shots", "split", "seed"),
                name="baselinerun_unique_run_per_backend",
            ),
        ),
        migrations.AddField(model_name="baselineresponse", name="data", field=models.BinaryField(null=True)),
        migrations.RunPython(pack_responses, migrations.RunPython.noop),
        migrations.RemoveField(model_name="baselineresponse", name="request"),
        migrations.RemoveField(model_name="baselineresponse", name="response"),
        migrations.AlterField(
            model_name="baselineresponse",
            name="data",
            field=models.BinaryField(
                help_text="zlib-compressed JSON: what scoring needs of the answer, and its usage"
            ),
        ),
    ]
