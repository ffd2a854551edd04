"""Parsing of the human units the CLI accepts (`10s`, `2m`, `500ms`)."""

import re

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(us|ms|s|m|h)?\s*$")
_SCALE_S = {"us": 1e-6, "ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def parse_duration_s(text: str) -> float:
    """`10s`, `2m`, `1.5h`, `500ms`, `20us`, or a bare number of seconds (ab's -t)."""
    m = _DURATION.match(text)
    if not m:
        raise ValueError(f"{text!r} is not a duration: use a number with s, m, h, ms or us, like 10s or 2m")
    return float(m.group(1)) * _SCALE_S[m.group(2)]
