"""Each process group measured by a cgroup of its own: CPU time of
processes that came and went between samples, and the time its tasks
waited on I/O (PSI), on this machine's real cgroups; io.stat's documented
format on a copy."""

import json
import os
import subprocess
import sys

import pytest

from corebench.monitor import INTERVAL_S, Monitor, cgroups
from corebench.targets.cpus import CpuControl

# Three children, each spinning 0.3 s and gone long before the next sample.
CHILDREN = (
    "for i in 1 2 3; do python3 -c 'import time\nt=time.process_time()\nwhile time.process_time()-t<0.3: pass'; done"
)


@pytest.fixture
def layout():
    made = CpuControl().layout(None, {"db": None})
    if not made.accounting:
        CpuControl.release(made)
        pytest.skip("no cgroup this machine lets corebench make for measuring (needs root and cgroup v2)")
    yield made
    CpuControl.release(made)
    assert not any(os.path.exists(g) for g in made.accounting + made.of("db").accounting)


def _enter(layout, command):
    enter = [sys.executable, "-m", "corebench.targets.enter", json.dumps(layout.to_json()), "--"]
    return subprocess.Popen([*enter, *command])


def test_a_group_counts_the_cpu_of_children_that_exited(layout):
    proc = _enter(layout.of("db"), ["sh", "-c", CHILDREN])
    assert proc.wait(timeout=60) == 0
    c = cgroups.read(layout.of("db").accounting)
    assert c.user_s is not None and c.system_s is not None and c.user_s + c.system_s >= 0.8, c
    # The target's group is another: nothing of the service's is counted in it.
    t = cgroups.read(layout.accounting)
    assert t.user_s is not None and t.user_s + (t.system_s or 0) < 0.1, t


def test_the_monitor_reads_each_group_apart(layout, tmp_path):
    target = _enter(layout, ["sleep", "3"])
    db = _enter(layout.of("db"), ["sh", "-c", f"sleep 0.5; {CHILDREN}; sleep 0.5"])
    try:
        accounting = {"target": layout.accounting, "db": layout.of("db").accounting}
        with Monitor(target.pid, 1, [], {"db": db.pid}, accounting) as m:
            db.wait(timeout=60)
    finally:
        target.kill()
        target.wait()
    s = m.summary()
    seconds = len(m.samples) * INTERVAL_S  # the tail sample is shorter: an upper bound
    # The shell's children were reaped by it, so a process tree alone sees
    # them late or not at all; the group sees each one.
    assert s.services["db"].cpu * seconds >= 0.7, s.services
    assert s.target_cpu < 0.1
    assert s.services["db"].io_wait is not None and 0 <= s.services["db"].io_wait <= 1
    assert s.target_io_wait is not None


def test_io_stat_lines_are_summed_per_device(tmp_path):
    g = tmp_path / "g"
    g.mkdir()
    (g / "io.stat").write_text(
        "7:0 rbytes=4096 wbytes=1048576 rios=1 wios=16 dbytes=0 dios=0\n"
        "254:0 rbytes=8192 wbytes=2097152 rios=2 wios=32 dbytes=0 dios=0\n"
    )
    (g / "io.pressure").write_text(
        "some avg10=1.00 avg60=0.50 avg300=0.10 total=2500000\nfull avg10=0 avg60=0 avg300=0 total=1000000\n"
    )
    (g / "cpu.stat").write_text("usage_usec 3000000\nuser_usec 2000000\nsystem_usec 1000000\n")
    assert cgroups.read([str(g)]) == cgroups.Counters(2.0, 1.0, 2.5, 12288, 3145728)
    # A loop device's writes are counted again on the disk under its image: only the watched one.
    assert cgroups.read([str(g)], {"7:0"}).write_bytes == 1048576
    assert cgroups.read([str(tmp_path / "none")]) == cgroups.Counters()


def test_a_device_is_named_by_its_numbers():
    name = next(iter(os.listdir("/sys/class/block")), None)
    if name is None:
        pytest.skip("no block device")
    (numbers,) = cgroups.device_numbers([name])
    assert numbers.count(":") == 1 and all(p.isdigit() for p in numbers.split(":"))
    assert cgroups.device_numbers(["nosuchdevice"]) == set()
