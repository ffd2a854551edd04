"""A fresh filesystem for each start of a target: a sparse image file made
with mkfs, loop-mounted with the plan's options on the target's folder
(`{dir}`), so its data, logs and pages land on it; unmounted, and the loop
device freed, when the target stops, also after a failure or Ctrl-C. An
image left by a killed corebench is found again in the experiment folder
that corebench made for it (never by its name alone) and removed by
`corebench cleanup`, with the processes that run recorded there (`owned`).

Each type names a kernel filesystem and the mount options that make it
the setup measured, so that a level such as "ext4-writeback" means one
thing in every plan."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from corebench.plan.model import Filesystem, FsTypeName
from corebench.targets import owned
from corebench.targets.owned import OWNER_FILE, WORK_PREFIX, alive

# Images are named so; `corebench cleanup` removes one only in an
# experiment folder of a corebench that is gone (`ours`).
IMAGE_SUFFIX = ".corebench-fs.img"
_LOOP_SYS = Path("/sys/block")


@dataclass(frozen=True)
class FsType:
    kernel: str  # the name in /proc/filesystems and for mount -t
    mkfs: list[str]  # the command, the image's path appended
    package: str  # the Debian package that has mkfs
    options: tuple[str, ...] = ()
    min_bytes: int = 128 * 1024**2  # what mkfs refuses below


# ext4's lazy init would write the inode tables and journal in a kernel
# thread after the mount, during the measurements: it is done at mkfs.
_EXT4 = ["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0"]
TYPES: dict[FsTypeName, FsType] = {
    "ext4": FsType("ext4", _EXT4, "e2fsprogs"),
    # ext3's three journalling modes (the field report's), on today's ext4.
    "ext4-journal": FsType("ext4", _EXT4, "e2fsprogs", ("data=journal",)),
    "ext4-ordered": FsType("ext4", _EXT4, "e2fsprogs", ("data=ordered",)),
    "ext4-writeback": FsType("ext4", _EXT4, "e2fsprogs", ("data=writeback",)),
    "xfs": FsType("xfs", ["mkfs.xfs", "-q", "-f"], "xfsprogs", min_bytes=300 * 1024**2),
    "btrfs": FsType("btrfs", ["mkfs.btrfs", "-q", "-f"], "btrfs-progs"),
}
# "atime" is strict: every read writes the access time, as kernels did
# before 2.6.30. Plain `-o atime` now gives relatime.
ATIME = {"atime": "strictatime", "relatime": "relatime", "noatime": "noatime"}


class FilesystemError(Exception):
    """The image could not be made or mounted: the start fails, the runs of
    this configuration fail with the reason, the experiment goes on."""


def missing(spec: Filesystem) -> str | None:
    """Why this machine cannot make the filesystem, in one line; None when it can."""
    if os.geteuid() != 0:
        return "[target.filesystem] makes and mounts filesystem images (mkfs, mount): run corebench as root"
    t = TYPES[spec.type]
    if spec.size_bytes < t.min_bytes:
        return f"{spec.type} needs an image of at least {t.min_bytes // 1024**2} MB: raise size"
    if shutil.which(t.mkfs[0]) is None:
        return f"{t.mkfs[0]} is not installed (for filesystem {spec.type!r}): install Debian's {t.package}"
    if not _kernel_has(t.kernel):
        return f"this kernel has no {t.kernel} filesystem (for {spec.type!r}): modprobe {t.kernel}, or drop the level"
    return None


def _kernel_has(kernel: str) -> bool:
    try:
        known = Path("/proc/filesystems").read_text().split()
    except OSError:
        return True  # not knowable here: mount says so if not
    if kernel in known:
        return True
    # Not loaded yet: mount loads the module when it exists.
    with contextlib.suppress(OSError):
        release = os.uname().release
        return any(Path(f"/lib/modules/{release}/kernel/fs/{kernel}").glob(f"{kernel}.ko*"))
    return False


def mount_options(spec: Filesystem) -> list[str]:
    opts = list(TYPES[spec.type].options)
    if spec.atime is not None:
        opts.append(ATIME[spec.atime])
    return opts + list(spec.options)


@dataclass
class Mounted:
    spec: Filesystem
    image: Path
    at: Path
    # As the kernel reports the mount (/proc/self/mountinfo): what was measured.
    facts: dict[str, str]


def image_for(run_dir: Path) -> Path:
    return run_dir.with_name(run_dir.name + IMAGE_SUFFIX)


def mount(spec: Filesystem, run_dir: Path) -> Mounted:
    """Makes the image and mounts it on `run_dir` (made empty for it)."""
    why = missing(spec)
    if why is not None:
        raise FilesystemError(why)
    image = image_for(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    if any(run_dir.iterdir()):
        raise FilesystemError(f"{run_dir} is not empty: a filesystem is mounted only on an empty folder")
    try:
        with image.open("wb") as f:
            f.truncate(spec.size_bytes)
        _call([*TYPES[spec.type].mkfs, str(image)], f"mkfs for {spec.type}")
        opts = ",".join(["loop", *mount_options(spec)])
        _call(["mount", "-t", TYPES[spec.type].kernel, "-o", opts, str(image), str(run_dir)], "mount")
    except BaseException:
        with contextlib.suppress(OSError):
            image.unlink()
        raise
    m = Mounted(spec, image, run_dir, {})
    m.facts = {"type": spec.type, "image": str(image), "size_bytes": str(spec.size_bytes), **_mountinfo(run_dir)}
    return m


def _call(argv: list[str], what: str) -> None:
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise FilesystemError(f"{what}: {e}") from None
    if p.returncode != 0:
        # The first line says why; usage text may follow it.
        lines = (p.stderr or p.stdout).strip().splitlines()
        raise FilesystemError(f"{what} failed ({' '.join(argv)}): {lines[0] if lines else f'status {p.returncode}'}")


def _mountinfo(at: Path) -> dict[str, str]:
    """The mount's source, type and options as the kernel has them."""
    target = str(at.resolve())
    with contextlib.suppress(OSError), open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fields, tail = left.split(), right.split()
            if len(fields) >= 6 and len(tail) >= 3 and _unescape(fields[4]) == target:
                per_mount = fields[5].split(",")
                # Neither noatime nor relatime: every read writes its access time.
                atime = next((o for o in per_mount if o in ("noatime", "relatime")), "strictatime")
                return {
                    "kernel_type": tail[0],
                    "device": tail[1],
                    "mount_options": fields[5],
                    "fs_options": tail[2],
                    "atime": atime,
                }
    return {}


