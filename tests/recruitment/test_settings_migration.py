"""A database from before the providers kept their own records (``manual_review`` on the study, the cohort's
Prolific study id and the enrollment's submission status in annotation's tables) migrates forward with every
value in the recruitment app's records, and back again: on PostgreSQL here, on SQLite in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

REPO = Path(__file__).resolve().parents[2]
BEFORE = [("annotation", "0009_enrollment_left_out"), ("recruitment", "0002_prolific_webhooks")]


def _fill(apps) -> dict:
    """Studies, cohorts and enrollments written with the models as they were (the old columns)."""
    model = apps.get_model
    user = model("auth", "User").objects.create(username="mira", password="!")
    task = model("tasks_data", "Task").objects.create(slug="sst2", source="test", fingerprint="f")
    Study, Cohort = model("annotation", "Study"), model("annotation", "Cohort")
    Worker, Enrollment = model("annotation", "Worker"), model("annotation", "Enrollment")

    def study(name, platform, manual):
        return Study.objects.create(
            name=name,
            created_by=user,
            tasks=["sst2"],
            shots=[0],
            platform=platform,
            manual_review=manual,
            completion_code="C" + name,
            screenout_code="S" + name,
        )

    reviewed, automatic, generic = (
        study("rev", "prolific", True),
        study("auto", "prolific", False),
        study("gen", "generic", True),
    )
    plain = study("plain", "generic", False)

    def cohort(of, token, prolific_study_id=""):
        return Cohort.objects.create(
            study=of, task=task, shots=0, target=3, join_token=token, platform_study_id=prolific_study_id
        )

    counted = cohort(reviewed, "t1", "a" * 24)  # published, places counted
    model("recruitment", "ProlificPlaces").objects.create(cohort=counted, given_back=2, total=5)
    uncounted = cohort(automatic, "t2", "b" * 24)  # published, no places row yet
    unpublished = cohort(generic, "t3")
    enrollments = {}
    for n, (where, status) in enumerate([(counted, "APPROVED"), (counted, "AWAITING REVIEW"), (uncounted, "")]):
        worker = Worker.objects.create(platform="prolific", external_id=f"{n:024x}")
        enrollments[status or "none"] = Enrollment.objects.create(
            cohort=where, worker=worker, task=task, state="completed", order_seed=n, platform_status=status
        ).pk
    return {
        "studies": {s.name: s.pk for s in (reviewed, automatic, generic, plain)},
        "cohorts": {"counted": counted.pk, "uncounted": uncounted.pk, "unpublished": unpublished.pk},
        "enrollments": enrollments,
    }


def check_settings_migration() -> None:
    """Migrate the connected database back to before the move, fill it, migrate forward, check; then back."""
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    executor.loader.build_graph()
    ids = _fill(executor.loader.project_state(BEFORE).apps)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())

    from recruitment.models import ProlificCohort, ProlificStudy, ProlificSubmission

    studies, cohorts, enrollments = ids["studies"], ids["cohorts"], ids["enrollments"]
    # Every Prolific study has its settings row; a generic study keeps the manual review set on it.
    assert dict(ProlificStudy.objects.values_list("study_id", "manual_review")) == {
        studies["rev"]: True,
        studies["auto"]: False,
        studies["gen"]: True,
    }
    assert sorted(
        ProlificCohort.objects.values_list("cohort_id", "prolific_study_id", "given_back", "total")
    ) == sorted([(cohorts["counted"], "a" * 24, 2, 5), (cohorts["uncounted"], "b" * 24, 0, 3)])
    assert dict(ProlificSubmission.objects.values_list("enrollment_id", "status")) == {
        enrollments["APPROVED"]: "APPROVED",
        enrollments["AWAITING REVIEW"]: "AWAITING REVIEW",
    }
    # Read as the platform reads them now.
    from annotation.models import Study

    assert Study.objects.get(pk=studies["rev"]).provider.load_settings(Study.objects.get(pk=studies["rev"])) == {
        "manual_review": True
    }

    # And back: the old columns hold the same values again.
    executor.loader.build_graph()
    executor.migrate(BEFORE)
    executor.loader.build_graph()
    old = executor.loader.project_state(BEFORE).apps
    assert dict(old.get_model("annotation", "Study").objects.values_list("name", "manual_review")) == {
        "rev": True,
        "auto": False,
        "gen": True,
        "plain": False,
    }
    assert dict(old.get_model("annotation", "Cohort").objects.values_list("pk", "platform_study_id")) == {
        cohorts["counted"]: "a" * 24,
        cohorts["uncounted"]: "b" * 24,
        cohorts["unpublished"]: "",
    }
    assert sorted(old.get_model("annotation", "Enrollment").objects.values_list("platform_status", flat=True)) == [
        "",
        "APPROVED",
        "AWAITING REVIEW",
    ]
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.mark.django_db(transaction=True)
def test_the_platform_columns_move_to_the_recruitment_records_and_back_on_postgresql():
    if connection.vendor != "postgresql":
        pytest.skip("this run is on SQLite: the SQLite test below covers it")
    check_settings_migration()


def test_the_platform_columns_move_to_the_recruitment_records_and_back_on_sqlite(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL")}
    env["DATABASE_URL"] = f"sqlite:///{tmp_path / 'old.sqlite3'}"
    script = (
        "import django; django.setup(); from django.core.management import call_command; "
        "call_command('migrate', verbosity=0); "
        "from tests.recruitment.test_settings_migration import check_settings_migration; "
        "check_settings_migration(); print('every value moved and back')"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**env, "DJANGO_SETTINGS_MODULE": "clues_platform.settings", "PYTHONPATH": str(REPO)},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "every value moved and back" in result.stdout
