"""The results app's tests share the annotation tests' data fixtures (CLUES imported once per module)."""

from tests.annotation.conftest import clues, researcher  # noqa: F401 (pytest fixtures)
