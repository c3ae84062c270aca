"""The services' own error (the protocol's errors live in annotation.protocol)."""


class Conflict(Exception):
    """The request clashes with the protocol's state (HTTP 409)."""


class TimeUp(Conflict):
    """The part's time limit has passed: nothing more is taken, and the worker gets their code (HTTP 409)."""


class NotCurrentItem(Conflict):
    """An answer to an item that is not the current one: already answered, or not reached yet (HTTP 409)."""
