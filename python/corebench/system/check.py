"""What will make this machine's numbers noisy or unlike production, each
said in one line with the command that fixes it (`corebench system
check`), and the fixes applied and undone (`system tune`, `--reset`).

Modelled on pyperf's `system show/tune/reset` (Victor Stinner, "My journey
to stable benchmark", 2016): the frequency governor and turbo change the
clock between runs; SMT siblings share a core's units; interrupts handled
on the target's cores take its CPU; swap turns a memory shortage into disk
waits; steal and other busy processes take CPU the runs were given.

Every path is under two roots (COREBENCH_SYSFS_ROOT, COREBENCH_PROCFS_ROOT;
default /sys and /proc), so that the checks and the tuning can be tested on
copies of a machine's trees, never only on the machine that runs them.
A plan's runner asks the same checks before its first run
(`machine_checks`), and drops the page cache between runs where the plan
asks (`drop_caches`).

The same files say what the machine did and what it is: the clock its
target's CPUs ran at during each run, with the governor and turbo state
that set it (`ClockReader`, read by the monitor), and the facts stored
with each experiment (`facts`, `boot_id`). Each knob has one reader, for
the checks, the tuning and the clock alike (the governor's is the
topology's, `system.topology.governors`)."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from corebench import __version__
from corebench.system.topology import Topology, apart, format_list, governors, parse_list, sysfs_root

PROC_ENV = "COREBENCH_PROCFS_ROOT"
# Steal above this share of the CPUs over the sample: a VM sharing its host.
STEAL_NOTABLE = 0.01
# Others' CPU above this share of the machine: busy before the first run.
BUSY_NOTABLE = 0.10
SAMPLE_S = 0.5
# Short before a plan: the monitor measures steal and others' CPU during
# every run; this is only the warning before the first.
PLAN_SAMPLE_S = 0.25
DROP_CACHES = "/proc/sys/vm/drop_caches"


def procfs_root() -> Path:
    return Path(os.environ.get(PROC_ENV) or "/proc")


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool | None  # None: nothing to check here (the knob does not exist)
    said: str
    fix: str = ""  # the command that fixes it, where one does

    def line(self) -> str:
        mark = {True: "ok", False: "WARN", None: "n/a"}[self.ok]
        return f"{mark:>4}  {self.name}: {self.said}" + (f" Fix: {self.fix}" if self.fix and not self.ok else "")


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def turbo_knob(sys: Path) -> tuple[Path, bool] | None:
    """The turbo knob and whether turbo is on: intel_pstate's no_turbo
    (1 = off), else cpufreq's boost (1 = on); None where neither exists."""
    no_turbo = sys / "devices" / "system" / "cpu" / "intel_pstate" / "no_turbo"
    if (v := _read(no_turbo)) is not None:
        return no_turbo, v == "0"
    boost = sys / "devices" / "system" / "cpu" / "cpufreq" / "boost"
    if (v := _read(boost)) is not None:
        return boost, v == "1"
    return None


def irqs_on(proc: Path, cpus: list[int]) -> list[int]:
    """Interrupts that fired on `cpus` (/proc/interrupts) and may still be
    sent there (their smp_affinity_list)."""
    table = _read(proc / "interrupts") or ""
    lines = table.splitlines()
    if not lines:
        return []
    columns = [int(c[3:]) for c in lines[0].split() if c.startswith("CPU")]
    out = []
    for line in lines[1:]:
        name, _, rest = line.partition(":")
        if not name.strip().isdigit():
            continue
        counts = rest.split()[: len(columns)]
        fired = {cpu for cpu, n in zip(columns, counts, strict=False) if n.isdigit() and int(n) > 0}
        allowed = parse_list(_read(proc / "irq" / name.strip() / "smp_affinity_list") or "")
        if fired & set(cpus) and set(allowed) & set(cpus):
            out.append(int(name))
    return out


def _cpu_times(proc: Path) -> list[float]:
    """The machine's CPU times (proc(5)): user ... steal; guest time is in user already."""
    first = (_read(proc / "stat") or "cpu 0").splitlines()[0].split()[1:9]
    return [float(x) for x in first]


def check(
    t: Topology, target: list[int], sys: Path | None = None, proc: Path | None = None, sample_s: float = SAMPLE_S
) -> list[Check]:
    """Every check, for a target on `target` (its CPUs); steal and others'
    CPU over `sample_s`."""
    sys, proc = sys or sysfs_root(), proc or procfs_root()
    irqs = _irqs(proc, target, core_cpus(t, target), len(t.cpus))
    return [_governor(sys), _turbo(sys), _smt(t, sys), irqs, _swap(proc), *_load(proc, len(t.cpus), sample_s)]