def _unescape(path: str) -> str:
    # mountinfo writes space, tab, newline and backslash as octal escapes.
    for code, ch in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        path = path.replace(code, ch)
    return path


def unmount(m: Mounted, keep: tuple[str, ...] = ()) -> None:
    """Copies `keep` (files of the folder, e.g. the target's log) out beside
    the image's place, unmounts (the loop device goes with it) and deletes
    the image."""
    for name in keep:
        with contextlib.suppress(OSError):
            shutil.copyfile(m.at / name, m.at.with_name(f"{m.at.name}.{name}"))
    _release(m.at, m.image)


def users(at: Path) -> list[int]:
    """Processes with their working folder or an open file on the mount
    (what keeps it busy; said, never killed for it)."""
    root = str(at.resolve())
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            links = [proc / "cwd", *(proc / "fd").iterdir()]
        except OSError:
            continue
        for link in links:
            with contextlib.suppress(OSError):
                target = os.readlink(link)
                if target == root or target.startswith(root + "/"):
                    found.append(int(proc.name))
                    break
    return [pid for pid in found if pid != os.getpid()]


def _release(at: Path | None, image: Path) -> None:
    if at is not None:
        p = subprocess.run(["umount", str(at)], capture_output=True, text=True, check=False)
        if p.returncode != 0 and _mountinfo(at):
            # Busy (a straggler of the target): detach now, freed when let go.
            subprocess.run(["umount", "--lazy", str(at)], capture_output=True, check=False)
    for dev in loops_of(image):
        subprocess.run(["losetup", "--detach", dev], capture_output=True, check=False)
    with contextlib.suppress(OSError):
        image.unlink()


def loops_of(image: Path | None = None) -> list[str]:
    """Loop devices backed by corebench images (by `image`, when given)."""
    out = []
    for backing in _LOOP_SYS.glob("loop*/loop/backing_file"):
        try:
            path = backing.read_text().strip().removesuffix(" (deleted)")
        except OSError:
            continue
        if (image is None and path.endswith(IMAGE_SUFFIX)) or (image is not None and path == str(image)):
            out.append(f"/dev/{backing.parent.parent.name}")
    return out


def leftovers() -> list[dict[str, str]]:
    """corebench's images still mounted or attached: each with its loop
    device, its backing image and where it is mounted (if it is)."""
    mounted: dict[str, str] = {}
    with contextlib.suppress(OSError), open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fields, tail = left.split(), right.split()
            if len(fields) >= 5 and len(tail) >= 2:
                mounted[tail[1]] = _unescape(fields[4])
    out = []
    for dev in loops_of():
        backing = (_LOOP_SYS / Path(dev).name / "loop" / "backing_file").read_text().strip()
        out.append({"device": dev, "image": backing.removesuffix(" (deleted)"), "mounted_on": mounted.get(dev, "")})
    return out


def owner(image: Path) -> int | None:
    """The live corebench whose images these are, if any."""
    return _live_owner(image.parent)


def ours(image: Path) -> bool:
    """An image a corebench made, in an experiment folder of its own
    (tempfile's corebench-run-*, holding OWNER_FILE): never a user's file
    of the same name elsewhere."""
    return (
        image.name.endswith(IMAGE_SUFFIX)
        and image.parent.name.startswith(WORK_PREFIX)
        and (image.parent / OWNER_FILE).is_file()
    )


def _live_owner(work_dir: Path) -> int | None:
    try:
        pid = int((work_dir / OWNER_FILE).read_text())
    except (OSError, ValueError):
        return None
    return pid if alive(pid) else None


def dead_work_dirs(tmp: Path | None = None) -> list[Path]:
    """Experiments' folders (corebench-run-*) whose corebench is gone."""
    base = tmp or Path(tempfile.gettempdir())
    return [d for d in sorted(base.glob(f"{WORK_PREFIX}*")) if (d / OWNER_FILE).exists() and _live_owner(d) is None]


def orphans() -> list[dict[str, str]]:
    """Leftovers of a corebench that is gone: its images, attached still."""
    return [left for left in leftovers() if ours(Path(left["image"])) and owner(Path(left["image"])) is None]


def foreign() -> list[dict[str, str]]:
    """Images named like ours that no corebench made (a user's): left alone."""
    return [left for left in leftovers() if not ours(Path(left["image"]))]


def cleanup() -> list[dict[str, str]]:
    """Stops the processes a gone corebench started in each leftover's
    experiment folder, unmounts and detaches the image and deletes it;
    returns what it found, with the pids stopped. Images of a corebench
    still running, or of none, are not leftovers: left alone."""
    found = orphans()
    for left in found:
        at = Path(left["mounted_on"]) if left["mounted_on"] else None
        left["stopped"] = ",".join(map(str, owned.stop(Path(left["image"]).parent)))
        _release(at, Path(left["image"]))
    return found
