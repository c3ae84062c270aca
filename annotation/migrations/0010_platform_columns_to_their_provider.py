"""The columns only one crowd platform used leave the study, cohort and enrollment (the recruitment app's
migration before this one copied every value into its own records); a platform without an app of its own
keeps its per-study settings in ``Study.platform_settings``."""

import django.core.serializers.json
import django.core.validators
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0009_enrollment_left_out"),
        ("recruitment", "0003_prolific_settings_and_records"),
    ]

    operations = [
        migrations.RemoveField(model_name="cohort", name="platform_study_id"),
        migrations.RemoveField(model_name="enrollment", name="platform_status"),
        migrations.RemoveField(model_name="study", name="manual_review"),
        migrations.AddField(
            model_name="study",
            name="platform_settings",
            field=models.JSONField(
                blank=True, default=dict, editable=False, encoder=django.core.serializers.json.DjangoJSONEncoder
            ),
        ),
        migrations.AlterField(
            model_name="study",
            name="expected_minutes",
            field=models.PositiveIntegerField(
                default=30,
                help_text="The platform's reward and the default time limit (twice it) follow.",
                validators=[
                    django.core.validators.MinValueValidator(1),
                    django.core.validators.MaxValueValidator(43200),
                ],
                verbose_name="expected duration (minutes)",
            ),
        ),
        migrations.AlterField(
            model_name="study",
            name="pay_currency",
            field=models.CharField(
                choices=[("USD", "USD"), ("GBP", "GBP")],
                default="USD",
                help_text="The currency of the pay rate (your recruitment platform account's currency).",
                max_length=3,
            ),
        ),
    ]