def _governor(sys: Path) -> Check:
    g = governors(sys)
    if not g:
        return Check("clock governor", None, "no cpufreq here (common in VMs): the clock is not controllable.")
    slow = sorted(c for c, v in g.items() if v != "performance")
    if not slow:
        return Check("clock governor", True, "performance on every CPU.")
    kinds = ", ".join(sorted({g[c] for c in slow}))
    return Check(
        "clock governor",
        False,
        f"{kinds} on CPUs {format_list(slow)}: the clock follows the load, so runs differ by the clock they got.",
        "corebench system tune (or: cpupower frequency-set -g performance)",
    )


def _turbo(sys: Path) -> Check:
    knob = turbo_knob(sys)
    if knob is None:
        return Check("turbo", None, "no turbo control here (no intel_pstate/no_turbo, no cpufreq/boost).")
    if not knob[1]:
        return Check("turbo", True, f"off ({knob[0].name}).")
    return Check(
        "turbo",
        False,
        "on: the clock rises with fewer busy cores and with temperature, so more cores look worse than they are.",
        f"corebench system tune (or: echo {'1' if knob[0].name == 'no_turbo' else '0'} > {knob[0]})",
    )


def _smt(t: Topology, sys: Path) -> Check:
    control = _read(sys / "devices" / "system" / "cpu" / "smt" / "control")
    if not t.smt:
        return Check("SMT", True, f"no sibling threads ({control or 'no smt control'}): a CPU is a core.")
    return Check(
        "SMT",
        False,
        "on: a core's sibling threads share its units; corebench gives the target whole cores and keeps the "
        "generator off them, but other processes can still run on the siblings.",
        "corebench system tune --smt-off (or: echo off > /sys/devices/system/cpu/smt/control)",
    )


def _irqs(proc: Path, target: list[int], cores: list[int], cpus: int) -> Check:
    """Interrupts on the target's cores: its CPUs and their SMT siblings."""
    hits = irqs_on(proc, cores)
    if not (proc / "interrupts").exists():
        return Check("interrupts", None, "no /proc/interrupts here.")
    if not hits:
        return Check("interrupts", True, f"none handled on the target's cores (CPUs {format_list(cores)}).")
    if len(cores) >= cpus:
        # Nothing to move them to: said, not warned of before every experiment.
        return Check(
            "interrupts",
            None,
            f"{len(hits)} interrupt(s) handled on the target's cores, which are all of this machine's: there is "
            "no other core to move them to.",
        )
    return Check(
        "interrupts",
        False,
        f"{len(hits)} interrupt(s) handled on the target's cores (CPUs {format_list(cores)}; "
        f"IRQ {', '.join(map(str, hits[:8]))}{', ...' if len(hits) > 8 else ''}): their handling is CPU the "
        "target does not get.",
        f"corebench system tune --cpus {len(target)} (moves them to the other cores; --reset puts them back; "
        "a running irqbalance moves them again: stop it for the measurement)",
    )


def _swap(proc: Path) -> Check:
    lines = (_read(proc / "swaps") or "").splitlines()[1:]
    if not lines:
        return Check("swap", True, "none: a memory shortage fails fast instead of waiting on the disk.")
    return Check(
        "swap",
        False,
        f"{len(lines)} swap area(s) on: a run that pages measures the disk.",
        "swapoff -a (corebench does not change swap)",
    )


def _load(
    proc: Path, cpus: int, sample_s: float = SAMPLE_S, sleep: Callable[[float], None] = time.sleep
) -> list[Check]:
    """Steal and others' CPU over a short sample of /proc/stat."""
    a = _cpu_times(proc)
    sleep(sample_s)
    b = _cpu_times(proc)
    d = [y - x for x, y in zip(a, b, strict=False)]
    total = sum(d)
    if total <= 0:
        said = f"no CPU time passed in /proc/stat over {sample_s:g} s: nothing to read."
        return [Check("steal", None, said), Check("busy", None, said)]
    idle = sum(d[3:5]) if len(d) >= 5 else 0.0  # idle, iowait
    steal = d[7] if len(d) >= 8 else 0.0
    busy = (total - idle - steal) / total
    out = [
        Check("steal", True, f"{steal / total:.1%} of the CPUs' time over {sample_s:g} s.")
        if steal / total < STEAL_NOTABLE
        else Check(
            "steal",
            False,
            f"{steal / total:.1%} of the CPUs' time went to the hypervisor over {sample_s:g} s: a VM sharing its "
            "host gives less than its vCPUs.",
            "measure on dedicated hosts, or repeat the runs and read their steal flags",
        )
    ]
    out.append(
        Check("busy", True, f"{busy:.0%} of {cpus} CPUs busy before any run.")
        if busy < BUSY_NOTABLE
        else Check(
            "busy",
            False,
            f"{busy:.0%} of {cpus} CPUs busy before any run: other processes will take CPU from the runs.",
            "find them (top, pidstat 1) and stop them",
        )
    )
    return out


