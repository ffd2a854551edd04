"""The sysfs CPU trees the topology tests read (COREBENCH_SYSFS_ROOT),
each kept as NAME.tar.gz (a tree is some 200 small files) and unpacked by
the tests.

    python tests/data/sysfs/make_trees.py            # rewrite the described trees
    python tests/data/sysfs/make_trees.py record NAME   # record this machine's /sys as NAME

`this-vm-2` is recorded from the 2-core VM the project is developed on.
The others are written from the kernel's numbering on those machines
(Documentation/admin-guide/cputopology.rst), not recorded there: Intel
servers list every core's first thread before any second thread, AMD
desktops list a core's two threads next to each other, and a cloud VM
without SMT shows each vCPU as a core of its own."""

from __future__ import annotations

import gzip
import shutil
import sys
import tarfile
from pathlib import Path

from corebench.system.topology import format_list

HERE = Path(__file__).resolve().parent
FILES = ("physical_package_id", "core_id", "thread_siblings_list")


def write(name: str, cpus: dict[int, tuple[int, int, int]], l3: list[list[int]], freq: tuple[str, int] | None) -> None:
    """cpus: id -> (package, core_id, node)."""
    root = HERE / name
    shutil.rmtree(root, ignore_errors=True)
    base = root / "devices" / "system" / "cpu"
    base.mkdir(parents=True)
    (base / "online").write_text(format_list(list(cpus)) + "\n")
    for n, (pkg, core, _) in cpus.items():
        siblings = [m for m, (p, c, _) in cpus.items() if (p, c) == (pkg, core)]
        d = base / f"cpu{n}" / "topology"
        d.mkdir(parents=True)
        (d / "physical_package_id").write_text(f"{pkg}\n")
        (d / "core_id").write_text(f"{core}\n")
        (d / "thread_siblings_list").write_text(format_list(siblings) + "\n")
        shared = next(group for group in l3 if n in group)
        for index, (level, kind, who) in enumerate(
            ((1, "Data", siblings), (1, "Instruction", siblings), (2, "Unified", siblings), (3, "Unified", shared))
        ):
            c = base / f"cpu{n}" / "cache" / f"index{index}"
            c.mkdir(parents=True)
            (c / "level").write_text(f"{level}\n")
            (c / "type").write_text(f"{kind}\n")
            (c / "shared_cpu_list").write_text(format_list(who) + "\n")
        if freq:
            f = base / f"cpu{n}" / "cpufreq"
            f.mkdir()
            (f / "scaling_governor").write_text(freq[0] + "\n")
            (f / "cpuinfo_max_freq").write_text(f"{freq[1]}\n")
    for node in sorted({x[2] for x in cpus.values()}):
        d = root / "devices" / "system" / "node" / f"node{node}"
        d.mkdir(parents=True)
        (d / "cpulist").write_text(format_list([n for n, x in cpus.items() if x[2] == node]) + "\n")


def described() -> None:
    # 2 sockets of 8 cores with 2 threads (Intel numbering; Skylake-SP core ids skip 5-7).
    core_ids = [0, 1, 2, 3, 4, 8, 9, 10]
    xeon = {}
    for thread in range(2):
        for pkg in range(2):
            for i, core in enumerate(core_ids):
                xeon[thread * 16 + pkg * 8 + i] = (pkg, core, pkg)
    xeon = dict(sorted(xeon.items()))
    write("xeon-2s-8c-smt", xeon, [[n for n, x in xeon.items() if x[0] == p] for p in (0, 1)], ("powersave", 3000000))
    # 1 socket of 6 cores with 2 threads, AMD numbering (siblings adjacent), 2 L3 complexes of 3 cores.
    ryzen = {n: (0, n // 2, 0) for n in range(12)}
    write("ryzen-1s-6c-smt", ryzen, [list(range(6)), list(range(6, 12))], ("schedutil", 4200000))
    # A cloud VM of 4 vCPUs without SMT and without cpufreq.
    vm = {n: (0, n, 0) for n in range(4)}
    write("cloud-vm-4", vm, [list(range(4))], None)


def record(name: str, sys_root: Path = Path("/sys")) -> None:
    """This machine's tree: the files the topology reader reads, copied."""
    root = HERE / name
    shutil.rmtree(root, ignore_errors=True)
    src = sys_root / "devices" / "system"
    wanted = [
        "cpu/online",
        "cpu/cpu*/topology/" + "{" + ",".join(FILES) + "}",
        "cpu/cpu*/cache/index*/level",
        "cpu/cpu*/cache/index*/type",
        "cpu/cpu*/cache/index*/shared_cpu_list",
        "cpu/cpu*/cpufreq/scaling_governor",
        "cpu/cpu*/cpufreq/cpuinfo_max_freq",
        "node/node*/cpulist",
    ]
    for pattern in wanted:
        parts = [pattern] if "{" not in pattern else [pattern.split("{")[0] + f for f in FILES]
        for p in parts:
            for f in src.glob(p):
                dest = root / "devices" / "system" / f.relative_to(src)
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_text(f.read_text())


def pack(name: str) -> None:
    """NAME/ as NAME.tar.gz, its members relative to the tree's root, with
    fixed times and owners so that a rewrite changes no byte."""

    def same(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
        return info

    root = HERE / name
    # gzip's header holds a time too: fixed, as the members' are.
    with (
        gzip.GzipFile(HERE / f"{name}.tar.gz", "wb", compresslevel=9, mtime=0) as gz,
        tarfile.open(fileobj=gz, mode="w") as tar,
    ):
        for path in sorted(root.rglob("*")):
            tar.add(path, arcname=str(path.relative_to(root)), recursive=False, filter=same)
    shutil.rmtree(root)


if __name__ == "__main__":
    if sys.argv[1:2] == ["record"]:
        record(sys.argv[2])
        pack(sys.argv[2])
    else:
        described()
        for tree in ("xeon-2s-8c-smt", "ryzen-1s-6c-smt", "cloud-vm-4"):
            pack(tree)
