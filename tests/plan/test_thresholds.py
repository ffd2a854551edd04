"""Thresholds: parsing, and the exit codes a CI pipeline sees."""

import pytest

from corebench.plan.thresholds import parse
from tests.conftest import run_cli


def test_parse():
    t = parse("p999<=100ms")
    assert (t.metric, t.op, t.limit) == ("p99.9", "<=", 100_000)
    assert parse("errors<0.1%").limit == pytest.approx(0.001) and parse("errors<0.1%").share
    assert parse("errors<=10").limit == 10 and not parse("errors<=10").share
    assert parse("rps>5000").limit == 5000 and parse("mean<5ms").limit == 5000
    for bad in ("p99<20", "p97<1ms", "speed>3", "rps>5ms", "p99 = 2ms"):
        with pytest.raises(ValueError):
            parse(bad)


def test_thresholds_pass_fail_and_bad_input(nginx):
    ok = run_cli("load", "-c", "2", "-n", "500", "-k", "--threshold", "errors<1%", "--threshold", "p99<10s", nginx.url)
    assert ok.returncode == 0, ok.stderr
    assert "threshold errors<1%: 0.000%  ok" in ok.stdout and "threshold p99<10s: " in ok.stdout
    bad = run_cli("load", "-c", "2", "-n", "500", "-k", "--threshold", "rps>100000000", nginx.url)
    assert bad.returncode == 99 and "threshold rps>100000000: " in bad.stdout and "FAILED" in bad.stdout
    wrong = run_cli("load", "-n", "5", "--threshold", "p99<20", nginx.url)
    assert wrong.returncode == 2 and wrong.stderr.startswith("corebench: error: --threshold 'p99<20': a latency needs")
