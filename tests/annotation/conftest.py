"""The protocol tests use the shared fixtures of tests/conftest.py (``clues``, the users)."""
