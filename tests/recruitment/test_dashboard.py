"""The dashboard's Prolific page: publish, sync and pay from buttons; another researcher gets 404."""

import pytest
from django.test import Client

from tests.annotation.factories import make_study, trim_test_set

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clues")]


def login(user, password):
    client = Client()
    assert client.login(username=user.username, password=password)
    return client


def test_publish_sync_and_pay_from_the_dashboard(fake, researcher, other_researcher):
    trim_test_set("sst2", 3)
    study = make_study(shots=[0, 10], launch=False, created_by=researcher)
    rita = login(researcher, "pw-rita-123")
    page = rita.get(f"/dashboard/studies/{study.pk}/")
    assert f"/dashboard/studies/{study.pk}/prolific/" in page.content.decode()
    assert rita.post(f"/dashboard/studies/{study.pk}/prolific/publish/").status_code == 200
    html = rita.get(f"/dashboard/studies/{study.pk}/prolific/").content.decode()
    assert len(fake.studies) == 2
    for prolific_id in fake.studies:
        assert prolific_id in html
    assert '<th scope="col">Places on Prolific</th>' in html
    assert "<td>3</td><td>0</td>" in html  # 3 workers, none given back
    assert "Synced" in rita.post(f"/dashboard/studies/{study.pk}/prolific/sync/").content.decode()
    assert "Bonuses:" in rita.post(f"/dashboard/studies/{study.pk}/prolific/pay/").content.decode()
    oscar = login(other_researcher, "pw-oscar-123")
    for path in ("", "publish/", "sync/", "pay/", "token/"):
        url = f"/dashboard/studies/{study.pk}/prolific/{path}"
        response = oscar.post(url) if path else oscar.get(url)
        assert response.status_code == 404, url
    assert len(fake.studies) == 2


def test_the_token_form_stores_encrypted_never_shows_it_and_refuses_without_a_key(researcher, settings):
    study = make_study(shots=[0], created_by=researcher)
    rita = login(researcher, "pw-rita-123")
    settings.PROLIFIC_TOKEN_KEY = ""
    settings.PROLIFIC_API_TOKEN = ""
    assert "PROLIFIC_TOKEN_KEY" in rita.get(f"/dashboard/studies/{study.pk}/prolific/").content.decode()
    refused = rita.post(f"/dashboard/studies/{study.pk}/prolific/token/", {"token": "tok-secret-1"})
    assert refused.status_code == 400 and "PROLIFIC_TOKEN_KEY" in refused.content.decode()
    settings.PROLIFIC_TOKEN_KEY = "k" * 40
    stored = rita.post(f"/dashboard/studies/{study.pk}/prolific/token/", {"token": "tok-secret-1"})
    assert stored.status_code == 200 and "tok-secret-1" not in stored.content.decode()
    assert "tok-secret-1" not in rita.get(f"/dashboard/studies/{study.pk}/prolific/").content.decode()
