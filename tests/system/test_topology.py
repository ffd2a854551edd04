"""The CPU topology read from recorded sysfs trees, and CPU sets that are
what they say: N distinct physical cores, one NUMA node first, siblings
only when asked, and a generator on no core of the target's."""

from __future__ import annotations

import json
import os
import tarfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corebench.system.topology import ROOT_ENV, TopologyError, apart, choose, format_list, parse_list, read
from corebench.targets.cpus import plan_layout
from tests.conftest import run_cli

TREES = Path(__file__).resolve().parents[1] / "data" / "sysfs"
# name: (sockets, NUMA nodes, physical cores, CPUs, SMT, governor)
KNOWN = {
    "xeon-2s-8c-smt": (2, 2, 16, 32, True, "powersave"),
    "ryzen-1s-6c-smt": (1, 1, 6, 12, True, "schedutil"),
    "cloud-vm-4": (1, 1, 4, 4, False, None),
    "this-vm-2": (1, 1, 2, 2, False, None),
}


@pytest.fixture(scope="module")
def trees(tmp_path_factory) -> dict[str, Path]:
    out = {}
    for name in KNOWN:
        root = tmp_path_factory.mktemp(name)
        with tarfile.open(TREES / f"{name}.tar.gz") as tar:
            # Plain files and folders only (this Python's extractall has no filter= yet).
            members = [m for m in tar.getmembers() if (m.isfile() or m.isdir()) and ".." not in m.name]
            tar.extractall(root, members=members)  # noqa: S202
        out[name] = root
    return out


@pytest.mark.parametrize("name", list(KNOWN))
def test_each_recorded_tree_reads_as_its_machine(trees, name):
    t = read(trees[name])
    sockets, nodes, cores, cpus, smt, governor = KNOWN[name]
    assert (len(t.packages), len(t.nodes), len(t.cores), len(t.cpus), t.smt, t.governor) == KNOWN[name]
    assert all(c.id in c.siblings for c in t.cpus)
    assert all(set(c.siblings) <= set(c.l3) for c in t.cpus), "a core's threads share its last-level cache"


def test_the_xeons_numbering_and_caches(trees):
    t = read(trees["xeon-2s-8c-smt"])
    assert t.cpu(0).siblings == (0, 16) and t.cpu(8).package == 1 and t.cpu(8).node == 1
    assert t.cpu(3).l3 == tuple(parse_list("0-7,16-23")) and t.max_mhz == 3000
    assert "2 socket(s), 2 NUMA node(s), 16 physical cores, 32 CPUs (SMT: 2 threads per core)" in t.describe()


@pytest.mark.parametrize("n", [1, 2, 4, 8, 16])
def test_n_cpus_are_n_physical_cores_one_node_first(trees, n):
    t = read(trees["xeon-2s-8c-smt"])
    s = choose(t, n)
    assert len(s.cpus) == n and s.cores == n and not s.notes
    assert s.nodes == ([0] if n <= 8 else [0, 1]), "one NUMA node while one holds them"
    on = choose(t, n, smt="on")
    assert len(on.cpus) == 2 * n and on.cores == n, "with SMT: the same cores and their siblings"
    assert {t.cpu(c).physical for c in on.cpus} == {t.cpu(c).physical for c in s.cpus}
    gen = apart(t, s.cpus)
    assert not {t.cpu(c).physical for c in gen} & {t.cpu(c).physical for c in s.cpus}
    assert len(gen) == 32 - 2 * n, "every CPU of the other cores, none of the target's siblings"


def test_spread_alternates_the_nodes(trees):
    t = read(trees["xeon-2s-8c-smt"])
    s = choose(t, 4, numa="spread")
    assert s.nodes == [0, 1] and [t.cpu(c).node for c in s.cpus].count(0) == 2


def test_adjacent_siblings_are_not_two_cores(trees):
    t = read(trees["ryzen-1s-6c-smt"])
    assert choose(t, 2).cpus == [0, 2], "0 and 1 are one core's two threads on this numbering"
    assert choose(t, 2, smt="on").cpus == [0, 1, 2, 3]
    many = choose(t, 8)
    assert len(many.cpus) == 8 and many.cores == 6 and "6 free" in many.notes[0], "more than there are: said"


