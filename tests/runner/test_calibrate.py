"""The generator's ceiling: which page it is measured on, and how a run is
held against it, and what it leaves behind (the measurement itself:
test_protocols.py)."""

from pathlib import Path
from typing import Any

from corebench.plan import load_plan
from corebench.plan.model import Load
from corebench.runner.calibrate import calibrate, lower_bound, page, page_bytes
from corebench.store import Ceiling, RunLayout
from corebench.targets import owned
from corebench.targets.cpus import CpuControl
from corebench.targets.session import TargetSession


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


def test_a_calibration_starts_its_server_in_a_session_that_stops_it(tmp_path, monkeypatch):
    """The local calibration starts the built-in server as the plan's
    targets start, in a `TargetSession` (so its process is recorded in the
    experiment's folder), and leaving the session stops it and removes its
    CPU groups and measuring groups."""
    served: list[TargetSession] = []
    serve = TargetSession.serve

    def spy(self: TargetSession, *args: Any, **kwargs: Any) -> Any:
        served.append(self)
        return serve(self, *args, **kwargs)

    monkeypatch.setattr(TargetSession, "serve", spy)
    plan = tmp_path / "plan.toml"
    plan.write_text(
        '[experiment]\nname = "c"\nrepetitions = 1\nduration = "1s"\n\n'
        '[target]\nbuiltin = { model = "async" }\ncpus = 1\n\n[load]\nconcurrency = 4\n'
    )
    work = tmp_path / "work"
    work.mkdir()
    owned.claim(work)
    [ceiling] = calibrate(load_plan(plan), CpuControl(), work)
    assert ceiling.error is None and ceiling.rps > 0, ceiling.error
    assert [s.key for s in served] == ["calibration"], "started through a target session"
    session = served[0]
    assert session.started is None, "and stopped on leaving it"
    assert len(owned.started(work)) == 1 and owned.processes(work) == [], "recorded as ours, and gone"
    groups = [*session.layout.groups, *session.layout.accounting]
    assert not [g for g in groups if Path(g).exists()], "its groups removed"
