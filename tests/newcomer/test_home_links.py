"""`/` leads a newcomer on: a researcher log-in (then the dashboard), the API docs and the admin, each working."""

import re

import pytest
from django.contrib.auth.models import Group, User


def links(html: str) -> dict[str, str]:
    return {
        re.sub(r"\s+", " ", text).strip(): href.replace("&amp;", "&")
        for href, text in re.findall(r'<a [^>]*href="([^"]+)"[^>]*>(.*?)</a>', html, re.S)
    }


@pytest.mark.django_db
def test_home_links_to_log_in_api_docs_and_admin(client):
    home = links(client.get("/").content.decode())
    assert home["Researcher log in"] == "/accounts/login/?next=/dashboard/"
    assert home["API docs"] == "/api/docs/"
    assert home["Admin"] == "/admin/"
    assert client.get("/api/docs/").status_code == 200
    login = client.get(home["Researcher log in"])
    assert login.status_code == 200 and b'name="password"' in login.content

    # Logging in through that form lands on the dashboard, and then / links to it.
    researcher = User.objects.create_user("alice", password="a long password 123")
    researcher.groups.add(Group.objects.get_or_create(name="researchers")[0])
    response = client.post(
        home["Researcher log in"], {"username": "alice", "password": "a long password 123"}, follow=True
    )
    assert response.redirect_chain[-1][0] == "/dashboard/" and response.status_code == 200
    home = links(client.get("/").content.decode())
    assert home["Dashboard"] == "/dashboard/" and "Researcher log in" not in home
