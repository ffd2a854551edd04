"""A target on another host: a lab (corebench.testing.lab) whose target
node lives in a network namespace of its own, offering Ray no CPUs; the
plan's built-in server is started, pinned and measured there, and loaded
from this machine. The namespaces share this machine's CPUs: the test
checks who ran what and where, not speed."""

import contextlib
import os
import shutil
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from corebench.store import Store
from corebench.testing.lab import Lab
from tests.conftest import CLI, run_cli
from tests.support.records import as_json

pytestmark = pytest.mark.skipif(shutil.which("ip") is None, reason="needs iproute2")
# A busy 2-core machine's scheduling and Ray's replies on top of the 2 s rule.
SLACK_S = 1.0


@pytest.fixture(scope="module")
def lab():
    # The head offers Ray no CPUs: a load agent can only land on "load".
    with Lab(nodes={"target": 0, "load": 1}, head_cpus=0) as lab:
        yield lab


def _plan(tmp_path: Path, lab: Lab, extra: str = "") -> Path:
    plan = tmp_path / "plan.toml"
    plan.write_text(f"""
[experiment]
repetitions = 1
duration = "1s"

[factors]
cpus = [1, 2]

[target]
builtin = {{ model = "threads", workers = 4, args = ["--access-log", "{tmp_path}/access-{{cpus}}.log"] }}
cpus = "{{cpus}}"
node = "{lab.ip["target"]}"
ray = "{lab.address}"
{extra}
[load]
concurrency = 4
keep_alive = true
allow_remote = true
""")
    return plan


def test_the_target_runs_pinned_and_measured_on_its_node(lab, tmp_path):
    plan = _plan(tmp_path, lab)
    before = _ray_threads()
    p = run_cli("run", str(plan), "--store", str(tmp_path / "s.sqlite"), "-q", timeout=300)
    after = _ray_threads()
    assert p.returncode == 0, p.stderr
    s = Store(tmp_path / "s.sqlite", read_only=True)
    runs = s.runs(1)
    node = s.experiment(1).host.target_node
    calibration = s.experiment(1).calibration
    s.close()
    assert sorted(r.point["cpus"] for r in runs) == [1, 2] and all(r.status == "ok" for r in runs), runs
    # The generator's ceiling, measured from here against the built-in server on the node's widest CPU set.
    (ceiling,) = calibration
    assert ceiling.error is None and ceiling.generator_cpus == [] and len(ceiling.target_cpus) == 2, ceiling
    (here,) = ceiling.agents
    assert here.node == "this machine" and here.rps > 0 and here.cpu_utilization > 0 and here.ceiling_rps >= here.rps
    assert ceiling.ceiling_rps == pytest.approx(here.ceiling_rps) and ceiling.repeats == 3
    assert ceiling.ceiling_low_rps <= ceiling.ceiling_rps <= ceiling.ceiling_high_rps
    assert all(r.layout.generator_ceiling_rps == round(ceiling.ceiling_rps) for r in runs)
    # The node's own facts, read there (the lab's node is this machine).
    from corebench.system.check import facts

    assert node is not None and node["node"] == lab.ip["target"], node
    assert node["cpu_model"] == facts("none", None)["cpu_model"] and node["cpus"] == os.cpu_count()
    for r in runs:
        # The lab's node is this machine (same boot id): the load shared its CPUs, and says so.
        assert r.layout.target_host == lab.ip["target"] and r.layout.shared and r.shared
        assert len(r.layout.target_cpus) == r.point["cpus"]
        result = as_json(r.result)
        assert result["address"].startswith(lab.ip["target"]) and result["failed"] == 0
        # The server's own count: every response the load counted, no other
        # (beside the readiness check, made on the node).
        served = (tmp_path / f"access-{r.point['cpus']}.log").read_text().splitlines()
        loaded = [line for line in served if line.startswith(lab.here)]
        assert len(loaded) == result["responses"] > 0 and all('"corebench/' in line for line in loaded)
        # Measured there: the target's CPU and each core of its host.
        assert r.monitor is not None and r.monitor.samples >= 1 and r.monitor.target_cpu > 0
        assert _cpus(r.target.cpus_allowed) == r.layout.target_cpus
        # Ray's own processes there: measured, and kept off the target's CPUs where the node had others.
        ray = r.monitor.ray
        assert ray is not None and ray.cpu is not None and ray.cpu >= 0
        spare = sorted(set(range(os.cpu_count() or 1)) - set(r.layout.target_cpus))
        assert ray.cpus == (spare or None), (ray, r.layout)
    report = run_cli("report", str(tmp_path / "s.sqlite"), "--format", "md")
    assert report.returncode == 0, report.stderr
    assert f"Hosts: the target ran on the Ray node {lab.ip['target']}" in report.stdout
    assert f"; the target's host, Ray node {lab.ip['target']}: {node['cpu_model']}, " in report.stdout
    assert "the load ran on the target's cores too" in report.stdout
    assert "The generator's ceiling was measured from the load hosts against the built-in server" in report.stdout
    assert "Generator ceiling for HTTP/1.1, keep-alive, a closed loop: about" in report.stdout
    assert "this machine: " in report.stdout and "connections to the built-in server's 64-byte page" in report.stdout
    assert "Ray's own processes on that node" in report.stdout and "their CPU is not the target's" in report.stdout
    # Moved back once the target stopped: every Ray thread that lived through the run has its CPUs again.
    kept = {t: cpus for t, cpus in after.items() if t in before}
    assert kept and all(before[t] == cpus for t, cpus in kept.items()), (before, after)


