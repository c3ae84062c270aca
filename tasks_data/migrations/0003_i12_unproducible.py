from django.db import migrations, models

# The rule of tasks_data.importer.gold_unproducible, as it stood when this field was added: a
# re-import of unchanged data writes nothing (same fingerprint), so rows already imported are
# flagged here.
_SPANS = {"conll03", "wikiann"}
_MRC = {"squad2", "record"}


def flag(apps, schema_editor):
    Example = apps.get_model("tasks_data", "Example")
    flagged = []
    for example in Example.objects.filter(task__slug__in=_SPANS | _MRC).select_related("task").iterator():
        gold = [g for g in example.gold if g]
        missing = [g for g in gold if g not in example.context]
        if gold and (bool(missing) if example.task.slug in _SPANS else len(missing) == len(gold)):
            flagged.append(example.pk)
    Example.objects.filter(pk__in=flagged).update(gold_unproducible=True)
    # SST-2 test ids are row numbers, written as JSON numbers (the official and demo data).
    numbers = [pk for pk, clues_id in Example.objects.filter(task__slug="sst2", role="test")
               .values_list("pk", "clues_id") if clues_id.isdigit()]
    Example.objects.filter(pk__in=numbers).update(clues_id_is_number=True)


class Migration(migrations.Migration):
    dependencies = [
        ("tasks_data", "0002_trainingsetitem_example_restrict"),
    ]

    operations = [
        migrations.AddField(
            model_name="example",
            name="gold_unproducible",
            field=models.BooleanField(
                default=False,
                help_text="A gold string cannot be found in the context (MRC: no alternative can): full credit is "
                          "impossible.",
            ),
        ),
        migrations.AddField(
            model_name="example",
            name="clues_id_is_number",
            field=models.BooleanField(
                default=False,
                help_text="Test items: the file writes the id as a JSON number (SST-2), and exports do too.",
            ),
        ),
        migrations.RunPython(flag, migrations.RunPython.noop),
    ]
