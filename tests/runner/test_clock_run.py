"""A plan run on a machine whose sysfs has cpufreq (this VM's two CPUs
recorded as one core's two threads, the clock at 2.4 GHz under the
powersave governor): each run stores the clock it measured, the report
shows it, the machine check warns before the first run and is kept, and a
level asking more cores than there are says its CPUs are siblings."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from corebench.store import Store
from corebench.system.topology import ROOT_ENV
from corebench.targets.cpus import online_cpus
from tests.conftest import run_cli

TREES = Path(__file__).resolve().parents[1] / "data" / "sysfs"

PLAN = """
[experiment]
calibrate = false
repetitions = 2
warmup = 0
duration = "0.5s"

[factors]
cpus = [1, 2]

[target]
builtin = { model = "async", workers = 1 }

[load]
path = "/dynamic?work_us=100"
concurrency = 2
"""


def one_core_two_threads(root: Path) -> Path:
    with tarfile.open(TREES / "this-vm-2.tar.gz") as tar:
        tar.extractall(root, members=[m for m in tar.getmembers() if m.isfile() or m.isdir()])  # noqa: S202
    for cpu in (0, 1):
        d = root / "devices" / "system" / "cpu" / f"cpu{cpu}"
        (d / "topology" / "core_id").write_text("0\n")
        (d / "topology" / "thread_siblings_list").write_text("0-1\n")
        (d / "cpufreq").mkdir()
        (d / "cpufreq" / "scaling_cur_freq").write_text("2400000\n")
        (d / "cpufreq" / "scaling_governor").write_text("powersave\n")
    return root


@pytest.mark.skipif(online_cpus() != [0, 1], reason="the recorded tree is of a machine with CPUs 0 and 1")
def test_the_clock_and_the_machine_are_stored_and_said(tmp_path, monkeypatch):
    monkeypatch.setenv(ROOT_ENV, str(one_core_two_threads(tmp_path / "sys")))
    plan, store = tmp_path / "plan.toml", tmp_path / "store.sqlite"
    plan.write_text(PLAN)
    p = run_cli("run", str(plan), "--store", str(store), "-q", timeout=180)
    assert p.returncode == 0, p.stderr
    assert "cpus = 2 is more than this machine's 1 physical cores (2 CPUs)" in p.stdout
    assert "machine check: WARN  clock governor: powersave" in p.stderr
    s = Store(store)
    try:
        exp = s.experiment(1)
        runs = s.runs(1)
    finally:
        s.close()
    assert exp is not None and any("clock governor" in c for c in exp.host.checks)
    for r in runs:
        assert r.monitor is not None and r.monitor.clock_mhz == 2400.0, r.monitor
        assert r.monitor.governor == "powersave" and r.monitor.clock.startswith("cpufreq")
    two = [r for r in runs if r.point["cpus"] == 2]
    assert all(r.layout is not None and (r.layout.cores_asked, r.layout.target_physical_cores) == (2, 1) for r in two)

    md = run_cli("report", str(store), "--format", "md")
    assert md.returncode == 0, md.stderr
    assert "Before the first run, corebench system check warned: WARN  clock governor" in md.stdout
    assert "cpus=2: 2 physical cores asked, the target's 2 CPUs were on 1" in md.stdout
    doc = json.loads(run_cli("report", str(store), "--format", "json").stdout)
    assert [pt["clock_mhz"] for pt in doc["points"]] == [2400.0, 2400.0]
    html = tmp_path / "r.html"
    assert run_cli("report", str(store), "-o", str(html)).returncode == 0
    text = html.read_text()
    assert "2,400 MHz, powersave" in text and "<th>GHz</th>" in text


def test_without_cpufreq_the_runs_say_the_clock_was_not_measured(tmp_path, monkeypatch):
    root = tmp_path / "sys"
    with tarfile.open(TREES / "this-vm-2.tar.gz") as tar:
        tar.extractall(root, members=[m for m in tar.getmembers() if m.isfile() or m.isdir()])  # noqa: S202
    monkeypatch.setenv(ROOT_ENV, str(root))
    plan, store = tmp_path / "plan.toml", tmp_path / "store.sqlite"
    plan.write_text(PLAN.replace("cpus = [1, 2]", "cpus = [1]").replace("repetitions = 2", "repetitions = 1"))
    p = run_cli("run", str(plan), "--store", str(store), "-q", timeout=180)
    assert p.returncode == 0, p.stderr
    s = Store(store)
    try:
        [run] = s.runs(1)
    finally:
        s.close()
    assert run.monitor is not None and run.monitor.clock_mhz is None
    assert run.monitor.clock.startswith("not measured: no cpufreq")
