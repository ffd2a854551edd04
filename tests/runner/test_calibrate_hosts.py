"""The generator's ceiling across hosts: each load host's projection, their
sum over repeats, and which runs it holds for (the measurement itself, on
Ray nodes in network namespaces: tests/runner/test_remote_target.py and
tests/cluster/test_namespace.py)."""

import pytest

from corebench.plan.model import Load
from corebench.runner.calibrate import ceiling_for
from corebench.runner.calibrate_hosts import Part, _per_host, _projected
from corebench.store import AgentCeiling, Ceiling
from corebench.targets.cpus import Layout


def test_each_host_is_its_rate_over_its_cpu_share_and_never_below_it():
    assert _projected(Part(0, "a", 1, 600.0, 0.5)) == 1_200.0
    assert _projected(Part(0, "a", 1, 600.0, 1.2)) == 600.0, "a share over 1 (a measurement's edge) projects no lower"
    assert _projected(Part(0, "a", 1, 600.0, 0.0)) == 600.0, "no CPU measured: what it reached"


def test_a_host_is_averaged_over_the_repeats():
    a = _per_host([Part(0, "a/10.0.0.4/x", 2, 1_000.0, 0.5), Part(0, "a/10.0.0.4/x", 2, 1_200.0, 0.6)])
    assert (a.node, a.cores, a.rps, a.cpu_utilization) == ("a/10.0.0.4/x", 2, 1_100.0, pytest.approx(0.55))
    assert a.ceiling_rps == pytest.approx((2_000.0 + 2_000.0) / 2)


def test_a_ceiling_across_hosts_holds_for_every_layout_of_its_protocol():
    across = Ceiling(
        target_cpus=[0, 1],
        generator_cpus=[],
        shared=False,
        connections=64,
        rps=1_000.0,
        generator_cpu=0.5,
        ceiling_rps=2_000.0,
        across=True,
        agents=[AgentCeiling(node="this machine", cores=1, rps=1_000.0, cpu_utilization=0.5, ceiling_rps=2_000.0)],
    )
    on_one = Layout(method="affinity", target_cpus=[1], generator_cpus=[0])
    assert ceiling_for([across], on_one, Load(keep_alive=True)) is across
    assert ceiling_for([across], on_one, Load(keep_alive=False)) is None, "another protocol: another ceiling"
    said = across.sentence()
    assert "the sum of each load host's rate projected" in said
    assert "this machine: 2,000 from 1,000 req/s at 50% of its 1 core" in said
