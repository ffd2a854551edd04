"""Parsing of the human units the CLI accepts (`10s`, `2m`, `500ms`)."""

import math
import re

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(us|ms|s|m|h)?\s*$")
_SCALE_S = {"us": 1e-6, "ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def parse_duration_s(text: str) -> float:
    """`10s`, `2m`, `1.5h`, `500ms`, `20us`, or a bare number of seconds (ab's -t)."""
    m = _DURATION.match(text)
    if not m:
        raise ValueError(f"{text!r} is not a duration: use a number with s, m, h, ms or us, like 10s or 2m")
    seconds = float(m.group(1)) * _SCALE_S[m.group(2)]
    # Digits past float's range read as infinity, which no clock reaches.
    if not math.isfinite(seconds):
        raise ValueError(f"{m.group(1)[:12]}...{m.group(2) or ''} is not a duration: too long for any run")
    return seconds


def parse_span_s(text: str) -> tuple[float, float]:
    """A think time: `2s` is 0..2 s (siege's -d), `0.5s..2s` a range."""
    lo, sep, hi = str(text).partition("..")
    if not sep:
        lo, hi = "0", lo
    return parse_duration_s(lo), parse_duration_s(hi)


def parse_rate(text: str) -> tuple[float, float | None]:
    """`5000` (requests per second) or a ramp's `100..5000`."""
    start, sep, end = str(text).partition("..")
    bad = ValueError(f"{text!r} is not a rate: use requests per second, like 5000, or START..END")
    try:
        rates = float(start), (float(end) if sep else None)
    except ValueError:
        raise bad from None
    if not all(math.isfinite(r) for r in rates if r is not None):
        raise bad  # nan or inf: no schedule
    return rates


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]i?b?|b)?\s*$", re.IGNORECASE)
_SCALE_B = {"": 1, "b": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}


def parse_size_bytes(text: str) -> int:
    """`512MB`, `1GiB`, `2g`, or a bare number of bytes; K, M, G, T are
    binary (1024), as mkfs, dd and PostgreSQL read them."""
    m = _SIZE.match(text)
    if not m:
        raise ValueError(f"{text!r} is not a size: use a number with KB, MB, GB or TB, like 512MB or 1GB")
    unit = (m.group(2) or "").lower()[:1]
    size = float(m.group(1)) * _SCALE_B["b" if unit == "b" else unit]
    if not math.isfinite(size) or size > 2**62:
        raise ValueError(f"{text[:20]!r} is not a size a disk can have")
    return int(size)
