"""Bugs the property-based fuzzers (tests/plan/test_fuzz_plan.py,
tests/cli/test_fuzz_args.py) found in code owned elsewhere, not fixed there
yet. Each is recognised by exactly what it raises and where, so that the
fuzzers keep looking past it and fail on anything else; each also has a
strict xfail test that reproduces it, which starts failing (XPASS) once the
bug is fixed, to say: remove it from here."""

from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import dataclass


def _raised_in(exc: BaseException, path_end: str, function: str | None = None, line_has: str = "") -> bool:
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return False
    last = frames[-1]
    return (
        last.filename.endswith(path_end)
        and (function is None or last.name == function)
        and line_has in (last.line or "")
    )


@dataclass(frozen=True)
class Known:
    where: str
    what: str
    matches: Callable[[BaseException], bool]


# Empty: the four bugs first listed here (a factor range past float's
# range, overrides on an [experiment] that is not a table, busy_poll = inf,
# a key with a line break in an error's location) are fixed, and their
# inputs are regression tests in the two fuzzers' files.
KNOWN: list[Known] = []


def known(exc: BaseException) -> Known | None:
    return next((k for k in KNOWN if k.matches(exc)), None)
