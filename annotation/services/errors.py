"""The services' own error (the protocol's errors live in annotation.protocol)."""


class Conflict(Exception):
    """The request clashes with the protocol's state (HTTP 409)."""
