"""Thresholds: parsing, and the exit codes a CI pipeline sees."""

import pytest

from corebench.plan.thresholds import judge, parse
from tests.conftest import run_cli
from tests.support.records import load_result


def test_parse():
    t = parse("p999<=100ms")
    assert (t.metric, t.op, t.limit) == ("p99.9", "<=", 100_000)
    assert parse("errors<0.1%").limit == pytest.approx(0.001) and parse("errors<0.1%").share
    assert parse("errors<=10").limit == 10 and not parse("errors<=10").share
    assert parse("rps>5000").limit == 5000 and parse("mean<5ms").limit == 5000
    for bad in ("p99<20", "p97<1ms", "speed>3", "rps>5ms", "p99 = 2ms"):
        with pytest.raises(ValueError):
            parse(bad)
    with pytest.raises(ValueError, match="a latency bound must be above 0"):
        parse("p99<=0ms")  # an objective no response can meet


def test_a_latency_bound_is_not_met_without_a_response():
    # A refused port: every request an error, no latency at all (the p99
    # reads 0): "p99<20ms" said ok; it is not met.
    dead = load_result(status_counts={}, failed=50, p50_us=0, p99_us=0)
    assert dead.latency_us.total.count == 0
    ((t, value, ok),) = judge([parse("p99<20ms")], dead)
    assert not ok and t.shown(value) == "no response measured"
    ((_, _, ok),) = judge([parse("p99<20ms")], load_result(ok=10, p99_us=5000))
    assert ok


def test_thresholds_pass_fail_and_bad_input(nginx):
    ok = run_cli("load", "-c", "2", "-n", "500", "-k", "--threshold", "errors<1%", "--threshold", "p99<10s", nginx.url)
    assert ok.returncode == 0, ok.stderr
    assert "threshold errors<1%: 0.000%  ok" in ok.stdout and "threshold p99<10s: " in ok.stdout
    bad = run_cli("load", "-c", "2", "-n", "500", "-k", "--threshold", "rps>100000000", nginx.url)
    assert bad.returncode == 99 and "threshold rps>100000000: " in bad.stdout and "FAILED" in bad.stdout
    wrong = run_cli("load", "-n", "5", "--threshold", "p99<20", nginx.url)
    assert wrong.returncode == 2 and wrong.stderr.startswith("corebench: error: --threshold 'p99<20': a latency needs")