# --- tune and reset ---------------------------------------------------------


def state_file() -> Path:
    return Path(os.environ.get("COREBENCH_STATE_DIR") or "/var/lib/corebench") / "tune.json"


class TuneError(Exception):
    """Tuning could not start: nothing was changed."""


class Saved:
    """What tune replaced, in the order it did, on disk before each write:
    a state that cannot be saved stops tune before it changes anything."""

    def __init__(self, proc: Path) -> None:
        self.file = state_file()
        # Values saved in an earlier boot are the kernel's defaults again,
        # and IRQ numbers may name other devices.
        self.boot = boot_id(proc) or "unknown"
        self.stale = False
        data = json.loads(self.file.read_text()) if self.file.exists() else {}
        self.entries: list[list[str]] = data.get("entries", [])
        if self.entries and data.get("boot") != self.boot:
            self.entries, self.stale = [], True

    def keep(self, path: Path, before: str) -> None:
        if any(p == str(path) for p, _ in self.entries):
            return  # a second tune keeps the first one's value: reset restores the machine as it was found
        self.entries.append([str(path), before])
        self.flush()

    def flush(self) -> None:
        if not self.entries:
            self.file.unlink(missing_ok=True)
            with contextlib.suppress(OSError):
                self.file.parent.rmdir()  # ours, when tune made it and nothing else is in it
            return
        try:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.file.with_suffix(".tmp")
            tmp.write_text(json.dumps({"boot": self.boot, "entries": self.entries}, indent=1))
            tmp.replace(self.file)
        except OSError as e:
            raise TuneError(f"cannot save the settings to restore in {self.file} ({e.strerror})") from None


def tune(
    t: Topology, target: list[int], smt_off: bool = False, sys: Path | None = None, proc: Path | None = None
) -> tuple[list[str], list[str]]:
    """Applies the fixes this machine has knobs for, each after saving what
    it held (`reset` restores it); (what it did, what it could not)."""
    sys, proc = sys or sysfs_root(), proc or procfs_root()
    saved = Saved(proc)
    done: list[str] = []
    failed: list[str] = []

    def write(path: Path, value: str, said: str) -> None:
        before = _read(path)
        if before is None or before == value:
            return
        saved.keep(path, before)
        try:
            path.write_text(value + "\n")
            done.append(said)
        except OSError as e:
            failed.append(f"{said}: {path} refused ({e.strerror})")

    for cpu, g in governors(sys).items():
        gov = sys / "devices" / "system" / "cpu" / f"cpu{cpu}" / "cpufreq" / "scaling_governor"
        write(gov, "performance", f"cpu{cpu}: governor {g} -> performance")
    knob = turbo_knob(sys)
    if knob is not None and knob[1]:
        write(knob[0], "1" if knob[0].name == "no_turbo" else "0", f"turbo off ({knob[0]})")
    if smt_off:
        write(sys / "devices" / "system" / "cpu" / "smt" / "control", "off", "SMT off")
    others = apart(t, target)  # not the target's cores, nor their siblings
    for irq in irqs_on(proc, core_cpus(t, target)) if others else []:
        path = proc / "irq" / str(irq) / "smp_affinity_list"
        write(path, format_list(others), f"IRQ {irq} -> CPUs {format_list(others)}")
    return done, failed


