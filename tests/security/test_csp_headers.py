"""The Content-Security-Policy header and the self-hosted API docs, without a browser.

(tests/browser/test_csp.py shows, in Chromium, that the pages work under the policy and that it blocks a
``javascript:`` form action.) The API docs page references files of this site only, and each is served.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.test import Client

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"
CROWD = ("https://app.prolific.com", "https://www.mturk.com", "https://workersandbox.mturk.com")


def policy(response) -> dict[str, list[str]]:
    header = response["Content-Security-Policy"]
    return {d.split()[0]: d.split()[1:] for d in (part.strip() for part in header.split(";")) if d}


@pytest.mark.django_db
@pytest.mark.parametrize(
    "path",
    ["/", "/accounts/login/", "/work/", "/api/work/current/", "/api/docs/", "/join/no-such-token/", "/admin/login/"],
)
def test_every_response_carries_the_policy(path):
    directives = policy(Client().get(path))
    assert directives["script-src"] == ["'self'"]  # no 'unsafe-inline', no 'unsafe-eval', no other host
    assert directives["style-src"] == ["'self'"]
    assert directives["default-src"] == ["'self'"]
    assert directives["object-src"] == ["'none'"] and directives["base-uri"] == ["'self'"]
    assert directives["frame-ancestors"] == ["'none'"]  # as X-Frame-Options: DENY
    assert directives["form-action"] == ["'self'", *CROWD]


def test_no_template_has_an_inline_script_style_or_handler():
    found = []
    for template in TEMPLATES.rglob("*.html"):
        text = re.sub(r"\{#.*?#\}", "", template.read_text(encoding="utf-8"))  # comments
        # Inline scripts, styles and handlers; htmx attributes that need eval (trigger filters, hx-on, js: values).
        for pattern in (
            r"<script(?![^>]*\bsrc=)[^>]*>",
            r"\sstyle=",
            r"<style[\s>]",
            r"\son[a-z]+=",
            r"javascript:",
            r"hx-on",
            r'hx-trigger="[^"]*\[',
            r"hx-vals='js:",
        ):
            found += [f"{template.relative_to(TEMPLATES)}: {m.group(0)}" for m in re.finditer(pattern, text)]
    assert not found, found


@pytest.mark.django_db
def test_the_api_docs_reference_only_files_of_this_site_and_each_is_served():
    client = Client()
    page = client.get("/api/docs/")
    assert page.status_code == 200
    html = page.content.decode()
    references = [u for u in re.findall(r'(?:src|href)="([^"]+)"', html) if not u.startswith("#")]  # in-page links
    assert len(references) >= 5, references  # favicon, stylesheets, two bundles, the start-up script, links back
    for url in references:
        assert url.startswith("/") and not url.startswith("//"), f"{url} is not on this site"
        assert "cdn" not in url.lower() and "@latest" not in url
        served = client.get(url.replace("&amp;", "&"))
        assert served.status_code == 200, url
        body = b"".join(served.streaming_content) if served.streaming else served.content
        assert body, url
    assert any("swagger-ui-bundle.js" in u and u.startswith("/static/") for u in references)
    script = client.get("/api/docs/?script=")
    assert script["Content-Type"].startswith("application/javascript") and b"SwaggerUIBundle" in script.content