def _ray_threads() -> dict[int, set[int]]:
    """Each thread of this machine's raylets, with the CPUs it may run on."""
    out = {}
    for proc in psutil.process_iter(["name"]):
        if not (proc.info["name"] or "").startswith("raylet"):
            continue
        for t in proc.threads():
            with contextlib.suppress(OSError):
                out[t.id] = os.sched_getaffinity(t.id)
    return out


def test_load_agents_on_their_own_node_load_the_target_on_its_node(lab, tmp_path):
    plan = _plan(tmp_path, lab, extra="").read_text().replace(f'ray = "{lab.address}"\n', "")
    plan += f'\n[cluster]\naddress = "{lab.address}"\nagents = 1\n'
    (tmp_path / "plan.toml").write_text(plan)
    p = run_cli("run", str(tmp_path / "plan.toml"), "--store", str(tmp_path / "s.sqlite"), "-q", timeout=300)
    assert p.returncode == 0, p.stderr
    s = Store(tmp_path / "s.sqlite", read_only=True)
    runs = s.runs(1)
    exp = s.experiment(1)
    s.close()
    assert len(runs) == 2 and all(r.status == "ok" for r in runs)
    # Each load host's ceiling: the one agent's, on the load node, against the target's node.
    (ceiling,) = exp.calibration
    (agent,) = ceiling.agents
    assert ceiling.error is None and agent.node.split("/")[1] == lab.ip["load"] and agent.rps > 0, ceiling
    assert (
        agent.cores == 1 and agent.ceiling_rps >= agent.rps and ceiling.ceiling_rps == pytest.approx(agent.ceiling_rps)
    )
    (load_host,) = exp.host.load_nodes
    assert load_host.node == agent.node and load_host.cpu_model == exp.host.cpu_model, load_host
    for r in runs:
        assert r.layout.target_host == lab.ip["target"] and r.layout.generator == "ray agents"
        assert r.layout.generator_ceiling_rps == round(ceiling.ceiling_rps)
        result = as_json(r.result)
        (part,) = result["agents"]
        assert part["node"].split("/")[1] == lab.ip["load"]
        served = (tmp_path / f"access-{r.point['cpus']}.log").read_text().splitlines()
        assert len([x for x in served if x.startswith(lab.ip["load"])]) == result["responses"] > 0
    report = run_cli("report", str(tmp_path / "s.sqlite"), "--format", "md")
    assert f"Hosts: the target ran on the Ray node {lab.ip['target']}" in report.stdout
    assert (
        f"the load came from the Ray cluster's load agents (an agent on {agent.node}: {exp.host.cpu_model}, "
        f"{exp.host.cpus} CPUs, kernel {exp.host.kernel}); in 2 run(s) the load ran on the target's cores too"
    ) in report.stdout, report.stdout
    assert f"{agent.node}: {agent.ceiling_rps:,.0f} from {agent.rps:,.0f} req/s" in report.stdout


