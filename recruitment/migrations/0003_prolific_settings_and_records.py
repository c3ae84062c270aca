"""The study, cohort and enrollment columns only Prolific used move here, every value kept: a study's manual
review to ``ProlificStudy``, a cohort's Prolific study id to its places row (renamed ``ProlificCohort``), an
enrollment's last submission status to ``ProlificSubmission``. The annotation app drops the columns next
(its migration after this one)."""

import django.db.models.deletion
from django.db import migrations, models


def forward(apps, schema_editor):
    Study = apps.get_model("annotation", "Study")
    Cohort = apps.get_model("annotation", "Cohort")
    Enrollment = apps.get_model("annotation", "Enrollment")
    ProlificStudy = apps.get_model("recruitment", "ProlificStudy")
    ProlificCohort = apps.get_model("recruitment", "ProlificCohort")
    ProlificSubmission = apps.get_model("recruitment", "ProlificSubmission")
    # Every Prolific study gets its settings row; another platform's study keeps a manual review set on it.
    ProlificStudy.objects.bulk_create(
        ProlificStudy(study_id=pk, manual_review=manual)
        for pk, manual in Study.objects.filter(models.Q(platform="prolific") | models.Q(manual_review=True))
        .values_list("pk", "manual_review")
        .iterator()
    )
    published = Cohort.objects.exclude(platform_study_id="").values_list("pk", "platform_study_id", "target")
    for pk, prolific_study_id, target in published.iterator():
        updated = ProlificCohort.objects.filter(cohort_id=pk).update(prolific_study_id=prolific_study_id)
        if not updated:  # published before places were counted: none given back yet
            ProlificCohort.objects.create(cohort_id=pk, prolific_study_id=prolific_study_id, total=target)
    ProlificSubmission.objects.bulk_create(
        ProlificSubmission(enrollment_id=pk, status=status)
        for pk, status in Enrollment.objects.exclude(platform_status="").values_list("pk", "platform_status").iterator()
    )


def backward(apps, schema_editor):
    Study = apps.get_model("annotation", "Study")
    Cohort = apps.get_model("annotation", "Cohort")
    Enrollment = apps.get_model("annotation", "Enrollment")
    ProlificStudy = apps.get_model("recruitment", "ProlificStudy")
    ProlificCohort = apps.get_model("recruitment", "ProlificCohort")
    ProlificSubmission = apps.get_model("recruitment", "ProlificSubmission")
    for study_id, manual in ProlificStudy.objects.values_list("study_id", "manual_review").iterator():
        Study.objects.filter(pk=study_id).update(manual_review=manual)
    for cohort_id, prolific_study_id in ProlificCohort.objects.values_list("cohort_id", "prolific_study_id").iterator():
        Cohort.objects.filter(pk=cohort_id).update(platform_study_id=prolific_study_id)
    for enrollment_id, status in ProlificSubmission.objects.values_list("enrollment_id", "status").iterator():
        Enrollment.objects.filter(pk=enrollment_id).update(platform_status=status)


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0009_enrollment_left_out"),
        ("recruitment", "0002_prolific_webhooks"),
    ]

    operations = [
        migrations.RenameModel("ProlificPlaces", "ProlificCohort"),
        migrations.AlterField(
            model_name="prolificcohort",
            name="cohort",
            field=models.OneToOneField(
                on_delete=django.db.models.deletion.CASCADE, related_name="prolific", to="annotation.cohort"
            ),
        ),
        migrations.AddField(
            model_name="prolificcohort",
            name="prolific_study_id",
            field=models.CharField(blank=True, help_text="Empty: not published on Prolific.", max_length=64),
        ),
        migrations.CreateModel(
            name="ProlificStudy",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "manual_review",
                    models.BooleanField(
                        default=False,
                        help_text="Never approve Prolific submissions automatically.",
                        verbose_name="Prolific: review every submission by hand",
                    ),
                ),
                (
                    "study",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE, related_name="prolific", to="annotation.study"
                    ),
                ),
            ],
            options={"verbose_name_plural": "Prolific studies"},
        ),
        migrations.CreateModel(
            name="ProlificSubmission",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("status", models.CharField(blank=True, max_length=20)),
                ("updated_at", models.DateTimeField(auto_now=True)),
                (
                    "enrollment",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="prolific_submission",
                        to="annotation.enrollment",
                    ),
                ),
            ],
        ),
        migrations.RunPython(forward, backward),
    ]
