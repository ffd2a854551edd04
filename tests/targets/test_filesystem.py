"""Filesystem factors on real loop-mounted images (mkfs.ext4, mkfs.xfs,
mkfs.btrfs, mount): each level mounted with its options and recorded as the
kernel has them, the target's folder on it, and nothing left mounted or
attached after a run, a target that fails, Ctrl-C, or a killed corebench
followed by `corebench cleanup`."""

import os
import signal
import subprocess
import time
import typing
from pathlib import Path

import psutil
import pytest

from corebench.errors import UsageError
from corebench.plan import load_plan
from corebench.plan.model import Filesystem, FsTypeName
from corebench.runner import preflight
from corebench.targets import filesystem
from tests.conftest import CLI, run_cli
from tests.support.experiments import run_plan
from tests.support.records import as_json

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounts need root")


def _ours() -> list[dict[str, str]]:
    """This session's leftovers: a running corebench's images are not."""
    return filesystem.orphans()


@pytest.fixture(autouse=True)
def nothing_left_behind():
    assert not _ours(), "an earlier test left images attached"
    yield
    left = _ours()
    filesystem.cleanup()
    assert not left, left


def test_every_type_a_plan_names_has_its_mkfs_and_options():
    assert set(filesystem.TYPES) == set(typing.get_args(FsTypeName))
    spec = Filesystem(type="ext4-journal", atime="atime", options=["commit=30"])
    assert filesystem.mount_options(spec) == ["data=journal", "strictatime", "commit=30"]


@pytest.mark.parametrize(
    "fs_type, atime, kernel, says",
    [
        ("ext4-journal", "noatime", "ext4", "data=journal"),
        ("ext4-writeback", "atime", "ext4", "data=writeback"),
        ("xfs", "relatime", "xfs", "inode64"),
        ("btrfs", "noatime", "btrfs", "subvol=/"),
    ],
)
def test_each_type_is_mounted_with_its_options_and_released(tmp_path, fs_type, atime, kernel, says):
    at = tmp_path / "target-0"
    m = filesystem.mount(Filesystem(type=fs_type, atime=atime, size="320MB"), at)
    try:
        (at / "target.log").write_text("written on the image\n")
        facts = m.facts
        assert facts["kernel_type"] == kernel and says in facts["fs_options"], facts
        assert facts["atime"] == {"atime": "strictatime"}.get(atime, atime), facts
        assert os.stat(at).st_dev != os.stat(tmp_path).st_dev, "the folder is the image's root"
    finally:
        filesystem.unmount(m, keep=("target.log",))
    assert not filesystem.loops_of(m.image) and not m.image.exists()
    assert (tmp_path / "target-0.target.log").read_text() == "written on the image\n"
    assert not any(at.iterdir()), "unmounted: the folder underneath is empty"


def test_a_size_mkfs_refuses_is_said_before_any_mkfs():
    why = filesystem.missing(Filesystem(type="xfs", size="200MB"))
    assert why == "xfs needs an image of at least 300 MB: raise size"


PLAN = """
[experiment]
repetitions = 1
duration = "0.3s"
calibrate = false

[factors]
fs = ["ext4-ordered", "xfs"]
atime = ["atime", "noatime"]

[target]
builtin = {{ model = "async", workers = 1, args = ["--access-log", "{{dir}}/access.log"] }}
filesystem = {{ type = "{{fs}}", atime = "{{atime}}", size = "320MB" }}
{extra}
[load]
path = "/static/100"
concurrency = 2
"""


def test_a_plan_runs_each_filesystem_level_and_records_the_mount(tmp_path):
    ran = run_plan(tmp_path, PLAN.format(extra=""))
    assert ran.out.ok == 4 and ran.out.failed == 0
    seen = set()
    for run in ran.runs:
        levels, mount = run.point, as_json(run.target)["filesystem"]
        assert mount["type"] == levels["fs"] and mount["kernel_type"] in ("ext4", "xfs")
        assert mount["atime"] == ("strictatime" if levels["atime"] == "atime" else "noatime"), mount
        seen.add((levels["fs"], levels["atime"], mount["device"]))
        # The image's device is watched during the run.
        assert as_json(run.monitor)["disk_devices"] == [Path(mount["device"]).name]
    assert len(seen) == 4


def test_a_target_that_fails_on_its_filesystem_fails_its_runs_and_unmounts(tmp_path):
    plan = PLAN.format(extra="").replace(
        'builtin = { model = "async", workers = 1, args = ["--access-log", "{dir}/access.log"] }',
        'command = ["sh", "-c", "echo broken > broken.txt; exit 3"]',
    )
    ran = run_plan(tmp_path, plan.replace('["ext4-ordered", "xfs"]', '["ext4-ordered"]'))
    assert ran.out.ok == 0 and ran.out.failed == 2
    for run in ran.runs:
        assert "target not started" in run.error and "status 3" in run.error, run.error
        assert as_json(run.target)["filesystem"]["type"] == "ext4-ordered"


