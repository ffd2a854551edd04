"""How the text report is laid out, as ab's and wrk's flags change it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ReportOptions:
    """`confidence`: ab's [+/-sd] and median columns and its SANE() warnings
    (off with ab's -S, which prints min/avg/max instead). `percentiles`:
    ab's percentage table (off with ab's -d). `latency`: wrk's latency
    distribution block (wrk's --latency, wrk2's -L). `verbosity`: ab's -v
    level (2 and above: the request and response heads, non-2xx warnings;
    3 and above: every status code)."""

    confidence: bool = True
    percentiles: bool = True
    latency: bool = False
    verbosity: int = 0
