"""The clock behind requests per second per core-GHz: the one measured
during the runs, else the plan's when given, else the host's as stored,
else said to be unknown; runs whose clock moved are flagged."""

import pytest

from corebench.analysis.analyse import analyse, clock
from corebench.analysis.verdict import verdicts
from corebench.store import HostFacts
from corebench.system.check import CLOCK_SOURCE as SOURCE
from tests.support.records import experiment, load_result, stored_run


def test_the_plans_clock_comes_first_then_the_hosts():
    assert clock({"machine": {"clock_ghz": 2.6}}, HostFacts(mhz=3400.0)) == (2.6, "the plan's [machine] clock_ghz")
    ghz, source = clock({}, HostFacts(mhz=2445.426))
    assert ghz == 2.445 and "host's reported clock" in source
    assert clock({}, HostFacts(mhz=None)) == (None, "")


# --- the clock measured during the runs (system.check) ----------------------


def clocked_runs(levels, clocks_mhz, rps=1000.0, layout=None):
    return [
        stored_run(
            levels,
            load_result(ok=round(rps)),
            seq=i,
            monitor={"samples": 5, "clock_mhz": mhz, "clock": SOURCE},
            layout=layout,
        )
        for i, mhz in enumerate(clocks_mhz)
    ]


def test_the_measured_clock_comes_before_the_plans_and_the_hosts():
    runs = clocked_runs({"cpus": 1}, [3000.0, 3000.0]) + clocked_runs({"cpus": 2}, [2500.0, 2500.0], rps=1800)
    found = analyse(experiment({"cpus": [1, 2]}, plan={"machine": {"clock_ghz": 2.0}}, host={"mhz": 2600.0}), runs)
    assert found.clock_ghz == 2.75 and "measured during each run" in found.clock_source
    # Each row divides by its own point's clock: turbo runs fewer cores faster.
    rows = {r.cores: r for r in found.scaling}
    assert (rows[1.0].ghz, rows[2.0].ghz) == (3.0, 2.5)
    assert rows[1.0].per_core_ghz == pytest.approx(1000 / 1 / 3.0)
    assert rows[2.0].per_core_ghz == pytest.approx(1800 / 2 / 2.5)
    assert not [f for f in found.said if f.kind == "clock"], "measured: nothing to say it was not"


def test_per_ghz_from_a_clock_not_measured_says_so():
    runs = [stored_run({"cpus": c}, load_result(ok=1000 * c), seq=i) for i, c in enumerate([1, 1, 2, 2])]
    found = analyse(experiment({"cpus": [1, 2]}, host={"mhz": 2596.1}), runs)
    [said] = [f.sentence for f in found.said if f.kind == "clock"]
    assert "not measured per run" in said and "reported clock" in said


def test_a_run_whose_clock_moved_is_flagged_like_steal():
    steady = clocked_runs({"cpus": 1}, [2400.0, 2410.0, 2395.0])
    found = analyse(experiment({"cpus": [1]}), steady)
    assert not [v for v in verdicts(found.points) if v.startswith("Clock:")]
    moved = clocked_runs({"cpus": 1}, [2400.0, 2410.0, 3000.0])
    found = analyse(experiment({"cpus": [1]}), moved)
    [p] = found.points
    assert (p.clock_off_runs, round(p.clock_off_max, 3)) == (1, round(590 / 2410, 3))
    [line] = [v for v in verdicts(found.points) if v.startswith("Clock:")]
    assert "in 1 of 3 runs with a clock reading" in line and "up to 24%" in line and "cpus=1" in line
    assert "system tune" in line and "idle CPUs too" in line
    # Two runs 7% apart: both are flagged, each measured from the other, out of 2 with a reading.
    pair = clocked_runs({"cpus": 1}, [2400.0, 2568.0]) + [stored_run({"cpus": 1}, load_result(), seq=9)]
    [line] = [v for v in verdicts(analyse(experiment({"cpus": [1]}), pair).points) if v.startswith("Clock:")]
    assert "in 2 of 2 runs with a clock reading" in line and "up to 7%" in line
    # Runs from before the clock was measured count for nothing.
    old = [stored_run({"cpus": 1}, load_result(), seq=i, monitor={"samples": 5}) for i in range(3)]
    assert analyse(experiment({"cpus": [1]}), old).points[0].clock_mhz is None


def test_siblings_for_missing_cores_and_the_machine_check_are_said():
    layout = {"method": "affinity", "target_cpus": [0, 1], "target_physical_cores": 1, "cores_asked": 2}
    runs = [stored_run({"cpus": 2}, load_result(), seq=i, layout=layout) for i in range(2)]
    warned = "WARN  clock governor: powersave on CPUs 0-1. Fix: corebench system tune"
    found = analyse(experiment({"cpus": [2]}, host={"checks": [warned]}), runs)
    said = [f.sentence for f in found.said if f.kind == "machine"]
    assert said[0] == f"Before the first run, corebench system check warned: {warned}"
    assert "cpus=2: 2 physical cores asked, the target's 2 CPUs were on 1" in said[1]
    smt_on = dict(layout, target_physical_cores=2, target_cpus=[0, 1, 2, 3])
    runs = [stored_run({"cpus": 2}, load_result(), seq=i, layout=smt_on) for i in range(2)]
    assert not [f for f in analyse(experiment({"cpus": [2]}), runs).said if f.kind == "machine"]