def _alive(pid: int) -> bool:
    # Killed orphans may wait as zombies for a parent that does not reap.
    return psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE


def _running_plan(tmp_path: Path) -> subprocess.Popen:
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN.format(extra="").replace('duration = "0.3s"', 'duration = "30s"'))
    proc = subprocess.Popen(
        [*CLI, "run", str(plan), "--store", str(tmp_path / "s.sqlite"), "-q"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not [left for left in filesystem.leftovers() if left["mounted_on"]]:
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    time.sleep(1)  # the target started on it and the run begun
    return proc


def test_ctrl_c_mid_run_leaves_nothing_mounted(tmp_path):
    proc = _running_plan(tmp_path)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, out + err
    assert not filesystem.leftovers() and "corebench-run-" not in Path("/proc/self/mounts").read_text()


def test_cleanup_stops_and_removes_what_a_killed_corebench_left(tmp_path):
    proc = _running_plan(tmp_path)
    proc.kill()  # no cleanup of its own: the target and its mount stay
    proc.communicate(timeout=30)
    left = _ours()
    assert len(left) == 1 and left[0]["mounted_on"], left
    users = filesystem.users(Path(left[0]["mounted_on"]))
    assert users, "the orphaned target still writes its access log there"
    shell = subprocess.Popen(["sleep", "60"], cwd=left[0]["mounted_on"])
    r = run_cli("cleanup")
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"Removed {left[0]['device']}" in r.stdout and "stopped the processes it started there" in r.stdout, r.stdout
    assert not _ours() and not any(_alive(pid) for pid in users)
    assert _alive(shell.pid), "a user's shell working on our mount is not ours to kill"
    shell.kill()
    shell.wait()
    again = run_cli("cleanup")
    assert again.returncode == 0 and "Nothing to clean up" in again.stdout


@pytest.mark.parametrize(
    "edit, says",
    [
        ("", "filesystem: [target.filesystem] makes and mounts filesystem images (mkfs, mount): run corebench as root"),
        ("calibrate = false\ndrop_caches = true", "drop_caches: dropping the page cache needs root"),
    ],
)
def test_without_root_the_plan_is_refused_in_one_line(tmp_path, edit, says):
    plan = tmp_path / "plan.toml"
    text = PLAN.format(extra="")
    if edit:  # the same plan without the filesystem, dropping caches instead
        text = text.replace("calibrate = false", edit).replace("filesystem = {", "# filesystem = {")
    plan.write_text(text)
    said = _checked_as_nobody(load_plan(plan))
    assert len(said.splitlines()) == 1 and "plan.toml" in said and says in said, said


def _checked_as_nobody(exp) -> str:
    """The preflight check as an unprivileged process makes it: a child of
    this one, switched to nobody (which may not run this checkout's
    interpreter); what it raised, or "passed"."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        said = "passed"
        try:
            os.setgid(65534)
            os.setuid(65534)
            preflight.check(exp)
        except UsageError as e:
            said = str(e)
        except BaseException as e:  # noqa: BLE001  (reported to the parent)
            said = f"{type(e).__name__}: {e}"
        finally:
            os.write(write, said.encode())
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as f:
        said = f.read()
    os.waitpid(pid, 0)
    return said


def test_cleanup_leaves_a_users_image_named_like_ours_and_its_shell(tmp_path):
    """An image named *.corebench-fs.img that no corebench made, mounted,
    with a process working in it: cleanup names it and touches nothing."""
    at = tmp_path / "mine"
    image = tmp_path / "data.corebench-fs.img"
    with image.open("wb") as f:
        f.truncate(128 * 1024**2)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], check=True)
    at.mkdir()
    subprocess.run(["mount", "-o", "loop", str(image), str(at)], check=True)
    shell = subprocess.Popen(["sleep", "60"], cwd=at)
    try:
        (at / "thesis.txt").write_text("years of work\n")
        r = run_cli("cleanup")
        assert r.returncode == 0, r.stdout + r.stderr
        assert f"Left alone: {image}" in r.stdout and "no corebench made it" in r.stdout, r.stdout
        assert _alive(shell.pid) and image.exists() and (at / "thesis.txt").read_text() == "years of work\n"
        assert not _ours(), "not a leftover of ours"
    finally:
        shell.kill()
        shell.wait()
        subprocess.run(["umount", str(at)], check=False)
        for dev in filesystem.loops_of(image):
            subprocess.run(["losetup", "--detach", dev], check=False)