def reset(proc: Path | None = None) -> list[str]:
    """Restores every setting tune changed, the last changed first (SMT
    back on before its siblings' governors); keeps what could not be."""
    proc = proc or procfs_root()
    saved = Saved(proc)
    if saved.stale:
        saved.flush()
        return ["the saved settings are from an earlier boot, which reset them: discarded"]
    roots = (str(sysfs_root()), str(proc))
    done, kept = [], []
    for path, value in reversed(saved.entries):
        if not path.startswith(roots):
            kept.append([path, value])
            done.append(f"{path}: left, outside the roots in use ({', '.join(roots)})")
            continue
        try:
            Path(path).write_text(value + "\n")
            done.append(f"{path}: {value}")
        except OSError as e:
            kept.append([path, value])
            done.append(f"{path}: could not restore {value!r} ({e.strerror}); kept for the next --reset")
    saved.entries = list(reversed(kept))
    saved.flush()
    return done


def core_cpus(t: Topology, cpus: list[int]) -> list[int]:
    """`cpus` and their SMT siblings: the CPUs of their physical cores."""
    known = {c.id for c in t.cpus}
    cores = {t.cpu(c).physical for c in cpus if c in known}
    return sorted({c.id for c in t.cpus if c.physical in cores} | set(cpus))


def machine_checks(topo: Topology | None, target: list[int]) -> list[str]:
    """What `corebench system check` warns of on this machine, for a target
    on `target`, one line each with its fix."""
    if topo is None:
        return []
    return [c.line().strip() for c in check(topo, target, sample_s=PLAN_SAMPLE_S) if c.ok is False]


def drop_caches() -> None:
    """Writes dirty pages out, then drops the clean page cache, dentries and
    inodes (3: both kinds; the kernel's Documentation/admin-guide/sysctl/vm.rst)."""
    os.sync()
    with open(DROP_CACHES, "w") as f:
        f.write("3\n")


# --- the clock during runs ---------------------------------------------------
# The clock the target's CPUs ran at, measured during each run, with the
# governor and the turbo state that set it.
#
# Where the kernel has cpufreq, each CPU's `scaling_cur_freq` is read at
# every monitor sample and averaged over the run. On x86 CPUs with the
# APERF/MPERF counters the kernel computes that file from them: the average
# effective frequency since the last read or tick, turbo and throttling
# included (Documentation/admin-guide/pm/cpufreq.rst, "scaling_cur_freq";
# intel_pstate.rst; arch/x86/kernel/cpu/aperfmperf.c), which is the clock
# turbostat reports. Elsewhere it is the last frequency the driver asked for.
#
# Many VMs have no cpufreq and no MSR access: there the clock is not
# measured, and said so. /proc/cpuinfo's "cpu MHz" on such a machine is the
# nominal (TSC) rate, which never moves, so it is kept apart, as `nominal`.
#
# The sysfs root is the topology's (COREBENCH_SYSFS_ROOT), so tests read
# recorded trees of machines that have cpufreq.

CLOCK_SOURCE = "cpufreq scaling_cur_freq (on x86 with APERF/MPERF: the effective clock, turbo included)"
# A run whose clock is this far from the median of its point's runs (the
# other run, where there are two): a CPU-bound throughput moves about as
# much, which is the size of the effects the comparisons report.
CLOCK_NOTABLE_SHARE = 0.05


def _cpu_dir(sys: Path, cpu: int) -> Path:
    return sys / "devices" / "system" / "cpu" / f"cpu{cpu}" / "cpufreq"


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
        each = governors(self.sys)
        found = sorted({each[c] for c in self.cpus if c in each})
        return None if not found else found[0] if len(found) == 1 else "mixed: " + ", ".join(found)

    def turbo(self) -> bool | None:
        """Whether turbo is on (`turbo_knob`'s state); None where no knob exists."""
        knob = turbo_knob(self.sys)
        return knob[1] if knob is not None else None


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


# --- what the machine is: the facts stored with an experiment ----------------


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def facts(cpu_method: str, server: str | None) -> dict[str, Any]:
    freq = psutil.cpu_freq()
    return {
        "cpu_model": _cpu_model(),
        "cpus": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)),
        "mhz": round(freq.current, 1) if freq else None,
        "kernel": platform.release(),
        "machine": platform.machine(),
        "python": platform.python_version(),
        "corebench_version": __version__,
        "cpu_control": cpu_method,
        "server_version": server,
        "memory_bytes": psutil.virtual_memory().total,
    }


def boot_id(proc: Path = Path("/proc")) -> str:
    """This host's boot id ("" where unreadable): two processes with the
    same one run on one machine. Read from the real /proc unless told
    otherwise: which machine this is does not follow a test's recorded
    tree (COREBENCH_PROCFS_ROOT); tune's saved state passes its own root."""
    return _read(proc / "sys" / "kernel" / "random" / "boot_id") or ""
