"""The clock the target's CPUs ran at, measured during each run, with the
governor and the turbo state that set it.

Where the kernel has cpufreq, each CPU's `scaling_cur_freq` is read at
every monitor sample and averaged over the run. On x86 CPUs with the
APERF/MPERF counters the kernel computes that file from them: the average
effective frequency since the last read or tick, turbo and throttling
included (Documentation/admin-guide/pm/cpufreq.rst, "scaling_cur_freq";
intel_pstate.rst; arch/x86/kernel/cpu/aperfmperf.c), which is the clock
turbostat reports. Elsewhere it is the last frequency the driver asked for.

Many VMs have no cpufreq and no MSR access: there the clock is not
measured, and said so. /proc/cpuinfo's "cpu MHz" on such a machine is the
nominal (TSC) rate, which never moves, so it is kept apart, as `nominal`.

The sysfs root is the topology's (COREBENCH_SYSFS_ROOT), so tests read
recorded trees of machines that have cpufreq."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from corebench.system.topology import sysfs_root

SOURCE = "cpufreq scaling_cur_freq (on x86 with APERF/MPERF: the effective clock, turbo included)"
# A run whose clock is this far from the median of its point's runs (the
# other run, where there are two): a CPU-bound throughput moves about as
# much, which is the size of the effects the comparisons report.
NOTABLE_SHARE = 0.05


def _cpu_dir(sys: Path, cpu: int) -> Path:
    return sys / "devices" / "system" / "cpu" / f"cpu{cpu}" / "cpufreq"


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


@dataclass(frozen=True)
class ClockReader:
    """Reads the current clock of a set of CPUs; `readable` is False where
    the machine gives none (then `why` says so)."""

    cpus: tuple[int, ...]
    sys: Path
    files: tuple[Path, ...]

    @classmethod
    def of(cls, cpus: Sequence[int], sys: Path | None = None) -> ClockReader:
        sys = sys or sysfs_root()
        files = tuple(f for c in cpus if (f := _cpu_dir(sys, c) / "scaling_cur_freq").exists())
        return cls(tuple(cpus), sys, files if len(files) == len(cpus) else ())

    @property
    def readable(self) -> bool:
        return bool(self.files)

    @property
    def why(self) -> str:
        if self.readable:
            return ""
        return (
            f"not measured: no cpufreq under {self.sys}/devices/system/cpu for CPUs "
            f"{','.join(map(str, self.cpus)) or '(none)'} (common in VMs, which hide the clock)"
        )

    def mhz(self) -> float | None:
        """The mean of the CPUs' current clocks, MHz; None where one is unreadable."""
        total = 0.0
        for f in self.files:
            text = _read(f)
            if text is None or not text.isdigit():
                return None
            total += int(text) / 1000  # the file is in kHz
        return total / len(self.files) if self.files else None

    def governor(self) -> str | None:
        """The CPUs' governor, or "mixed: a, b" where they differ."""
        found = sorted({g for c in self.cpus if (g := _read(_cpu_dir(self.sys, c) / "scaling_governor"))})
        return None if not found else found[0] if len(found) == 1 else "mixed: " + ", ".join(found)

    def turbo(self) -> bool | None:
        """intel_pstate's no_turbo (1 = off), else cpufreq's boost (1 = on);
        None where neither exists."""
        base = self.sys / "devices" / "system" / "cpu"
        if (v := _read(base / "intel_pstate" / "no_turbo")) is not None:
            return v == "0"
        if (v := _read(base / "cpufreq" / "boost")) is not None:
            return v == "1"
        return None


def nominal_mhz(cpuinfo: Path = Path("/proc/cpuinfo")) -> float | None:
    """The first "cpu MHz" of /proc/cpuinfo: on a machine without cpufreq,
    the rate the kernel was told (the TSC's), not a measurement."""
    try:
        with cpuinfo.open() as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "cpu MHz":
                    return float(value)
    except (OSError, ValueError):
        return None
    return None


def off_share(mhz: float, runs: Sequence[float]) -> float:
    """How far a run's clock is from the median of its point's `runs` (itself
    included), as a share; with two runs, from the other one: their mean
    would put each half-way and call neither."""
    if len(runs) == 2:
        other = runs[1] if runs[0] == mhz else runs[0]
        return abs(mhz - other) / min(mhz, other) if min(mhz, other) > 0 else 0.0
    ordered = sorted(runs)
    mid = len(ordered) // 2
    median = ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
    return abs(mhz - median) / median if median > 0 else 0.0
