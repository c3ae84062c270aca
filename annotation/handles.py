"""The opaque handle by which a worker addresses an item (an item's database id is never shown to a worker).

A database id would tell a worker more than the item: attention checks take their ids from the
examples' own sequence, after the task's, so ids would single them out, and ids are shared by every
worker. A handle is a keyed HMAC of (enrollment, item): the same item has another handle for every
enrollment, a check's handle looks like any other, and nobody without ``SECRET_KEY`` can make one.
The server never has to look a handle up: it only takes an answer for the current item (or a
change of the last test answer), so it compares the posted handle with that item's.
"""

from __future__ import annotations

import base64
import hmac

from django.utils.crypto import salted_hmac

_SALT = "annotation.handles.item"
LENGTH = 16  # base32 characters: 80 bits


def item_handle(*, enrollment_id: int, item_id: int, secret: str | None = None) -> str:
    """The handle of an item (an example's or an attention check's ``item_id``) for one enrollment.

    ``secret``: the server's ``SECRET_KEY`` when called outside it (a benchmark checking what it stored)."""
    digest = salted_hmac(_SALT, f"{enrollment_id}:{item_id}", secret=secret, algorithm="sha256").digest()
    return base64.b32encode(digest).decode("ascii")[:LENGTH].lower()


def is_handle_of(handle, *, enrollment_id: int, item_id: int) -> bool:
    """Whether ``handle`` (anything a client posted) is this enrollment's handle of the item (constant time)."""
    return isinstance(handle, str) and hmac.compare_digest(
        handle.encode("utf-8", "surrogatepass"), item_handle(enrollment_id=enrollment_id, item_id=item_id).encode()
    )
