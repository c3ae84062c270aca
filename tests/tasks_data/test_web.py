"""The home page, the admin for the data, and the local researcher login."""

import html
import io
import re

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management import call_command
from django.urls import reverse

from tasks_data.models import Example, Task, TrainingSet
from tasks_data.registry import CLUES_TASKS


def task_rows(page: str) -> dict[str, list[str]]:
    """The home page's table: task name -> the texts of its cells."""
    rows = {}
    for row in re.findall(r"<tr>(.*?)</tr>", page, re.S):
        cells = [
            html.unescape(re.sub(r"<[^>]+>", "", cell)).strip()
            for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        ]
        if cells:
            rows[cells[0]] = cells
    return rows


def test_home_page_lists_the_official_tasks(client, clues_data):
    response = client.get("/")
    assert response.status_code == 200
    rows = task_rows(response.content.decode())
    expected = {
        "SST-2": ("210", "150"),
        "MNLI": ("210", "150"),
        "CoNLL03": ("600", "450"),
        "WikiANN": ("600", "450"),
        "SQuADv2": ("200", "150"),
        "ReCoRD": ("200", "150"),
    }
    assert sorted(rows) == sorted(expected)
    for name, (test, train) in expected.items():
        assert test in rows[name] and train in rows[name], rows[name]
        assert "10/20/30 shots × 5 splits" in rows[name]


def test_home_page_lists_the_demo_tasks(client, demo_data):
    rows = task_rows(client.get("/").content.decode())
    assert sorted(rows) == sorted(spec.name for spec in CLUES_TASKS.values())
    for task in Task.objects.all():
        test = Example.objects.filter(task=task, role=Example.Role.TEST).count()
        train = Example.objects.filter(task=task, role=Example.Role.TRAIN).count()
        assert str(test) in rows[task.spec.name] and str(train) in rows[task.spec.name]


def test_home_page_without_data(client, db):
    response = client.get("/")
    assert response.status_code == 200
    assert "No task data yet" in response.content.decode()


def test_admin_changelists(admin_client, demo_data):
    for model in ("task", "example", "trainingset"):
        response = admin_client.get(reverse(f"admin:tasks_data_{model}_changelist"))
        assert response.status_code == 200, model
    training_set = TrainingSet.objects.filter(shots=30).first()
    response = admin_client.get(reverse("admin:tasks_data_trainingset_change", args=[training_set.pk]))
    assert response.status_code == 200
    assert response.content.decode().count('name="items-') >= 30
    example = Example.objects.first()
    assert admin_client.get(reverse("admin:tasks_data_example_change", args=[example.pk])).status_code == 200
    response = admin_client.get(reverse("admin:tasks_data_example_changelist"), {"q": example.clues_id})
    assert response.status_code == 200


def test_admin_requires_login(client, db):
    response = client.get(reverse("admin:tasks_data_task_changelist"))
    assert response.status_code == 302 and "/login/" in response["Location"]


def ensure(password_file):
    out = io.StringIO()
    call_command("ensure_local_researcher", "--password-file", str(password_file), stdout=out)
    return out.getvalue().strip()


def test_local_researcher_login(client, db, tmp_path):
    password_file = tmp_path / "cache" / "researcher-password"
    first = ensure(password_file)
    password = password_file.read_text().strip()
    assert len(password) >= 12
    assert first == f"Researcher login: researcher / {password} (created)"
    assert password_file.stat().st_mode & 0o077 == 0  # readable by its owner only
    assert ensure(password_file) == f"Researcher login: researcher / {password}"  # same password again

    User = get_user_model()
    user = User.objects.get(username="researcher")
    assert User.objects.filter(username="researcher").count() == 1
    assert user.is_active and not user.is_staff and not user.is_superuser
    assert not user.user_permissions.exists()
    assert list(user.groups.values_list("name", flat=True)) == ["researchers"]
    assert client.login(username="researcher", password=password)
    assert client.get(reverse("dashboard")).status_code == 200
    # The admin is for operators (superusers) only.
    assert client.get(reverse("admin:tasks_data_example_changelist")).status_code == 302


def test_local_researcher_is_repaired(db, tmp_path):
    password_file = tmp_path / "pw"
    ensure(password_file)
    User = get_user_model()
    user = User.objects.get(username="researcher")
    user.set_password("something else")
    user.is_staff = True  # as earlier versions made it, with every admin permission
    user.save()
    user.user_permissions.add(*Permission.objects.filter(content_type__app_label="annotation"))
    user.groups.clear()
    ensure(password_file)
    user.refresh_from_db()
    assert not user.is_staff and not user.user_permissions.exists()
    assert user.check_password(password_file.read_text().strip())
    assert user.groups.filter(name="researchers").exists()


@pytest.mark.parametrize("content", ["", "\n"])
def test_local_researcher_empty_password_file_regenerated(db, tmp_path, content):
    password_file = tmp_path / "pw"
    password_file.write_text(content)
    out = ensure(password_file)
    password = password_file.read_text().strip()
    assert password and out.endswith(f"/ {password} (created)")
