"""The CPU baseline end to end: real hackbench (rt-tests) on the cores the
target gets at each cpus level, stored with the experiment, kept on
--resume, and shown in the report beside the server's speedup."""

import subprocess

import pytest

from corebench import report
from corebench.report import charts
from corebench.report.data import load
from corebench.runner import baseline
from corebench.targets.cpus import online_cpus
from tests.conftest import CLI
from tests.support.experiments import run_plan

PLAN = """
[experiment]
repetitions = 1
duration = "0.3s"
calibrate = false

[factors]
cpus = [1, 2]

[target]
builtin = { model = "async" }

[load]
path = "/dynamic?work_us=200"
concurrency = 4

[baseline]
hackbench = { groups = 2, loops = 100, repetitions = 2 }
"""


def test_hackbench_prints_the_time_read():
    out = subprocess.run(["hackbench", "-g", "1", "-l", "10"], capture_output=True, text=True, check=True).stdout
    assert baseline.seconds(out) > 0
    with pytest.raises(baseline.BaselineError, match="no time"):
        baseline.seconds("Running in process mode\n")


def test_missing_hackbench_is_said(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    assert "install Debian's rt-tests" in baseline.missing()


@pytest.mark.skipif(len(online_cpus()) < 2, reason="two cpus levels")
def test_each_cpus_level_gets_its_baseline_and_the_report_shows_it(tmp_path):
    ran = run_plan(tmp_path, PLAN)
    assert ran.out.ok == 2
    from corebench.store import Store

    s = Store(ran.store, read_only=True)
    try:
        exp = s.experiment(ran.out.experiment_id)
        assert exp is not None and exp.baseline is not None
        found = exp.baseline.model_dump()
    finally:
        s.close()
    assert found["argv"] == ["hackbench", "-g", "2", "-l", "100"]
    by_cpus = {lv["cpus"]: lv for lv in found["levels"]}
    assert by_cpus[1]["target_cpus"] == online_cpus()[:1] and by_cpus[2]["target_cpus"] == online_cpus()[:2]
    assert all(len(lv["seconds"]) == 2 and lv["error"] is None for lv in by_cpus.values())
    d = load(ran.store)
    line = next(v for v in d.verdicts if v.startswith("CPU baseline (hackbench -g 2 -l 100"))
    assert "at cpus=2 (ideal 2.00x), the server" in line, line
    assert [b.cpus for b in d.baseline] == [1.0, 2.0] and d.baseline[1].speedup > 0
    page = report.get("html").render(d)
    assert '<table id="baseline">' in page and "hackbench (2 groups, 100 loops)" in page
    efficiency = dict(charts.all_charts(d))["Efficiency"]
    assert "hackbench" in efficiency, "drawn in the efficiency chart"
    # Resumed, the experiment keeps its baseline and does not measure it again.
    again = subprocess.run(
        [*CLI, "run", str(tmp_path / "plan.toml"), "--store", str(ran.store), "--resume"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert again.returncode == 0 and "baseline hackbench" not in again.stderr + again.stdout, again.stderr
