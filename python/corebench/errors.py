"""Errors the user can fix. The CLI prints them as one line and exits 2;
anything else is a bug and keeps its traceback."""

from corebench._engine import EngineFailure
from corebench._engine import UsageError as EngineUsageError


class UsageError(Exception):
    """Bad input: the message says what was wrong, where, and how to fix it."""


__all__ = ["UsageError", "EngineUsageError", "EngineFailure"]
