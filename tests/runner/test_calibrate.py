"""The generator's ceiling: which page it is measured on, and how a run is
held against it, and what it leaves behind (the measurement itself:
test_protocols.py)."""

import os
from pathlib import Path

from corebench.plan import load_plan
from corebench.plan.model import Load
from corebench.runner.calibrate import calibrate, lower_bound, page, page_bytes
from corebench.store import Ceiling, RunLayout
from corebench.targets import owned
from corebench.targets.cpus import CGROUP, CpuControl


def test_a_plan_asking_for_a_builtin_page_is_calibrated_on_that_page():
    assert [page(Load(path=p)) for p in ("/static/2k", "static/204800", "/index.php")] == [
        "/static/2k",
        "/static/204800",
        "/static/64",
    ]
    assert page(Load(url="http://127.0.0.1:1/static/2k")) == "/static/64", "a whole URL is not the built-in server's"
    assert [page_bytes(p) for p in ("/static/2k", "/static/204800", "/static/64")] == [2048, 204_800, 64]


def test_a_run_is_near_the_ceiling_from_its_lowest_calibration():
    layout = RunLayout(method="affinity", target_cpus=[0], generator_cpus=[1])
    c = Ceiling(
        target_cpus=[0],
        generator_cpus=[1],
        shared=False,
        connections=64,
        rps=9_000.0,
        generator_cpu=0.9,
        ceiling_rps=10_000.0,
        ceiling_low_rps=8_000.0,
        ceiling_high_rps=12_000.0,
        repeats=3,
    )
    # Near is NEAR_CEILING (80%) of it: 6,500 req/s is 65% of the mean but
    # 81% of the lowest calibration.
    said = lower_bound(6_500.0, layout, None, c)
    assert said == "65% of the generator's ceiling (3 calibrations ranged 8,000–12,000)", said
    assert lower_bound(6_300.0, layout, None, c) is None


def test_a_calibration_starts_its_server_in_a_session_that_stops_it(tmp_path):
    """The local calibration starts the built-in server as the plan's
    targets start (a `TargetSession`): its process is recorded in the
    experiment's folder, and gone with its CPU groups once the ceiling is
    measured."""
    plan = tmp_path / "plan.toml"
    plan.write_text(
        '[experiment]\nname = "c"\nrepetitions = 1\nduration = "1s"\n\n'
        '[target]\nbuiltin = { model = "async" }\ncpus = 1\n\n[load]\nconcurrency = 4\n'
    )
    exp = load_plan(plan)
    control = CpuControl()
    work = tmp_path / "work"
    work.mkdir()
    owned.claim(work)
    [ceiling] = calibrate(exp, control, work)
    assert ceiling.error is None and ceiling.rps > 0, ceiling.error
    assert len(owned.started(work)) == 1, "the server was started as a target is, and recorded"
    assert owned.processes(work) == [], "and stopped"
    assert not [g for g in _groups() if g.name.startswith(f"corebench-{os.getpid()}-")], "its CPU groups removed"


def _groups() -> list[Path]:
    return [p for base in (CGROUP, CGROUP / "cpuset", CGROUP / "cpu") if base.is_dir() for p in base.iterdir()]
