"""The Prolific records move to the recruitment app (their tables are renamed, every row kept); the platform
fields of cohorts and enrollments get platform-neutral names, and the platform choices come from the crowd
provider registry."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

import crowd

MOVED = ("prolificcredential", "participantgroup", "bonuspayment", "prolificplaces")


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0006_pay_currency_prolific_places"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RenameField("cohort", "prolific_study_id", "platform_study_id"),
        migrations.RenameField("enrollment", "prolific_status", "platform_status"),
        migrations.SeparateDatabaseAndState(
            # The tables take the recruitment app's names; recruitment's first migration adds the models to its
            # state without touching the database.
            database_operations=[migrations.AlterModelTable(name, f"recruitment_{name}") for name in MOVED],
            state_operations=[migrations.DeleteModel(name) for name in MOVED],
        ),
        migrations.AlterField(
            model_name='enrollment',
            name='platform_status',
            field=models.CharField(blank=True, help_text='Last status of the submission seen on the crowd platform.', max_length=20),
        ),
        migrations.AlterField(
            model_name='study',
            name='closed_at',
            field=models.DateTimeField(blank=True, editable=False, null=True),
        ),
        migrations.AlterField(
            model_name='study',
            name='created_by',
            field=models.ForeignKey(editable=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL),
        ),
        migrations.AlterField(
            model_name='study',
            name='platform',
            field=models.CharField(choices=crowd.choices, default='prolific', help_text='Where the workers come from.', max_length=10, verbose_name='recruitment platform'),
        ),
        migrations.AlterField(
            model_name='worker',
            name='platform',
            field=models.CharField(choices=crowd.choices, max_length=10),
        ),
    ]
