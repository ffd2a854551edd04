"""Steal time: the cores' worth a hypervisor took from this VM, from two
readings of /proc/stat's per-CPU times, and the verdict it earns."""

from collections import namedtuple

from corebench.analysis.points import PointStats
from corebench.analysis.stats import summarize
from corebench.analysis.verdict import verdicts
from corebench.monitor import Disk, Monitor, Tree
from tests.support.records import load_result, stored_run

Times = namedtuple("Times", "user system idle iowait softirq steal")


def test_steal_is_measured_per_interval_in_cores():
    m = Monitor(None, 1)
    m._start = 0.0
    # Two CPUs over 1 s: 0.1 s and 0.3 s stolen: 0.4 cores' worth.
    a = (0.0, [Times(1, 1, 1, 0, 0, 2.0), Times(1, 1, 1, 0, 0, 5.0)], Tree(), 0.0, 0, Disk(), {}, None)
    b = (1.0, [Times(1.5, 1.2, 1.2, 0, 0, 2.1), Times(1.3, 1.1, 1.3, 0, 0, 5.3)], Tree(), 0.0, 0, Disk(), {}, None)
    s = m._sample(a, b)
    assert abs(s.steal_cpu - 0.4) < 1e-9
    assert abs(s.cores[1]["steal"] - 0.3) < 1e-9, "0.3 of its 1.0 s"
    m.samples = [s]
    summary = m.summary()
    assert summary.steal_notable and abs(summary.steal_cpu - 0.4) < 1e-9


def test_runs_with_steal_get_a_verdict_line():
    runs = [stored_run({"cpus": 1}, load_result(p99_us=1000))] * 3
    rps = [1000.0, 1010.0, 990.0]
    s = summarize(rps)
    p = PointStats({"cpus": 1}, runs, runs, s, s, s, 0, 0.0, None, None, False, None, False, rps)
    assert not any(v.startswith("Steal time") for v in verdicts([p]))
    p.steal_runs, p.steal_max_s = 2, 9.7
    [line] = [v for v in verdicts([p]) if v.startswith("Steal time")]
    assert "2 of 3 measured runs" in line and "9.7 CPU-seconds" in line