def test_the_layout_takes_physical_cores_and_keeps_the_generator_off_them(trees):
    t = read(trees["xeon-2s-8c-smt"])
    online = [c.id for c in t.cpus]
    target, generator, quota = plan_layout(4, online, {"db": 2}, t)
    assert target == [0, 1, 2, 3] and quota is None
    assert not set(generator) & {0, 1, 2, 3, 4, 5, 16, 17, 18, 19, 20, 21}, "no target's or service's core"
    # Where every core is the target's, the generator gets their free siblings before sharing.
    ryzen = read(trees["ryzen-1s-6c-smt"])
    target, generator, _ = plan_layout(6, [c.id for c in ryzen.cpus], None, ryzen)
    assert target == [0, 2, 4, 6, 8, 10] and generator == [1, 3, 5, 7, 9, 11]
    from corebench.system.topology import share_cores

    assert share_cores(ryzen, target, generator), "siblings share their cores: the layout says shared"
    assert not share_cores(t, [0, 1], [2, 3]) and share_cores(t, [0], [16])
    # Without a topology (the kernel gave none): the CPUs in their order, as before.
    assert plan_layout(2, [0, 1, 2, 3], None, None) == ([0, 1], [2, 3], None)


def test_this_machine_reads(monkeypatch):
    monkeypatch.delenv(ROOT_ENV, raising=False)
    t = read(allowed=sorted(os.sched_getaffinity(0)))
    assert len(t.cpus) == len(os.sched_getaffinity(0)) and t.cores


@settings(deadline=None)  # a busy CI machine can stall one example past the default 200 ms
@given(st.sets(st.integers(0, 300), min_size=1, max_size=60))
def test_cpu_lists_round_trip(cpus):
    assert parse_list(format_list(sorted(cpus))) == sorted(cpus)


def test_a_tree_that_is_not_one_is_refused(tmp_path):
    with pytest.raises(TopologyError):
        read(tmp_path)
    (tmp_path / "devices" / "system" / "cpu").mkdir(parents=True)
    (tmp_path / "devices" / "system" / "cpu" / "online").write_text("0-x\n")
    with pytest.raises(TopologyError, match="not a CPU list"):
        read(tmp_path)


@pytest.mark.parametrize("name", ["xeon-2s-8c-smt", "ryzen-1s-6c-smt", "cloud-vm-4"])
def test_the_system_command_on_each_tree(trees, name, monkeypatch):
    monkeypatch.setenv(ROOT_ENV, str(trees[name]))
    for n in (1, 2, 4):
        p = run_cli("system", "--cpus", str(n), "--json")
        assert p.returncode == 0, p.stderr
        (s,) = json.loads(p.stdout)["sets"]
        assert s["cpus_asked"] == n and s["cores"] == n and len(s["cpus"]) == n
    text = run_cli("system")
    assert text.returncode == 0 and "physical cores" in text.stdout and "cpus = 1:" in text.stdout
    bad = run_cli("system", "--smt", "maybe")
    assert bad.returncode == 2 and "--smt" in bad.stderr
    monkeypatch.setenv(ROOT_ENV, "/nonexistent")
    gone = run_cli("system")
    assert gone.returncode == 2 and ROOT_ENV in gone.stderr and len(gone.stderr.strip().splitlines()) == 1


def test_a_plans_smt_and_numa_choose_the_layout(trees):
    t = read(trees["xeon-2s-8c-smt"])
    online = [c.id for c in t.cpus]
    target, generator, _ = plan_layout(2, online, {"db": 1}, t, smt="on")
    assert target == [0, 1, 16, 17], "two cores with their siblings"
    assert not {2, 18} & set(generator), "the service's core and its sibling are its own"
    spread, _, _ = plan_layout(2, online, None, t, numa="spread")
    assert spread == [0, 8] and {t.cpu(c).node for c in spread} == {0, 1}


def test_smt_and_numa_are_refused_where_they_cannot_be_given(trees, tmp_path):
    from corebench.targets.cpus import check

    t = read(trees["ryzen-1s-6c-smt"])
    with pytest.raises(ValueError, match="6 free"):
        check(8, [c.id for c in t.cpus], None, "on", "one", t)
    plan = tmp_path / "plan.toml"
    plan.write_text('[target]\nbuiltin = {}\ncpus = 1.5\nsmt = "on"\n[load]\npath = "/"\n')
    p = run_cli("run", str(plan), "--dry-run")
    assert p.returncode == 2 and "whole cpus" in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    plan.write_text('[target]\nbuiltin = {}\nnuma = "spread"\n[load]\npath = "/"\n')
    p = run_cli("run", str(plan), "--dry-run")
    assert p.returncode == 2 and "give cpus" in p.stderr, p.stderr
