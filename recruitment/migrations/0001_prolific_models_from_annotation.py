"""The Prolific records, moved here from the annotation app with their tables and rows."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('annotation', '0007_prolific_models_to_recruitment'),
        ('tasks_data', '0004_example_answer_starts'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        # The tables exist already (annotation's 0007 renamed them): only the state learns the models.
        migrations.SeparateDatabaseAndState(state_operations=[
                migrations.CreateModel(
                    name='BonusPayment',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('amount', models.DecimalField(decimal_places=2, max_digits=8)),
                        ('active_seconds', models.FloatField()),
                        ('state', models.CharField(choices=[('planned', 'Planned'), ('set_up', 'Set Up'), ('paying', 'Paying'), ('paid', 'Paid')], default='planned', max_length=8)),
                        ('prolific_bulk_id', models.CharField(blank=True, max_length=64)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('paid_at', models.DateTimeField(blank=True, null=True)),
                        ('enrollment', models.OneToOneField(on_delete=django.db.models.deletion.PROTECT, related_name='bonus', to='annotation.enrollment')),
                    ],
                ),
                migrations.CreateModel(
                    name='ProlificCredential',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('token_encrypted', models.TextField()),
                        ('updated_at', models.DateTimeField(auto_now=True)),
                        ('owner', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='prolific_credential', to=settings.AUTH_USER_MODEL)),
                    ],
                ),
                migrations.CreateModel(
                    name='ProlificPlaces',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('given_back', models.PositiveIntegerField(default=0)),
                        ('total', models.PositiveIntegerField(default=0, help_text='The last total_available_places Prolific accepted.')),
                        ('updated_at', models.DateTimeField(auto_now=True)),
                        ('cohort', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='prolific_places', to='annotation.cohort')),
                    ],
                ),
                migrations.CreateModel(
                    name='ParticipantGroup',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('prolific_id', models.CharField(max_length=64)),
                        ('owner', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to=settings.AUTH_USER_MODEL)),
                        ('task', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='tasks_data.task')),
                    ],
                    options={
                        'constraints': [models.UniqueConstraint(fields=('owner', 'task'), name='participant_group_per_task')],
                    },
                ),
        ]),
    ]
