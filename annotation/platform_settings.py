"""The crowd platforms' own per-study settings (``CrowdProvider.settings_fields``) as the study form, the API and
launch_study take them: by name, for the study's platform only, each cleaned by its field.

A platform's settings are Django model fields its provider declares (defaults, limits, labels and help texts
defined once there); the provider keeps the values (``load_settings`` / ``save_settings``). Names are
unique across platforms (``crowd.register`` refuses a second) and never a study parameter's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ImproperlyConfigured, ValidationError
from django.db import models

import crowd

from .models import Study


def fields(provider: crowd.CrowdProvider) -> list[models.Field]:
    """The provider's settings fields, named (an unbound field gets its attributes from its name)."""
    out = []
    for field in provider.settings_fields():
        if not field.name:
            raise ImproperlyConfigured(f"{provider.name}: a setting field needs a name (name=...)")
        if not getattr(field, "attname", None):
            field.set_attributes_from_name(field.name)
        out.append(field)
    return out


def all_fields() -> dict[str, tuple[crowd.CrowdProvider, models.Field]]:
    """Every registered platform's settings by name, in registry order: {name: (provider, field)}."""
    parameters = set(Study.parameters())
    out: dict[str, tuple[crowd.CrowdProvider, models.Field]] = {}
    for provider in crowd.PROVIDERS.values():
        for field in fields(provider):
            if field.name in parameters:
                raise ImproperlyConfigured(f"{provider.name}: the setting {field.name!r} has a study parameter's name")
            out[field.name] = (provider, field)
    return out


def clean(provider: crowd.CrowdProvider, given: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """The settings of ``provider`` from ``given`` (each field's default where a setting is not given or refused),
    and the errors by name: a value its field refuses, or another platform's setting (this study does not
    recruit there)."""
    own = {field.name: field for field in fields(provider)}
    known = all_fields()
    errors: dict[str, list[str]] = {}
    for name in given:
        if name not in own:
            owner = known[name][0].name if name in known else "no platform"
            errors[name] = [f"a setting of {owner}; this study recruits on {provider.name}"]
    values: dict[str, Any] = {}
    for name, field in own.items():
        if name not in given:
            if not (field.has_default() or field.null or field.blank):
                errors[name] = [f"{provider.name} needs this setting"]
            values[name] = field.get_default()
            continue
        try:
            values[name] = field.clean(given[name], None)
        except ValidationError as exc:
            errors[name] = exc.messages
            values[name] = field.get_default()  # the errors stop the study; the provider's own checks still run
    return values, errors


def settings_of(study: Study) -> dict[str, Any]:
    """The study's settings of its platform, as its provider keeps them."""
    return study.provider.load_settings(study)
