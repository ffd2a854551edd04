"""ab's -g file: its columns, ab's rounding and sort, APR's time stamps."""

import ctypes
import ctypes.util
import time
from types import SimpleNamespace

import pytest

from corebench.output.gnuplot import Gnuplot, apr_ctime
from corebench.result import Trace


def trace(rows: list[tuple[int, int, int, int]]) -> Trace:
    """(start_us, connect_us, waiting_us, total_us) per response."""
    return Trace(
        start_us=[r[0] for r in rows],
        connect_us=[r[1] for r in rows],
        waiting_us=[r[2] for r in rows],
        processing_us=[r[3] - r[1] for r in rows],
        total_us=[r[3] for r in rows],
        status=[200] * len(rows),
        left_out=0,
    )


def test_columns_rounding_and_order():
    start = 1_795_448_062.25
    rows = [(0, 499, 100, 2_500), (1_800_000, 500, 1_499, 1_499), (10, 0, 0, 0), (20, 1_500, 600, 10_000)]
    text = Gnuplot().render(SimpleNamespace(started_unix_s=start, trace=trace(rows)), None)
    lines = text.splitlines()
    assert lines[0] == "starttime\tseconds\tctime\tdtime\tttime\twait"
    cells = [line.split("\t") for line in lines[1:]]
    # Sorted by total time; ab's ap_round_ms: (t + 500) / 1000, dtime from the unrounded difference.
    assert [c[1:] for c in cells] == [
        ["1795448062", "0", "0", "0", "0"],
        ["1795448064", "1", "1", "1", "1"],
        ["1795448062", "0", "2", "3", "0"],
        ["1795448062", "2", "9", "10", "1"],
    ]
    assert cells[1][0] == apr_ctime(1_795_448_064) and cells[0][0] == apr_ctime(1_795_448_062)


def test_the_time_stamp_is_aprs():
    name = ctypes.util.find_library("apr-1")
    if name is None:
        pytest.skip("libapr (apache2-utils' dependency) is not installed")
    apr = ctypes.CDLL(name)
    apr.apr_initialize()
    buf = ctypes.create_string_buffer(32)
    for t in (0, 1_700_000_000, 1_794_000_000, int(time.time())):
        apr.apr_ctime(buf, ctypes.c_int64(t * 1_000_000))
        assert apr_ctime(t) == buf.value.decode(), t


def test_without_a_trace_it_says_what_is_missing():
    with pytest.raises(ValueError, match="trace"):
        Gnuplot().render(SimpleNamespace(started_unix_s=0.0, trace=None), None)
