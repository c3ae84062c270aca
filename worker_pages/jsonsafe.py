"""``json.loads`` that refuses, as a decode error, what would otherwise crash a request.

Nesting deep enough to exhaust Python's recursion (``[[[[...]]]]`` 1,000 deep) raises RecursionError
inside the decoder: a 500. Here it is a ``JSONDecodeError`` like any other unreadable document, so
every caller's "could not be read" path (400) handles it.
"""

from __future__ import annotations

import json
from json import JSONDecodeError, dumps

__all__ = ["JSONDecodeError", "dumps", "loads"]


def loads(text, **kwargs):
    try:
        return json.loads(text, **kwargs)
    except RecursionError:
        doc = text if isinstance(text, str) else ""
        raise JSONDecodeError("the document is nested too deeply", doc, 0) from None
