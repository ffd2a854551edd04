"""wrk's and wrk2's latency blocks: wrk's number formats and rank rule."""

import random

from corebench.output.wrk import WrkLatency, format_time_us, print_units, wrk_block
from tests.output.hdr import result, summary


def test_units_and_padding_as_wrk_prints_them():
    # units.c: divide while at least 0.85 of the next unit; wrk.c's print_units pads to 10.
    cases = {
        0: "    0.00us",
        635.91: "  635.91us",
        849: "  849.00us",
        850: "    0.85ms",
        1250: "    1.25ms",
        999_999: " 1000.00ms",
        1_000_000: "    1.00s ",
        50_000_000: "   50.00s ",
        51_000_000: "    0.85m ",
        7_200_000_000: "  120.00m ",
    }
    assert {us: print_units(format_time_us(us)) for us in cases} == cases


def test_wrk_block_takes_wrks_ranks():
    rng = random.Random(3)
    values = sorted(rng.randint(100, 2047) for _ in range(333))  # exact in the histogram
    lines = wrk_block(summary(values))
    assert lines[0] == "  Latency Distribution"
    for line, p in zip(lines[1:], (50, 75, 90, 99), strict=True):
        # stats.c's stats_percentile: rank = round(p / 100 * count + 0.5).
        rank = int(p / 100 * len(values) + 1.0)
        assert line == f"{p:7d}%" + print_units(format_time_us(values[rank - 1]))


def test_wrk2_block_for_an_open_loop():
    s = summary([1000, 2000, 3000, 4000])
    text = WrkLatency().render(result(s, schedule=object()), None)
    lines = text.splitlines()
    assert lines[0] == "  Latency Distribution (HdrHistogram - Recorded Latency)"
    assert [line[:8] for line in lines[1:9]] == [
        " 50.000%",
        " 75.000%",
        " 90.000%",
        " 99.000%",
        " 99.900%",
        " 99.990%",
        " 99.999%",
        "100.000%",
    ]
    assert lines[8] == "100.000%" + print_units(format_time_us(s.max_us))
    assert lines[9:12] == [
        "",
        "  Detailed Percentile spectrum:",
        "       Value     Percentile TotalCount 1/(1-Percentile)",
    ]
    assert lines[-1] == "-" * 58 and lines[-2].startswith("#[Buckets =")
    closed = WrkLatency().render(result(s, schedule=None), None)
    assert closed.startswith("  Latency Distribution\n     50%")
