"""A database migrated at the layout before the crowd providers and the recruitment app (annotation holding
the Prolific models, ``prolific_*`` fields), holding a study with answers, audit rows and Prolific rows,
migrates forward to today's layout with every row kept: on PostgreSQL here, and on SQLite in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

REPO = Path(__file__).resolve().parents[2]
BEFORE = [("annotation", "0006_pay_currency_prolific_places"), ("recruitment", None)]
AT = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def _fill_old_layout(apps) -> dict:
    """One of everything, written with the models as they were (historical models of the old state)."""
    model = apps.get_model
    user = model("auth", "User").objects.create(username="rita", password="!")
    task = model("tasks_data", "Task").objects.create(slug="sst2", source="test", fingerprint="f")
    example = model("tasks_data", "Example").objects.create(
        task=task,
        role="test",
        identity="e7",
        position=0,
        clues_id="7",
        context="a fine film",
        question="q",
        gold=["positive"],
    )
    study = model("annotation", "Study").objects.create(
        name="old",
        created_by=user,
        tasks=["sst2"],
        shots=[0],
        platform="prolific",
        completion_code="CDONE",
        screenout_code="SOUT",
    )
    cohort = model("annotation", "Cohort").objects.create(
        study=study, task=task, shots=0, target=3, join_token="tok", prolific_study_id="a" * 24
    )
    worker = model("annotation", "Worker").objects.create(platform="prolific", external_id="b" * 24)
    enrollment = model("annotation", "Enrollment").objects.create(
        cohort=cohort,
        worker=worker,
        task=task,
        state="completed",
        order_seed=1,
        platform_session="c" * 24,
        verification="verified",
        prolific_status="APPROVED",
    )
    model("annotation", "Answer").objects.create(
        enrollment=enrollment, example=example, step="test", position=0, texts=["positive"], s1=1.0
    )
    model("annotation", "AuditEvent").objects.create(
        study=study, enrollment=enrollment, actor="worker", action="join", to_state="testing"
    )
    model("annotation", "ProlificCredential").objects.create(owner=user, token_encrypted="encrypted")
    model("annotation", "ParticipantGroup").objects.create(owner=user, task=task, prolific_id="d" * 24)
    model("annotation", "BonusPayment").objects.create(
        enrollment=enrollment,
        amount=Decimal("1.25"),
        active_seconds=600,
        state="paid",
        prolific_bulk_id="bulk",
        paid_at=AT,
    )
    model("annotation", "ProlificPlaces").objects.create(cohort=cohort, given_back=1, total=4)
    return {"study": study.pk, "cohort": cohort.pk, "enrollment": enrollment.pk}


def check_forward_migration() -> None:
    """Migrate the connected database back to the old layout, fill it, migrate forward, and check every row."""
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    executor.loader.build_graph()
    # The old layout of the moved apps, beside every other app as it is now (its tables are as they are now).
    # (An app whose migrations need a later state of the moved apps, such as results, is left out: its models are
    # not written here.)
    graph, moved = executor.loader.graph, {"annotation", "recruitment"}
    before = set(graph.forwards_plan(BEFORE[0]))
    others = [
        node
        for node in graph.leaf_nodes()
        if node[0] not in moved and not any(d[0] in moved and d not in before for d in graph.forwards_plan(node))
    ]
    ids = _fill_old_layout(executor.loader.project_state([BEFORE[0], *others]).apps)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())

    from annotation.models import Answer, AuditEvent, Cohort, Enrollment, Study
    from recruitment.models import BonusPayment, ParticipantGroup, ProlificCohort, ProlificCredential
    from recruitment.records import status_of, study_id_of

    study = Study.objects.get(pk=ids["study"])
    assert (study.name, study.platform, study.provider.name) == ("old", "prolific", "Prolific")
    assert study_id_of(ids["cohort"]) == "a" * 24
    enrollment = Enrollment.objects.get(pk=ids["enrollment"])
    assert (status_of(enrollment), enrollment.verification, enrollment.state) == (
        "APPROVED",
        "verified",
        "completed",
    )
    assert list(Answer.objects.values_list("texts", "s1")) == [(["positive"], 1.0)]
    assert list(AuditEvent.objects.values_list("action", flat=True)) == ["join"]
    assert ProlificCredential.objects.get().token_encrypted == "encrypted"
    assert ParticipantGroup.objects.get().prolific_id == "d" * 24
    bonus = BonusPayment.objects.get()
    assert (bonus.enrollment_id, bonus.amount, bonus.state, bonus.paid_at) == (
        enrollment.pk,
        Decimal("1.25"),
        "paid",
        AT,
    )
    places = ProlificCohort.objects.get()
    assert (places.cohort_id, places.given_back, places.total) == (ids["cohort"], 1, 4)
    # A cohort made before codes were drawn per part keeps the codes its workers and its listing already have, and
    # its Prolific study is its part 1 (its published figures unknown).
    from annotation.codes import part_codes
    from recruitment.models import ProlificPart

    codes = part_codes(Cohort.objects.get(pk=ids["cohort"]), 1)
    assert (codes.completion_code, codes.screenout_code) == ("CDONE", "SOUT")
    part = ProlificPart.objects.get(cohort_id=ids["cohort"])
    assert (part.number, part.prolific_study_id, part.reward) == (1, "a" * 24, None)
    # The moved tables keep taking rows (their id sequences came with them).
    ProlificCohort.objects.create(cohort=_second_cohort(study), total=1)
    assert ProlificCohort.objects.count() == 2


def _second_cohort(study):
    from annotation.models import Cohort
    from tasks_data.models import Task, TrainingSet

    task = Task.objects.get(slug="sst2")
    training_set = TrainingSet.objects.create(task=task, shots=10, split=1, chain=1)
    return Cohort.objects.create(study=study, task=task, shots=10, target=1, training_set=training_set)


@pytest.mark.django_db(transaction=True)
def test_a_database_at_the_old_layout_migrates_forward_with_every_row_kept_on_postgresql():
    if connection.vendor != "postgresql":
        pytest.skip("this run is on SQLite: the SQLite test below covers it")
    check_forward_migration()


def test_a_database_at_the_old_layout_migrates_forward_with_every_row_kept_on_sqlite(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL")}
    env["DATABASE_URL"] = f"sqlite:///{tmp_path / 'old.sqlite3'}"
    script = (
        "import django; django.setup(); from django.core.management import call_command; "
        "call_command('migrate', verbosity=0); "
        "from tests.annotation.test_migrations import check_forward_migration; check_forward_migration(); "
        "print('forward migration: every row kept')"
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
    assert "every row kept" in result.stdout
