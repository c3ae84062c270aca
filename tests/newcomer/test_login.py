"""A researcher who logs in lands on the dashboard (not the task list), and `make run` tells them how to get an
operator for the admin instead of printing an admin link that refuses them."""

import pytest
from django.test import Client

from tests.newcomer.servers import REPO


@pytest.mark.django_db
def test_logging_in_lands_on_the_dashboard(researcher):
    client = Client()
    response = client.post("/accounts/login/", {"username": "rita", "password": "pw-rita-123"})
    assert response.status_code == 302 and response["Location"] == "/dashboard/"
    assert client.get(response["Location"]).status_code == 200


def test_make_run_says_how_to_create_an_operator():
    run = (REPO / "Makefile").read_text().split("\nrun:", 1)[1].split("\n\n", 1)[0]
    assert "manage.py createsuperuser" in run and "/admin/" in run
    assert "admin: http" not in run  # no link the local researcher (not staff) would be refused at
    assert run.index("ensure_database") < run.index("migrate")  # the PostgreSQL database exists before migrating
