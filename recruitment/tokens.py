"""Researchers' Prolific API tokens: stored encrypted (Fernet, key from PROLIFIC_TOKEN_KEY), never shown."""

from __future__ import annotations

import base64
import hashlib

from django.conf import settings

from annotation.models import Study
from crowd.prolific import Prolific

from . import client
from .models import ProlificCredential


def on_prolific(study: Study) -> bool:
    """Whether the study recruits on Prolific (the only platform this app speaks to)."""
    return study.platform == Prolific.slug


class TokenKeyMissing(Exception):
    pass


def _fernet():
    from cryptography.fernet import Fernet

    secret = getattr(settings, "PROLIFIC_TOKEN_KEY", "")
    if not secret:
        raise TokenKeyMissing(
            "PROLIFIC_TOKEN_KEY is not set: a Prolific token can only be stored encrypted, "
            "with a key from the environment"
        )
    return Fernet(base64.urlsafe_b64encode(hashlib.sha256(secret.encode()).digest()))


def _sealer():
    """Fernet keyed by PROLIFIC_TOKEN_KEY, or by SECRET_KEY when that is not set (a webhook secret must be
    readable to verify events; it only lets someone sign events that are checked with Prolific anyway)."""
    from cryptography.fernet import Fernet

    secret = getattr(settings, "PROLIFIC_TOKEN_KEY", "") or "webhook:" + settings.SECRET_KEY
    return Fernet(base64.urlsafe_b64encode(hashlib.sha256(secret.encode()).digest()))


def seal(value: str) -> str:
    return _sealer().encrypt(value.encode()).decode()


def unseal(value: str) -> str | None:
    try:
        return _sealer().decrypt(value.encode()).decode()
    except Exception:  # noqa: BLE001 - the key changed: that subscription's events can no longer be verified
        return None


def store_token(user, token: str) -> None:
    """Keep a researcher's Prolific token, encrypted; refuses without PROLIFIC_TOKEN_KEY."""
    token = (token or "").strip()
    if not token:
        raise ValueError("the token is empty")
    encrypted = _fernet().encrypt(token.encode()).decode()
    ProlificCredential.objects.update_or_create(owner=user, defaults={"token_encrypted": encrypted})


def token_for(study: Study) -> str:
    """The study owner's stored token, else PROLIFIC_API_TOKEN; "" when none is configured."""
    credential = ProlificCredential.objects.filter(owner_id=study.created_by_id).first()
    if credential is not None:
        try:
            return _fernet().decrypt(credential.token_encrypted.encode()).decode()
        except Exception:  # noqa: BLE001 - key missing or changed: fall back to the environment's token
            pass
    return getattr(settings, "PROLIFIC_API_TOKEN", "")


def has_token(study: Study) -> bool:
    return owner_has_token(study.created_by_id)


def owner_has_token(owner_id: int | None) -> bool:
    """Whether a token is configured for this researcher: the environment's, or one they stored."""
    if getattr(settings, "PROLIFIC_API_TOKEN", ""):
        return True
    return owner_id is not None and ProlificCredential.objects.filter(owner_id=owner_id).exists()


def client_for(study: Study) -> client.ProlificClient | None:
    token = token_for(study)
    if not token:
        return None
    return client.ProlificClient(
        token,
        settings.PROLIFIC_API_URL,
        timeout=settings.PROLIFIC_TIMEOUT,
        retries=settings.PROLIFIC_RETRIES,
        backoff=settings.PROLIFIC_BACKOFF,
    )


NO_TOKEN = "no Prolific token: set PROLIFIC_API_TOKEN or store one on the dashboard"
