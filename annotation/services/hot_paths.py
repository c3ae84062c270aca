"""The worker's hot-path statements, chosen by a registered name (``settings.CLUES_HOT_PATH``).

The platform ships one implementation, ``"sql"`` (``hot_sql``: hand-written SQL). Another is registered by the
code that brings it, never loaded from a dotted path in the settings: the load benchmark's app registers its
ORM oracle as ``"orm"`` (benchmarks/ceiling/apps.py), so a setting can choose among these and nothing else.
"""

from __future__ import annotations

from types import ModuleType

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from . import hot_sql

# name -> a module with fetch, answers_in_step, next_item, training_item, test_item, mark_served, insert and
# insert_if_unchanged (as hot_sql has).
HOT_PATHS: dict[str, ModuleType] = {"sql": hot_sql}


def register_hot_path(name: str, module: ModuleType) -> None:
    """Offer ``module`` as the hot path ``name`` (chosen with CLUES_HOT_PATH=name)."""
    HOT_PATHS[name] = module


def hot_path() -> ModuleType:
    """The implementation settings.CLUES_HOT_PATH names."""
    try:
        return HOT_PATHS[settings.CLUES_HOT_PATH]
    except KeyError:
        raise ImproperlyConfigured(
            f"CLUES_HOT_PATH={settings.CLUES_HOT_PATH!r} is not a registered hot path (one of {sorted(HOT_PATHS)})"
        ) from None
