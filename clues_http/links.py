"""Links written where no request says which address the reader uses (a command's output, an e-mail)."""

from __future__ import annotations

from django.conf import settings


def site_link(path: str) -> str:
    """``path`` on this platform's address (settings.SITE_URL: SITE_URL, else the HOST and PORT served on)."""
    return settings.SITE_URL + path
