"""wrk's latency distribution block (`wrk --latency`), or wrk2's (`-L`) for
an open loop: the lines and number formats of wrk's print_stats_latency and
wrk2's print_hdr_latency (src/wrk.c, src/units.c), so a reader of wrk's
output finds the block where it expects it.

wrk 4 prints four percentiles of its own microsecond histogram, each the
value at rank round(p/100 · count + 0.5); wrk2 prints eight of its
HdrHistogram (from the intended send time), then HdrHistogram's percentile
spectrum, the rows of a .hgrm file."""

from __future__ import annotations

from corebench.config.settings import LoadConfig
from corebench.output.hgrm import percentile_distribution
from corebench.output.ranks import Ranks
from corebench.result import LatencySummary, LoadResult

_WRK = (50.0, 75.0, 90.0, 99.0)
_WRK2 = (50.0, 75.0, 90.0, 99.0, 99.9, 99.99, 99.999, 100.0)
_RULE = "-" * 58


def _units(n: float, base: str, scale: int, units: tuple[str, ...]) -> str:
    # units.c's format_units: divide while at least 0.85 of the next unit,
    # but never into the last unit listed (its loop stops before it).
    amount, unit = n, base
    for i in range(len(units) - 1):
        if amount < scale * 0.85:
            break
        amount /= scale
        unit = units[i]
    return f"{amount:.2f}{unit}"


def format_time_us(us: float) -> str:
    """units.c's format_time_us: 635.91us, 1.25ms, 2.00s, 1.50m."""
    if us >= 1_000_000.0:
        return _units(us / 1_000_000.0, "s", 60, ("m", "h"))
    return _units(us, "us", 1000, ("ms", "s"))


def print_units(text: str, width: int = 10) -> str:
    """wrk.c's print_units: right-aligned, the unit's letters taking the pad."""
    pad = 2 - sum(1 for ch in text[-2:] if ch.isalpha())
    return f"{text:>{width - pad}.{width - pad}}" + " " * pad


def wrk_block(h: LatencySummary) -> list[str]:
    ranks = Ranks(h.histogram) if h.count else None
    out = ["  Latency Distribution"]
    for p in _WRK:
        # stats.c: rank = round((p / 100) * count + 0.5), the first value whose cumulative count reaches it.
        value = ranks.value_at_rank(int(p / 100 * h.count + 1.0)) if ranks else 0
        out.append(f"{p:7.0f}%" + print_units(format_time_us(value)))
    return out


def wrk2_block(h: LatencySummary) -> list[str]:
    out = ["  Latency Distribution (HdrHistogram - Recorded Latency)"]
    for p in _WRK2:
        value = h.at(p) if h.count else 0
        out.append(f"{p:7.3f}%" + print_units(format_time_us(value)))
    out += ["", "  Detailed Percentile spectrum:"]
    out += percentile_distribution(h).rstrip("\n").split("\n")
    return out + [_RULE]


class WrkLatency:
    name = "wrk-latency"

    def render(self, result: LoadResult, _config: LoadConfig) -> str:
        h = result.latency_us.total
        block = wrk2_block(h) if result.schedule is not None else wrk_block(h)
        return "\n".join(block) + "\n"
