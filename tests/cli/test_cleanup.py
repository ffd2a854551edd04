"""`corebench cleanup` and the cgroups of a corebench killed with SIGKILL:
the target still running in them is stopped, the groups removed; a live
corebench's groups are left alone."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import run_cli

# A stand-in for a corebench killed mid-run: it makes a layout with a
# service, starts a target in it, says where, and waits to be killed.
KILLED = """
import json, subprocess, sys, time
from corebench.targets.cpus import CpuControl
layout = CpuControl().layout(1, {"db": None})
enter = [sys.executable, "-m", "corebench.targets.enter", json.dumps(layout.to_json()), "--"]
p = subprocess.Popen([*enter, "sleep", "120"])
groups = layout.groups + layout.accounting + layout.of("db").accounting
print(json.dumps({"pid": p.pid, "groups": groups}), flush=True)
time.sleep(120)
"""

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="cgroups are made by root")


def _in_group(pid: int, groups: list[str]) -> bool:
    return any(str(pid) in Path(g, "cgroup.procs").read_text().split() for g in groups if os.path.exists(g))


def test_cleanup_removes_a_killed_corebenchs_cgroups_and_what_runs_in_them():
    stand_in = subprocess.Popen([sys.executable, "-c", KILLED], stdout=subprocess.PIPE, text=True)
    made = json.loads(stand_in.stdout.readline())
    target, groups = made["pid"], made["groups"]
    if not groups:
        stand_in.kill()
        stand_in.wait()
        subprocess.run(["kill", "-9", str(target)], check=False)
        pytest.skip("this machine lets corebench make no cgroup")
    deadline = time.monotonic() + 30
    while not _in_group(target, groups):  # the target has entered its groups
        assert time.monotonic() < deadline
        time.sleep(0.05)
    try:
        # While its corebench lives, its groups are its own.
        alive = run_cli("cleanup")
        assert all(os.path.exists(g) for g in groups), alive.stdout
        stand_in.kill()
        stand_in.wait()
        done = run_cli("cleanup")
        assert done.returncode == 0, done.stderr
        assert "cgroup(s) of a killed corebench; stopped the processes in them: " in done.stdout, done.stdout
        assert str(target) in done.stdout
        assert not [g for g in groups if os.path.exists(g)]
        deadline = time.monotonic() + 10
        while Path(f"/proc/{target}").exists() and "zombie" not in Path(f"/proc/{target}/status").read_text():
            assert time.monotonic() < deadline, "the target outlived cleanup"
            time.sleep(0.05)
    finally:
        stand_in.kill()
        stand_in.wait()
        subprocess.run(["kill", "-9", str(target)], check=False, capture_output=True)


def test_cleanup_of_a_cluster_where_none_listens_is_one_line():
    r = run_cli("cleanup", "--ray", "127.0.0.1:9")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "--ray 127.0.0.1:9: cannot reach a Ray cluster there" in r.stderr
