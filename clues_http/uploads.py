"""Views that take a file: the one place a request body may be larger than DATA_UPLOAD_MAX_MEMORY_SIZE.

The project's request-limits middleware refuses a body over that limit before any view reads it; a view marked
``takes_upload`` may receive one up to ``UPLOAD_MAX_SIZE`` (settings) instead, and no other view may.
"""

from __future__ import annotations

from collections.abc import Callable


def takes_upload(view: Callable) -> Callable:
    view.takes_upload = True  # type: ignore[attr-defined]
    return view


def accepts_upload(view: Callable | None) -> bool:
    return bool(getattr(view, "takes_upload", False))