def _cpus(listed: str | None) -> list[int]:
    """A kernel CPU list ("0-2,4") as CPUs."""
    out: list[int] = []
    for part in (listed or "").split(","):
        lo, _, hi = part.partition("-")
        out += range(int(lo), int(hi or lo) + 1)
    return out


def test_a_plan_with_a_node_and_no_cluster_is_one_line(tmp_path):
    plan = tmp_path / "plan.toml"
    plan.write_text('[target]\nbuiltin = {}\nnode = "10.9.9.9"\n')
    p = run_cli("run", str(plan), "--store", str(tmp_path / "s.sqlite"), "-q")
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert "needs the Ray cluster it belongs to" in p.stderr


def _one_point(tmp_path: Path, lab: Lab, repetitions: int, duration_s: int) -> Path:
    """A plan of one point whose target runs on the lab's target node."""
    plan = tmp_path / "plan.toml"
    plan.write_text(f"""
[experiment]
repetitions = {repetitions}
duration = "{duration_s}s"

[target]
builtin = {{ model = "threads", workers = 2 }}
node = "{lab.ip["target"]}"
ray = "{lab.address}"

[load]
concurrency = 2
allow_remote = true
""")
    return plan


def test_a_lost_target_node_fails_its_runs_and_the_experiment_goes_on(tmp_path):
    from corebench.targets import filesystem

    with Lab(nodes={"target": 0}) as lab:
        plan = _one_point(tmp_path, lab, repetitions=4, duration_s=2)
        store = tmp_path / "s.sqlite"
        proc = subprocess.Popen(
            CLI + ["run", str(plan), "--store", str(store), "-q"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            end = time.monotonic() + 120
            while _stored(store) < 1:
                assert proc.poll() is None and time.monotonic() < end, proc.communicate()
                time.sleep(0.2)
            time.sleep(1.0)  # into the second run: its monitor and its load lose the node
            lab.kill("target")
            out, err = proc.communicate(timeout=400)
        finally:
            proc.kill()
    s = Store(store, read_only=True)
    runs = s.runs(1)
    s.close()
    assert len(runs) == 4 and runs[0].status == "ok", ([(r.status, r.error) for r in runs], proc.returncode, err)
    lost = [r for r in runs if r.status == "failed"]
    assert lost and all(
        "the target's node" in (r.error or "") or "target not started" in (r.error or "") for r in lost
    ), [r.error for r in lost]
    # What the node left (its work folder: the node died before closing it) goes with corebench cleanup.
    assert run_cli("cleanup").returncode == 0
    assert filesystem.dead_work_dirs() == []
    assert subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.count(lab.prefix) == 0


def _stored(path: Path) -> int:
    if not path.exists():
        return 0
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        try:
            return int(db.execute("SELECT COUNT(*) FROM runs WHERE warmup = 0").fetchone()[0])
        except sqlite3.OperationalError:
            return 0


def _served_in(ns: str) -> list[int]:
    """The built-in servers running in namespace `ns`."""
    pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
    out = []
    for pid in pids:
        with contextlib.suppress(OSError):
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if b"serve" in argv and b"corebench" in b" ".join(argv):
                out.append(int(pid))
    return out


def test_cleanup_reaches_the_node_a_killed_corebench_left_its_folder_on(tmp_path):
    from corebench.targets import filesystem

    with Lab(nodes={"target": 0}) as lab:
        plan = _one_point(tmp_path, lab, repetitions=3, duration_s=5)
        ns = lab.namespace("target")
        proc = subprocess.Popen(CLI + ["run", str(plan), "--store", str(tmp_path / "s.sqlite"), "-q"])
        try:
            end = time.monotonic() + 120
            while not _served_in(ns):
                assert proc.poll() is None and time.monotonic() < end, "the target never started on its node"
                time.sleep(0.2)
        finally:
            proc.kill()  # SIGKILL: nothing of ours stops the target
            proc.wait()
        # Ray ends the target agent of a dead driver (and the processes it
        # started); the agent's folder stays, owned by no live corebench.
        end = time.monotonic() + 60
        while not filesystem.dead_work_dirs():
            assert time.monotonic() < end, "the node's target agent outlived its driver"
            time.sleep(0.5)
        left = filesystem.dead_work_dirs()
        r = run_cli("cleanup", "--ray", lab.address, timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr
        # The lab's nodes share this machine's /tmp: one node or the other removes it.
        assert any(f"Removed {d}" in r.stdout for d in left), r.stdout
        assert {line.split(":")[0] for line in r.stdout.splitlines()} == {lab.here, lab.ip["target"]}, r.stdout
        assert _served_in(ns) == [] and filesystem.dead_work_dirs() == []


def test_a_capacity_search_runs_against_the_target_on_its_node(lab, tmp_path):
    """[search] with [target] node: each step loads the node's target;
    the search answers, its steps are stored, and the report has its row."""
    plan = tmp_path / "plan.toml"
    plan.write_text(f"""
[experiment]
repetitions = 1
warmup = 0

[target]
# Event loops: a thread per keep-alive connection (model = "threads")
# leaves the open loop's other connections waiting, and its timeouts
# (1-2% near the limit) decided the steps rather than the queue.
builtin = {{ model = "async", workers = 2 }}
node = "{lab.ip["target"]}"
ray = "{lab.address}"

[load]
path = "/queue?service_us=2000"
keep_alive = true
allow_remote = true

[search]
slo = "p50<=10ms"
arrivals = "uniform"
# What is tested is that a search runs on the node and answers, not how
# close: on a busy 2-core CI machine a 15% bracket once took more than 8
# steps (424-505 req/s after 8).
precision = "25%"
start_rate = 300
max_steps = 12
""")
    p = run_cli("run", str(plan), "--store", str(tmp_path / "s.sqlite"), "-q", timeout=400)
    assert p.returncode == 0, p.stdout + p.stderr
    s = Store(tmp_path / "s.sqlite", read_only=True)
    (run,) = s.runs(1)
    s.close()
    assert run.status == "ok" and run.layout.target_host == lab.ip["target"], (run.status, run.error)
    assert run.search is not None and run.search.outcome == "found" and len(run.search.steps) >= 3
    # The queue serves 500/s; a p50 of 10 ms (even spacing) holds to about 430/s.
    assert 250 <= run.search.rate_rps <= 500, run.search.steps
    report = run_cli("report", str(tmp_path / "s.sqlite"), "--format", "md")
    assert "Capacity" in report.stdout and f"Hosts: the target ran on the Ray node {lab.ip['target']}" in report.stdout


def test_ctrl_c_stops_a_run_whose_target_is_on_a_node(lab, tmp_path):
    """SIGINT during a run: corebench exits 130 with what was measured,
    and the target on the node is stopped; how long the exit took is the
    figure the 2 s rule is held to."""
    plan = _one_point(tmp_path, lab, repetitions=3, duration_s=5)
    ns = lab.namespace("target")
    store = tmp_path / "s.sqlite"
    proc = subprocess.Popen(CLI + ["run", str(plan), "--store", str(store), "-q"], stderr=subprocess.PIPE, text=True)
    try:
        end = time.monotonic() + 120
        while _stored(store) < 1:
            assert proc.poll() is None and time.monotonic() < end, proc.communicate()
            time.sleep(0.2)
        time.sleep(1.0)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        took_s = time.monotonic() - sent
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert took_s <= 2.0 + SLACK_S, f"exit took {took_s:.1f} s after the signal"
    end = time.monotonic() + 10
    while _served_in(ns):
        assert time.monotonic() < end, "the target outlived the interrupted run on its node"
        time.sleep(0.2)
    assert _stored(store) >= 1, "what was measured before the signal is kept"


def test_a_service_and_a_filesystem_image_run_with_the_target_on_its_node(lab, tmp_path):
    """The target's stack goes where the target goes: its service is
    started in the node's network namespace (it writes which one it ran
    in), the image is made and mounted by the node's agent on the target's
    folder, the service's CPU is measured there, and nothing is left
    mounted or running afterwards."""
    from corebench.targets import filesystem

    serve = "python3 -m http.server {port} --bind 127.0.0.1 --directory {dir}"
    plan = (
        _plan(tmp_path, lab, extra="")
        .read_text()
        .replace(
            f'args = ["--access-log", "{tmp_path}/access-{{cpus}}.log"]', 'args = ["--access-log", "{dir}/access.log"]'
        )
    )
    plan = plan.replace(
        "[load]",
        f"""filesystem = {{ type = "ext4-ordered", size = "256MB" }}

[target.services.files]
command = ["sh", "-c", "readlink /proc/self/ns/net > {tmp_path}/netns-{{cpus}}; exec {serve}"]

[load]""",
    )
    (tmp_path / "plan.toml").write_text(plan)
    p = run_cli("run", str(tmp_path / "plan.toml"), "--store", str(tmp_path / "s.sqlite"), "-q", timeout=300)
    assert p.returncode == 0, p.stderr
    s = Store(tmp_path / "s.sqlite", read_only=True)
    runs = s.runs(1)
    s.close()
    assert len(runs) == 2 and all(r.status == "ok" for r in runs), [(r.status, r.error) for r in runs]
    ns = lab.namespace("target")
    node_netns = f"net:[{os.stat(f'/run/netns/{ns}').st_ino}]"
    assert node_netns != os.readlink("/proc/self/ns/net")
    for r in runs:
        assert r.layout.target_host == lab.ip["target"]
        target = as_json(r.target)
        assert target["filesystem"]["kernel_type"] == "ext4" and target["services"]["files"]["port"] > 0, target
        assert (tmp_path / f"netns-{r.point['cpus']}").read_text().strip() == node_netns
        assert r.monitor is not None and "files" in as_json(r.monitor)["services"], as_json(r.monitor)
        assert as_json(r.result)["failed"] == 0
    assert not [left for left in filesystem.leftovers() if left["mounted_on"]], filesystem.leftovers()
    assert "corebench-run-" not in Path("/proc/self/mounts").read_text()


@pytest.mark.parametrize(
    ("model", "load"),
    [
        ("rate", "rate = 200\nconcurrency = 4"),
        ("users", 'think = "0..20ms"\nconcurrency = 4'),
        ("replay", 'log = "{log}"\nconcurrency = 2'),
    ],
)
def test_each_load_model_runs_from_agents_to_the_target_on_its_node(lab, tmp_path, model, load):
    """The open loop, users with think time and a replayed log, from a load
    agent on the load node to the target on the target node: the agents'
    merged count is the server's own, and the model's own figures hold
    (the rate's sends, the log's lines)."""
    log = tmp_path / "access.log"
    log.write_text(
        "".join(
            f'127.0.0.1 - - [29/Nov/2026:10:00:{i % 60:02} +0000] "GET /static/{i} HTTP/1.1" 200 5\n' for i in range(40)
        )
    )
    plan = tmp_path / "plan.toml"
    plan.write_text(f"""
[experiment]
repetitions = 1
duration = "1s"

[target]
builtin = {{ model = "threads", workers = 4, args = ["--access-log", "{tmp_path}/served.log"] }}
node = "{lab.ip["target"]}"

[load]
model = "{model}"
{load.format(log=log)}
allow_remote = true

[cluster]
address = "{lab.address}"
agents = 1
""")
    p = run_cli("run", str(plan), "--store", str(tmp_path / "s.sqlite"), "-q", timeout=300)
    assert p.returncode == 0, p.stderr
    s = Store(tmp_path / "s.sqlite", read_only=True)
    (run,) = s.runs(1)
    (ceiling,) = s.experiment(1).calibration
    s.close()
    assert run.status == "ok" and run.layout.target_host == lab.ip["target"], run.error
    # Calibrated with the model's own pacing, from the agent, against the target's node.
    assert ceiling.error is None and ceiling.model == {"rate": "open", "users": "users", "replay": "closed"}[model]
    assert ceiling.across and ceiling.agents[0].node.split("/")[1] == lab.ip["load"], ceiling
    result = as_json(run.result)
    (agent,) = result["agents"]
    assert agent["node"].split("/")[1] == lab.ip["load"] and result["failed"] == 0
    served = [x for x in (tmp_path / "served.log").read_text().splitlines() if x.startswith(lab.ip["load"])]
    assert len(served) == result["responses"] > 0
    if model == "rate":
        schedule = result["schedule"]
        assert schedule["target_rps"] == pytest.approx(200) and schedule["dropped"] == 0, schedule
        assert 150 <= schedule["sent"] <= 250 and agent["sent"] == schedule["sent"], schedule
    if model == "replay":
        assert result["replay"]["replayed"] == 40 and {x.split('"')[1] for x in served} <= {
            f"GET /static/{i} HTTP/1.1" for i in range(40)
        }


def test_a_load_node_held_to_other_cpus_does_not_share_the_targets(tmp_path):
    """The lab's load node held to CPU 1 and the target at cpus = 1 (CPU 0)
    on the target's node: the load is apart from the target's cores as on
    two machines, so the runs are not lower bounds for sharing them and the
    report has no "shared cores" caveat; the server's count is the load's."""
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs 2 CPUs")
    with Lab(nodes={"target": 0, "load": 1}, head_cpus=0, pinned={"load": [1]}) as lab:
        plan = _plan(tmp_path, lab).read_text().replace("cpus = [1, 2]", "cpus = [1]")
        plan = plan.replace(f'ray = "{lab.address}"\n', "")
        (tmp_path / "plan.toml").write_text(plan + f'\n[cluster]\naddress = "{lab.address}"\nagents = 1\n')
        p = run_cli("run", str(tmp_path / "plan.toml"), "--store", str(tmp_path / "s.sqlite"), timeout=300)
        assert p.returncode == 0, p.stderr
        report = run_cli("report", str(tmp_path / "s.sqlite"), "--format", "md")
    s = Store(tmp_path / "s.sqlite", read_only=True)
    (run,) = s.runs(1)
    (ceiling,) = s.experiment(1).calibration
    s.close()
    assert run.status == "ok" and run.layout.target_cpus == [0], (run.error, run.layout)
    assert not run.layout.shared and not run.shared and "shared" not in (run.lower_bound or ""), run.layout
    assert not ceiling.shared and ceiling.agents[0].node.split("/")[1] == lab.ip["load"], ceiling
    result = as_json(run.result)
    served = [x for x in (tmp_path / "access-1.log").read_text().splitlines() if x.startswith(lab.ip["load"])]
    assert len(served) == result["responses"] > 0
    assert "lower bound: the generator shared" not in p.stdout + p.stderr
    assert "no load ran on the target's cores" in report.stdout, report.stdout
    assert "generator on the target's cores" not in report.stdout and "they share cores" not in report.stdout
