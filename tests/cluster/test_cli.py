"""The distributed load from the command line, on a real two-node Ray
cluster: `corebench load --ray`, a plan's [cluster], a killed agent, and
the errors said before any load."""

import json
import os
import signal
import subprocess
import time

import psutil
import pytest

from tests.conftest import ACCESS_LOG, CLI, run_cli
from tests.support.records import as_json


def test_cli_load_on_the_cluster(ray_cluster, nginx, tmp_path):
    before = nginx.served()
    out = tmp_path / "r.json"
    p = run_cli(
        "load",
        nginx.url,
        "-c",
        "6",
        "-n",
        "3000",
        "-k",
        "--ray",
        ray_cluster.address,
        "--agents",
        "2",
        "--json",
        str(out),
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    r = json.loads(out.read_text())
    assert nginx.served_since(before) == r["responses"] == 3000
    assert [a["requests"] for a in r["agents"]] == [1500, 1500]
    assert "Agents: 2 on 2 node(s)" in p.stdout


def _agent_pids() -> set[int]:
    """Ray titles an actor's process `ray::LoadAgent` (and the method it
    runs, while it runs one)."""
    found = set()
    for proc in psutil.process_iter(["cmdline"]):
        if any(part.startswith("ray::LoadAgent") for part in proc.info["cmdline"] or []):
            found.add(proc.pid)
    return found


def _kill_an_agent_mid_run(nginx, earlier: set[int], deadline_s: float = 90) -> None:
    """Once new agents exist and the load has begun (nginx counts), SIGKILL one."""
    base = nginx.served()
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        mine = sorted(_agent_pids() - earlier)
        if mine and nginx.served() - base > 100:
            os.kill(mine[0], signal.SIGKILL)
            return
        time.sleep(0.05)
    raise AssertionError("the agents never began loading")


def test_a_killed_agent_fails_the_run_in_time(ray_cluster, nginx):
    earlier = _agent_pids()
    proc = subprocess.Popen(
        CLI + ["load", nginx.url, "-c", "4", "-t", "20s", "-k", "--ray", ray_cluster.address, "--agents", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _kill_an_agent_mid_run(nginx, earlier)
        killed = time.monotonic()
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 1, err
    assert "the run failed: agent" in err and "died" in err.lower(), err
    # Well before the run's own end (20 s), let alone its timeout.
    assert time.monotonic() - killed < 15


def test_a_killed_agent_fails_one_run_and_the_experiment_goes_on(ray_cluster, nginx, tmp_path):
    from corebench.store import Store

    plan = tmp_path / "plan.toml"
    plan.write_text(f"""
[experiment]
name = "distributed"
repetitions = 3
duration = "4s"
randomize = false
# The agent is killed once nginx counts requests: no calibration (of the
# built-in server, with the same agents) before the first run to land in.
calibrate = false

[cluster]
address = "{ray_cluster.address}"
agents = 2

[target]
url = "{nginx.url}"

[load]
path = "/page.html"
concurrency = 4
keep_alive = true
""")
    store = tmp_path / "s.sqlite"
    earlier = _agent_pids()
    proc = subprocess.Popen(
        CLI + ["run", str(plan), "--store", str(store), "-q"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        _kill_an_agent_mid_run(nginx, earlier)
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 1, err  # some runs failed
    s = Store(store, read_only=True)
    runs = s.runs(1)
    s.close()
    statuses = [r.status for r in runs]
    assert statuses == ["failed", "ok", "ok"], (statuses, err)
    assert runs[0].error.startswith("agents: agent"), runs[0].error
    assert len(as_json(runs[1].result)["agents"]) == 2
    # The generator's figures are the agents': their CPU, their client-bound flag.
    monitor = as_json(runs[1].monitor)
    assert monitor["generator_cpu"] > 0 and monitor["client_bound_agents"] == []
    assert as_json(runs[1].layout)["generator"] == "ray agents"
    # The report lists each agent of each run that measured.
    html = tmp_path / "report.html"
    p = run_cli("report", str(store), "-o", str(html))
    assert p.returncode == 0, p.stderr
    table = html.read_text().split('<table id="agents">')[1].split("</table>")[0]
    assert table.count("<tr>") == 1 + 2 * 2, table


def test_an_unreachable_cluster_is_an_error_before_any_load(nginx):
    before = nginx.served()
    p = run_cli("load", nginx.url, "-c", "2", "-n", "10", "--ray", "127.0.0.1:1", "--agents", "2")
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1 and "cannot reach a Ray cluster" in p.stderr, p.stderr
    assert nginx.served_since(before) == 0


def test_too_few_nodes_for_a_strict_spread(ray_cluster, nginx):
    before = nginx.served()
    p = run_cli(
        "load",
        nginx.url,
        "-c",
        "3",
        "-n",
        "10",
        "--ray",
        ray_cluster.address,
        "--agents",
        "3",
        "--strict-spread",
        timeout=120,
    )
    assert p.returncode == 2
    assert "the cluster has 2 node(s), fewer than the 3 agents" in p.stderr, p.stderr
    assert nginx.served_since(before) == 0


def test_strict_spread_needs_a_cluster(nginx):
    p = run_cli("load", nginx.url, "--strict-spread")
    assert p.returncode == 2 and "--ray" in p.stderr


def test_a_log_is_replayed_once_across_the_agents(ray_cluster, nginx, tmp_path):
    before = nginx.served()
    out = tmp_path / "r.json"
    p = run_cli(
        "replay",
        str(ACCESS_LOG),
        "--target",
        nginx.url,
        "-c",
        "4",
        "-k",
        "--ray",
        ray_cluster.address,
        "--agents",
        "2",
        "--json",
        str(out),
        timeout=180,
    )
    assert p.returncode == 0, p.stderr
    r = json.loads(out.read_text())
    assert r["replay"]["replayed"] == r["requests"] == nginx.served_since(before) == 9994
    assert [a["requests"] for a in r["agents"]] == [4997, 4997]


def test_ctrl_c_stops_the_agents_and_reports_what_they_measured(ray_cluster, nginx):
    earlier = _agent_pids()
    proc = subprocess.Popen(
        CLI + ["load", nginx.url, "-c", "4", "-t", "60s", "-k", "--ray", ray_cluster.address, "--agents", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        base = nginx.served()
        end = time.monotonic() + 90
        while time.monotonic() < end and not (_agent_pids() - earlier and nginx.served() - base > 100):
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "Agents: 2 on 2 node(s)" in out and "Complete requests:" in out, (out, err)


def test_connections_too_few_for_the_agents_are_refused_before_connecting():
    # Nothing listens at that address: the load's own error comes first.
    p = run_cli("load", "http://127.0.0.1:9/", "-n", "10", "--ray", "127.0.0.1:1", "--agents", "2")
    assert p.returncode == 2
    assert "1 connections cannot be shared by 2 agents" in p.stderr, p.stderr


def test_a_plan_whose_load_the_agents_cannot_share_fails_before_connecting(tmp_path):
    plan = tmp_path / "plan.toml"
    plan.write_text("""
[experiment]
duration = "1s"

[cluster]
address = "127.0.0.1:1"
agents = 4

[target]
builtin = { model = "async" }

[load]
concurrency = 2
""")
    p = run_cli("run", str(plan), "--store", str(tmp_path / "s.sqlite"), "-q")
    assert p.returncode == 2
    assert "plan.toml:7: cluster.agents:" in p.stderr and "2 connections cannot be shared by 4 agents" in p.stderr, (
        p.stderr
    )


def test_an_agent_that_stops_answering_fails_the_run_without_a_hang(ray_cluster, nginx):
    """SIGSTOP: the process lives, so Ray sees no death; corebench's own
    check (an agent must answer within --agent-timeout, here 5 s) ends the
    run, long before its 120 s duration."""
    earlier = _agent_pids()
    proc = subprocess.Popen(
        CLI
        + ["load", nginx.url, "-c", "4", "-t", "120s", "-k", "--ray", ray_cluster.address, "--agents", "2"]
        + ["--agent-timeout", "5s"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        base = nginx.served()
        end = time.monotonic() + 90
        while time.monotonic() < end and not (_agent_pids() - earlier and nginx.served() - base > 100):
            time.sleep(0.05)
        frozen = sorted(_agent_pids() - earlier)[0]
        os.kill(frozen, signal.SIGSTOP)
        stopped = time.monotonic()
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 1, err
    assert "did not answer for 5 s: lost or stalled" in err, err
    assert time.monotonic() - stopped < 30
    assert not psutil.pid_exists(frozen) or psutil.Process(frozen).status() == psutil.STATUS_ZOMBIE, (
        "killed, not left frozen"
    )


@pytest.mark.parametrize("given, said", [("soon", "is not a duration"), ("2h", "less than or equal to 3600")])
def test_a_bad_agent_timeout_is_one_line(given, said):
    r = subprocess.run(
        CLI + ["load", "--ray", "127.0.0.1:1", "--agent-timeout", given, "http://127.0.0.1:9/"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2 and r.stderr.startswith("corebench: error: --agent-timeout: ") and said in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
