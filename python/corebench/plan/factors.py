"""Factors: named lists or ranges of levels, their full factorial, and the
`{name}` placeholders of a plan's target and load sections."""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Iterator
from typing import Any

Level = int | float | str | bool
_RANGE = re.compile(
    r"^\s*(-?\d+(?:\.\d+)?)\s*\.\.\s*(-?\d+(?:\.\d+)?|max)\s*(?::\s*(x)?\s*(\d+(?:\.\d+)?))?\s*$", re.IGNORECASE
)
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
MAX_LEVELS = 10_000


def _number(text: str) -> int | float:
    return float(text) if "." in text else int(text)


def levels(name: str, spec: Any, max_cpus: int | None = None) -> list[Level]:
    try:
        return _levels(name, spec, max_cpus)
    except OverflowError:
        # Digits past float's range: no machine has that many of anything.
        too_large = f"factor {name!r}: range {str(spec)[:40]!r} is too large; give levels a machine can have"
        raise ValueError(too_large) from None


def _levels(name: str, spec: Any, max_cpus: int | None = None) -> list[Level]:
    """`[1, 2]`, a single value, or a range `"25..175:25"` (start..end:step,
    both ends included; step 1 when left out), or a geometric range
    `"1..64:x2"` (1, 2, 4, ... 64: each level the last times the factor).
    `"1..max"` ends at the CPUs this machine lets corebench use, so one plan
    fits every machine; `"1..max:x2"` then also includes the machine's own
    count when the doubling does not land on it (1, 2, 4, 8, 12 on 12
    CPUs), so the whole machine is always measured."""
    if isinstance(spec, list):
        if not spec:
            raise ValueError(f"factor {name!r} has no levels")
        if not all(isinstance(v, (int, float, str, bool)) for v in spec):
            raise ValueError(f"factor {name!r}: levels must be numbers, strings or booleans")
        twice = [v for i, v in enumerate(spec) if v in spec[:i]]
        if twice:
            raise ValueError(f"factor {name!r}: level {twice[0]!r} is given twice (more runs: raise repetitions)")
        return list(spec)
    if isinstance(spec, str) and (m := _RANGE.match(spec)):
        to_max = m.group(2).lower() == "max"
        top = str(max_cpus or len(os.sched_getaffinity(0))) if to_max else m.group(2)
        start, end = _number(m.group(1)), _number(top)
        if m.group(3):
            return _geometric(name, spec, start, end, _number(m.group(4)), to_max)
        step = _number(m.group(4)) if m.group(4) else 1
        if step <= 0 or end < start:
            raise ValueError(f"factor {name!r}: range {spec!r} must rise by a positive step, like 25..175:25")
        count = int((end - start) / step + 1e-9) + 1
        if count > MAX_LEVELS:
            raise ValueError(f"factor {name!r}: range {spec!r} has more than {MAX_LEVELS} levels")
        return [
            round(start + i * step, 9) if isinstance(start + step, float) else start + i * step for i in range(count)
        ]
    if isinstance(spec, (int, float, str, bool)):
        return [spec]
    raise ValueError(f'factor {name!r}: give a list of levels or a range like "25..175:25"')


def _geometric(
    name: str, spec: str, start: int | float, end: int | float, factor: int | float, to_max: bool
) -> list[Level]:
    if start <= 0 or factor <= 1 or end < start:
        raise ValueError(
            f"factor {name!r}: range {spec!r} must start above 0 and grow by a factor above 1, like 1..64:x2"
        )
    out: list[Level] = []
    level = start
    while level <= end * (1 + 1e-9):
        out.append(round(level, 9) if isinstance(level, float) else level)
        if len(out) > MAX_LEVELS:
            raise ValueError(f"factor {name!r}: range {spec!r} has more than {MAX_LEVELS} levels")
        level = level * factor
    if to_max and out[-1] != end:
        out.append(end)
    return out


def factorial(factors: dict[str, list[Level]]) -> Iterator[dict[str, Level]]:
    names = list(factors)
    for combo in itertools.product(*(factors[n] for n in names)):
        yield dict(zip(names, combo, strict=True))


def names_used(value: Any) -> set[str]:
    """The placeholder names in a (nested) section."""
    if isinstance(value, str):
        return set(_PLACEHOLDER.findall(value))
    if isinstance(value, dict):
        return set().union(*(names_used(v) for v in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(names_used(v) for v in value)) if value else set()
    return set()


def substitute(value: Any, values: dict[str, Any]) -> Any:
    """Replaces `{name}` placeholders. A string that is one placeholder takes
    the level itself (a number stays a number); inside text it is formatted."""
    if isinstance(value, str):
        whole = _PLACEHOLDER.fullmatch(value)
        if whole:
            return values[whole.group(1)]
        return _PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), value)
    if isinstance(value, dict):
        return {k: substitute(v, values) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, values) for v in value]
    return value
