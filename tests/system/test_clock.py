"""The clock of the target's CPUs: read from cpufreq where the kernel has
it (a recorded tree whose files the test moves, as a governor or turbo
would), averaged over a run by the monitor, and said to be unmeasured where
the machine hides it (this VM, the recorded tree without cpufreq)."""

from __future__ import annotations

import tarfile
import time
from pathlib import Path

import pytest

from corebench.monitor import Monitor
from corebench.system.check import CLOCK_SOURCE as SOURCE
from corebench.system.check import ClockReader, nominal_mhz, off_share
from corebench.system.topology import ROOT_ENV

TREES = Path(__file__).resolve().parents[1] / "data" / "sysfs"


def tree(root: Path, khz: dict[int, int] | None = None, governor: dict[int, str] | None = None) -> Path:
    """This VM's recorded tree, with cpufreq files for the CPUs in `khz`."""
    with tarfile.open(TREES / "this-vm-2.tar.gz") as tar:
        tar.extractall(root, members=[m for m in tar.getmembers() if m.isfile() or m.isdir()])  # noqa: S202
    for cpu, value in (khz or {}).items():
        d = root / "devices" / "system" / "cpu" / f"cpu{cpu}" / "cpufreq"
        d.mkdir()
        (d / "scaling_cur_freq").write_text(f"{value}\n")
        (d / "scaling_governor").write_text(f"{(governor or {}).get(cpu, 'performance')}\n")
    return root


def set_khz(root: Path, cpu: int, khz: int) -> None:
    (root / "devices" / "system" / "cpu" / f"cpu{cpu}" / "cpufreq" / "scaling_cur_freq").write_text(f"{khz}\n")


def test_the_clock_is_the_mean_of_the_cpus_current_clocks(tmp_path):
    root = tree(tmp_path, {0: 2_400_000, 1: 3_000_000})
    r = ClockReader.of([0, 1], root)
    assert r.readable and r.why == ""
    assert r.mhz() == pytest.approx(2700.0)
    assert ClockReader.of([1], root).mhz() == pytest.approx(3000.0)
    assert r.governor() == "performance" and r.turbo() is None


def test_governors_and_turbo_are_read_as_the_kernel_gives_them(tmp_path):
    root = tree(tmp_path, {0: 2_400_000, 1: 2_400_000}, {1: "powersave"})
    r = ClockReader.of([0, 1], root)
    assert r.governor() == "mixed: performance, powersave"
    cpu = root / "devices" / "system" / "cpu"
    (cpu / "cpufreq").mkdir(exist_ok=True)
    (cpu / "cpufreq" / "boost").write_text("1\n")
    assert r.turbo() is True
    (cpu / "intel_pstate").mkdir()
    (cpu / "intel_pstate" / "no_turbo").write_text("1\n")
    assert r.turbo() is False, "intel_pstate's knob comes first"


def test_a_machine_without_cpufreq_is_said_to_have_no_measured_clock(tmp_path):
    root = tree(tmp_path)
    r = ClockReader.of([0, 1], root)
    assert not r.readable and r.mhz() is None
    assert r.why.startswith("not measured: no cpufreq") and "VMs" in r.why
    # One CPU of the set without the file: no mean of a part of the set.
    partial = tree(tmp_path / "partial", {0: 2_000_000})
    assert not ClockReader.of([0, 1], partial).readable
    (partial / "devices/system/cpu/cpu0/cpufreq/scaling_cur_freq").write_text("garbage\n")
    assert ClockReader.of([0], partial).mhz() is None


def test_the_nominal_clock_is_read_from_cpuinfo(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nmodel name\t: X\ncpu MHz\t\t: 2596.128\n\nprocessor\t: 1\ncpu MHz\t\t: 1.0\n")
    assert nominal_mhz(info) == pytest.approx(2596.128)
    assert nominal_mhz(tmp_path / "missing") is None


def test_a_runs_distance_is_from_the_median_of_its_points_runs():
    clocks = [2400.0, 2410.0, 3000.0]
    assert off_share(3000.0, clocks) == pytest.approx(590 / 2410)
    assert off_share(2400.0, clocks) == pytest.approx(10 / 2410)
    # Two runs: each is measured from the other (their mean would call neither).
    assert off_share(2400.0, [2400.0, 2600.0]) == pytest.approx(200 / 2400)
    assert off_share(2600.0, [2400.0, 2600.0]) == pytest.approx(200 / 2400)


def _wait(m: Monitor, mhz: float) -> None:
    deadline = time.monotonic() + 20
    while not any(s.clock_mhz == mhz for s in m.samples):
        assert time.monotonic() < deadline, [s.clock_mhz for s in m.samples]
        time.sleep(0.05)


def test_the_monitor_averages_the_clock_over_the_run(tmp_path, monkeypatch):
    root = tree(tmp_path, {0: 2_400_000, 1: 2_400_000})
    monkeypatch.setenv(ROOT_ENV, str(root))
    with Monitor(None, 1, target_cpus=[0, 1]) as m:
        _wait(m, 2400.0)
        set_khz(root, 0, 3_000_000)
        set_khz(root, 1, 3_000_000)
        _wait(m, 3000.0)
    s = m.summary()
    assert (s.clock_min_mhz, s.clock_max_mhz) == (2400.0, 3000.0)
    clocks = [x.clock_mhz for x in m.samples]
    assert s.clock_mhz == pytest.approx(sum(clocks) / len(clocks))  # type: ignore[arg-type]
    assert s.clock == SOURCE and s.governor == "performance" and s.turbo is None


def test_the_monitor_says_where_the_clock_is_not_measured(tmp_path, monkeypatch):
    monkeypatch.setenv(ROOT_ENV, str(tree(tmp_path)))
    with Monitor(None, 1, target_cpus=[0]) as m:
        time.sleep(0.3)
    s = m.summary()
    assert s.clock_mhz is None and s.clock.startswith("not measured: no cpufreq") and "CPUs 0 " in s.clock
