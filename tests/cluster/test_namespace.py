"""A second machine, as near as one machine gets: a network namespace with
an address of its own, joined to this one by a veth pair and running a Ray
node of its own. Its agent reaches the target only at this machine's veth
address: a loopback target is refused, and a target listening on the veth
address is loaded from both nodes, by `corebench load` and by a plan."""

import json
import socket
import subprocess
from types import SimpleNamespace

import pytest

from corebench.testing.lab import Lab
from tests.conftest import CLI, run_cli
from tests.support.records import as_json


@pytest.fixture(scope="module")
def two_hosts():
    with Lab(nodes={"there": 1}) as lab:
        yield SimpleNamespace(address=lab.address, here=lab.here, there=lab.ip["there"])


@pytest.fixture
def server(two_hosts, tmp_path):
    """The built-in server on this machine's veth address, logging every request."""
    with socket.socket() as s:
        s.bind((two_hosts.here, 0))
        port = s.getsockname()[1]
    log = tmp_path / "access.log"
    proc = subprocess.Popen(
        CLI
        + [
            "serve",
            "--host",
            two_hosts.here,
            "--port",
            str(port),
            "--model",
            "async",
            "--workers",
            "1",
            "--access-log",
            str(log),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    proc.stderr.readline()  # "listening on ..."
    served = SimpleNamespace(url=f"http://{two_hosts.here}:{port}/", port=port, log=log, proc=proc)
    yield served
    proc.terminate()
    proc.wait(timeout=10)


def _served(s) -> int:
    s.proc.terminate()
    s.proc.wait(timeout=10)
    return len(s.log.read_text().splitlines())


def test_the_remote_agent_loads_the_target_at_its_address(two_hosts, server, tmp_path):
    out = tmp_path / "r.json"
    p = run_cli(
        "load",
        server.url,
        "-c",
        "4",
        "-n",
        "4000",
        "-k",
        "--allow-remote",
        "--ray",
        two_hosts.address,
        "--agents",
        "2",
        "--strict-spread",
        "--json",
        str(out),
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    r = json.loads(out.read_text())
    assert r["responses"] == 4000 and r["failed"] == 0
    assert sorted(a["node"].split("/")[1] for a in r["agents"]) == sorted([two_hosts.here, two_hosts.there])
    assert [a["requests"] for a in r["agents"]] == [2000, 2000]
    assert _served(server) == 4000


def test_a_loopback_target_is_refused_when_an_agent_is_elsewhere(two_hosts, server):
    p = run_cli(
        "load",
        f"http://127.0.0.1:{server.port}/",
        "-c",
        "2",
        "-n",
        "10",
        "--ray",
        two_hosts.address,
        "--agents",
        "2",
        "--strict-spread",
        timeout=120,
    )
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1 and f"runs on {two_hosts.there} (another machine)" in p.stderr, p.stderr


def test_an_experiment_loads_its_target_from_both_nodes(two_hosts, tmp_path):
    from corebench.store import Store

    plan = tmp_path / "plan.toml"
    plan.write_text(f"""
[experiment]
repetitions = 2
duration = "1s"

[cluster]
address = "{two_hosts.address}"
agents = 2
strict_spread = true

[target]
builtin = {{ model = "async" }}
address = "{two_hosts.here}"

[load]
concurrency = 4
allow_remote = true
""")
    p = run_cli("run", str(plan), "--store", str(tmp_path / "s.sqlite"), "-q", timeout=180)
    assert p.returncode == 0, p.stderr
    s = Store(tmp_path / "s.sqlite", read_only=True)
    runs = s.runs(1)
    (ceiling,) = s.experiment(1).calibration
    s.close()
    assert [r.status for r in runs] == ["ok", "ok"]
    # The target here, the agents on both hosts: each host's ceiling, and their sum.
    assert ceiling.error is None and {a.node.split("/")[1] for a in ceiling.agents} == {two_hosts.here, two_hosts.there}
    assert ceiling.ceiling_rps == pytest.approx(sum(a.ceiling_rps for a in ceiling.agents))
    assert all(a.ceiling_rps >= a.rps > 0 for a in ceiling.agents), ceiling
    for r in runs:
        result = as_json(r.result)
        assert result["address"].startswith(two_hosts.here)
        assert all(a["responses"] > 0 and a["failed"] == 0 for a in result["agents"])
        assert {a["node"].split("/")[1] for a in result["agents"]} == {two_hosts.here, two_hosts.there}
