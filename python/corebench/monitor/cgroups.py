"""What the kernel counts for a cgroup of its own per process group (the
target, each service; targets/cpus.py makes them): CPU time of every
process that ever ran in it, exited or not yet reaped (cgroup v2 cpu.stat);
the time at least one of its tasks waited on I/O (io.pressure, PSI: the
per-group form of iowait; Documentation/accounting/psi.rst); and the bytes
it read and wrote on block devices (v2 io.stat, where the io controller is
on for the group; Documentation/admin-guide/cgroup-v2.rst). Each is None
where this machine's cgroups do not offer it. Not v1's
blkio.throttle.io_service_bytes: today's kernels leave it at 0 unless a
throttle is set, and 0 would read as "no I/O"."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path
from typing import NamedTuple


class Counters(NamedTuple):
    user_s: float | None = None
    system_s: float | None = None
    io_wait_s: float | None = None
    read_bytes: int | None = None
    write_bytes: int | None = None


def device_numbers(names: Sequence[str]) -> set[str]:
    """MAJ:MIN of block devices by name (loop0), as io.stat and blkio name them."""
    out = set()
    for name in names:
        try:
            out.add(Path("/sys/class/block", name, "dev").read_text().strip())
        except OSError:
            continue
    return out


def read(groups: Sequence[str], devices: Collection[str] = ()) -> Counters:
    """The counters of `groups` (a process group's measuring cgroups), block
    I/O counted on `devices` (MAJ:MIN) only when given: a loop device's
    writes would otherwise count again on the disk under its image."""
    user = system = wait = None
    read_b = write_b = None
    for g in map(Path, groups):
        cpu = _keyed(g / "cpu.stat")
        if "user_usec" in cpu:
            user, system = cpu["user_usec"] / 1e6, cpu.get("system_usec", 0) / 1e6
        some = _pressure(g / "io.pressure")
        if some is not None:
            wait = some
        io = _io_stat(g / "io.stat", devices)
        if io is not None:
            read_b, write_b = io
    return Counters(user, system, wait, read_b, write_b)


def _text(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def _keyed(path: Path) -> dict[str, int]:
    out = {}
    for line in (_text(path) or "").splitlines():
        k, _, v = line.partition(" ")
        if v.strip().isdigit():
            out[k] = int(v)
    return out


def _pressure(path: Path) -> float | None:
    # "some avg10=0.00 avg60=0.00 avg300=0.00 total=123": total is microseconds.
    for line in (_text(path) or "").splitlines():
        if line.startswith("some "):
            for item in line.split():
                if item.startswith("total="):
                    return int(item[6:]) / 1e6
    return None


def _io_stat(path: Path, devices: Collection[str]) -> tuple[int, int] | None:
    # "259:0 rbytes=4096 wbytes=0 rios=1 wios=0 dbytes=0 dios=0", one line per device.
    text = _text(path)
    if text is None:
        return None
    read_b = write_b = 0
    for line in text.splitlines():
        dev, *items = line.split()
        if devices and dev not in devices:
            continue
        kv = dict(i.split("=", 1) for i in items if "=" in i)
        read_b += int(kv.get("rbytes", 0))
        write_b += int(kv.get("wbytes", 0))
    return read_b, write_b
