"""A host corebench does not control, measured through Prometheus
node_exporter: shares and rates from known counters, restarts and a dead or
slow exporter said as such, and against Debian's real node_exporter on this
machine, the same per-core figures as the local monitor's for the same run."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import corebench
from corebench.monitor import Monitor
from corebench.monitor.exporter import Exporter, ExporterError, between, parse
from corebench.store import MonitorSummary
from corebench.testing import NodeExporter, free_port

needs_exporter = pytest.mark.skipif(
    subprocess.run(["sh", "-c", "command -v prometheus-node-exporter"], capture_output=True).returncode != 0,
    reason="prometheus-node-exporter is not installed (make system-deps installs it)",
)


def page(cores: dict[int, dict[str, float]], disk_read: float = 0.0, rx: float = 0.0) -> str:
    lines = [
        "# HELP node_cpu_seconds_total Seconds the CPUs spent in each mode.",
        "# TYPE node_cpu_seconds_total counter",
    ]
    for c, modes in cores.items():
        lines += [f'node_cpu_seconds_total{{cpu="{c}",mode="{m}"}} {v}' for m, v in modes.items()]
    lines += ["# TYPE node_disk_read_bytes_total counter", f'node_disk_read_bytes_total{{device="vda"}} {disk_read}']
    lines += ["# TYPE node_network_receive_bytes_total counter"]
    lines += [f'node_network_receive_bytes_total{{device="eth0"}} {rx}']
    lines += [f'node_network_receive_bytes_total{{device="lo"}} {rx * 10}']  # loopback: not the NIC's
    lines += ["# TYPE node_memory_MemAvailable_bytes gauge", "node_memory_MemAvailable_bytes 1e9"]
    return "\n".join(lines) + "\n"


MODES0 = {"user": 100.0, "nice": 0.0, "system": 50.0, "irq": 0.0, "softirq": 0.0, "iowait": 10.0, "idle": 1000.0}


def test_shares_and_rates_from_two_scrapes():
    a = parse(page({0: MODES0, 1: MODES0}, disk_read=1e6, rx=5e5), 10.0)
    # One second later: core 0 half user, half idle; core 1 a quarter
    # system, a quarter iowait (idle with a disk request out), half idle.
    c0 = {**MODES0, "user": 100.5, "idle": 1000.5}
    c1 = {**MODES0, "system": 50.25, "iowait": 10.25, "idle": 1000.5}
    b = parse(page({0: c0, 1: c1}, disk_read=3e6, rx=6e5), 11.0)
    i = between(a, b)
    assert i is not None
    assert (i.cores[0].user, i.cores[0].idle) == pytest.approx((0.5, 0.5))
    assert (i.cores[1].system, i.cores[1].iowait, i.cores[1].idle) == pytest.approx((0.25, 0.25, 0.5))
    assert i.busy_cores == pytest.approx(0.75), "iowait is idle time, not work"
    assert i.disk_read_bps == pytest.approx(2e6) and i.net_rx_bps == pytest.approx(1e5), "loopback left out"
    assert b.memory_available_bytes == 1e9


def test_a_counter_going_back_cuts_its_interval_out():
    e = Exporter("http://127.0.0.1:1/metrics")
    busy = {**MODES0, "user": 101.0}
    restarted = {m: v / 100 for m, v in MODES0.items()}  # the host rebooted: counters from zero
    e.scrapes = [parse(page({0: MODES0}), t) for t in (0.0,)]
    later = {**restarted, "user": restarted["user"] + 0.5, "idle": restarted["idle"] + 0.5}
    e.scrapes += [parse(page({0: busy}), 1.0), parse(page({0: restarted}), 2.0), parse(page({0: later}), 3.0)]
    done, resets = e.intervals()
    assert resets == 1 and len(done) == 2
    s = e.summary(MonitorSummary())
    assert s.counter_resets == 1 and s.source.startswith("node_exporter") and s.host_cpu is not None
    assert s.host_cpu == pytest.approx(0.75), "the reset's interval is neither a negative rate nor a zero"


def test_the_cores_share_is_of_its_own_counters_not_the_arrival_times():
    """A scrape that arrived late (0.6 s between arrivals over 1 s of
    counters) must not read as more than the cores there are."""
    full = {**MODES0, "user": 101.0}  # one second, all of it user
    i = between(parse(page({0: MODES0}), 10.0), parse(page({0: full}), 10.6))
    assert i is not None and i.busy_cores == pytest.approx(1.0)


def test_a_scrape_missing_a_mode_or_a_cpu_gives_no_interval():
    no_steal = {m: v for m, v in MODES0.items() if m != "idle"}
    assert between(parse(page({0: MODES0}), 0.0), parse(page({0: no_steal}), 1.0)) is None
    e = Exporter("http://127.0.0.1:1/metrics")
    two = {0: MODES0, 1: MODES0}
    step = {c: {**MODES0, "user": MODES0["user"] + t} for c in (0, 1) for t in (0.5,)}
    e.scrapes = [parse(page(two), 0.0), parse(page(step), 1.0), parse(page({0: step[0]}), 2.0)]
    e.scrapes.append(parse(page({0: {**step[0], "idle": step[0]["idle"] + 1}}), 3.0))
    s = e.summary(MonitorSummary())  # a CPU went offline and stayed off: no IndexError
    assert s.counter_resets == 2 and len(s.cores) in (1, 2)


@pytest.mark.parametrize(
    "text", ["<html>not metrics</html>", "node_memory_MemAvailable_bytes 1\n", "node_cpu_seconds_total{cpu=\n"]
)
def test_a_page_without_cpu_figures_is_refused(text):
    with pytest.raises(ExporterError):
        parse(text, 0.0)


def test_a_dead_exporter_gives_no_figures_and_says_why():
    with Exporter(f"http://127.0.0.1:{free_port()}/metrics", interval_s=0.1) as e:
        time.sleep(0.35)
    local = MonitorSummary(cores=[], target_cpu=None, generator_cpu=0.3)
    s = e.summary(local)
    assert s.scrapes == 0 and s.scrape_errors >= 3 and s.scrape_error and "refused" in s.scrape_error.lower()
    assert s.target_cpu is None and s.cores == [] and s.generator_cpu == 0.3, "the generator's own figures stay"


def test_a_silent_exporter_does_not_hold_the_run():
    """An exporter that accepts and never answers: each scrape times out,
    is counted, and the run's end waits for at most one more."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    threading.Thread(target=accept, daemon=True).start()
    try:
        with Exporter(f"http://127.0.0.1:{listener.getsockname()[1]}/metrics", interval_s=0.2) as e:
            time.sleep(1.0)
            began = time.monotonic()
        ended = time.monotonic() - began
    finally:
        stop.set()
        listener.close()
        for s in held:
            s.close()
    assert ended < 2.0, f"the run's end waited {ended:.1f} s for a silent exporter"
    assert e.errors and "timed out" in e.errors[0] and not e.scrapes


@needs_exporter
def test_the_same_cores_as_the_local_monitor_during_a_run():
    """node_exporter on this machine reads /proc/stat as the local monitor
    does: over the same run their per-core shares agree."""
    server = subprocess.Popen(
        [sys.executable, "-m", "corebench", "serve", "--port", str(port := free_port()), "--workers", "1"],
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait(port)
        with NodeExporter() as ne, Monitor(server.pid, 1) as local, Exporter(ne.url, interval_s=0.5) as remote:
            result = corebench.load(f"http://127.0.0.1:{port}/dynamic?work_us=200", concurrency=4, duration="3s")
    finally:
        server.terminate()
        server.wait(10)
    assert result.goodput_rps > 0
    mine, theirs = local.summary(), remote.summary(MonitorSummary())
    assert len(theirs.cores) == len(mine.cores) and theirs.scrapes >= 6 and theirs.scrape_errors == 0
    for a, b in zip(mine.cores, theirs.cores, strict=True):
        assert b.busy == pytest.approx(a.busy, abs=0.1), (mine.cores, theirs.cores)
    host_local = sum(c.busy for c in mine.cores)
    assert theirs.host_cpu == pytest.approx(host_local, rel=0.15, abs=0.1)
    assert theirs.host_cpu >= (mine.target_cpu or 0) * 0.9, "the host's CPU holds the target's"


@needs_exporter
def test_a_running_servers_host_measured_in_a_plan(tmp_path: Path):
    """A url target with `monitor`: the report's CPU per request and
    diagnosis come from the exporter's figures, and say whose they are."""
    from corebench.report import load

    server = subprocess.Popen(
        [sys.executable, "-m", "corebench", "serve", "--port", str(port := free_port()), "--workers", "1"],
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait(port)
        with NodeExporter() as ne:
            plan = tmp_path / "plan.toml"
            plan.write_text(
                f"""
[experiment]
name = "watched"
calibrate = false
repetitions = 2
warmup = 0
duration = "1s"

[factors]
concurrency = [1, 4]

[target]
url = "http://127.0.0.1:{port}/"
monitor = "{ne.url}"

[load]
path = "/dynamic?work_us=300"
concurrency = "{{concurrency}}"
"""
            )
            p = subprocess.run(
                [sys.executable, "-m", "corebench", "run", str(plan), "--store", str(tmp_path / "s.sqlite")],
                capture_output=True,
                text=True,
                timeout=120,
            )
    finally:
        server.terminate()
        server.wait(10)
    assert p.returncode == 0, p.stderr
    d = load(tmp_path / "s.sqlite")
    assert all(p.demand_ms and all(x > 0 for x in p.demand_ms) for p in d.points), "CPU per request from the host"
    # Each diagnosis that cites the target's CPU (CPU-bound or load-limited, as the busy machine has it)
    # cites the host's; one whose concurrency was not held (Little's law fails) is diagnosed by that.
    by_cpu = [dg for dg in d.diagnoses if "target used" in dg.evidence]
    assert by_cpu and all("CPUs of its host (node_exporter" in dg.evidence for dg in by_cpu), d.diagnoses
    (scope,) = [f for f in d.of("scope") if "node_exporter" in f.text]
    assert "0 failed" in scope.text and "upper bound" in scope.text
    runs = [r for r in d.runs if r.monitor is not None]
    assert runs and all(r.monitor.source == f"node_exporter {ne.url}" for r in runs)


def test_monitor_belongs_to_a_running_server(tmp_path: Path):
    from tests.conftest import run_cli

    plan = tmp_path / "plan.toml"
    plan.write_text('[target]\nbuiltin = {}\nmonitor = "http://127.0.0.1:9100/metrics"\n[load]\npath = "/"\n')
    p = run_cli("run", str(plan), "--dry-run")
    assert p.returncode == 2 and "monitor" in p.stderr and "give it with url" in p.stderr, p.stderr
    plan.write_text('[target]\nurl = "http://127.0.0.1:1/"\nmonitor = "127.0.0.1:9100"\n[load]\npath = "/"\n')
    p = run_cli("run", str(plan), "--dry-run")
    assert p.returncode == 2 and "http://HOST:9100/metrics" in p.stderr, p.stderr


def _wait(port: int) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("the built-in server did not start")


@needs_exporter
def test_load_with_monitor_says_the_hosts_cpu_per_request():
    from tests.conftest import run_cli

    server = subprocess.Popen(
        [sys.executable, "-m", "corebench", "serve", "--port", str(port := free_port()), "--workers", "1"],
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait(port)
        url = f"http://127.0.0.1:{port}/dynamic?work_us=500"
        with NodeExporter() as ne:
            p = run_cli("load", "-c", "2", "-k", "-t", "2s", "--monitor", ne.url, url)
        dead = run_cli("load", "-c", "1", "-n", "50", "--monitor", f"http://127.0.0.1:{free_port()}/metrics", url)
        bad = run_cli("load", "-n", "1", "--monitor", "127.0.0.1:9100", url)
    finally:
        server.terminate()
        server.wait(10)
    assert p.returncode == 0, p.stderr
    (line,) = [x for x in p.stdout.splitlines() if x.startswith("Target host CPU:")]
    assert "CPUs busy over the load (node_exporter" in line and "ms of CPU per successful request" in line
    assert "that host ran this load too" in line, "the exporter is on the load's own machine here"
    assert dead.returncode == 0 and "unknown: node_exporter gave no figures" in dead.stdout, dead.stdout
    assert bad.returncode == 2 and "--monitor" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


@needs_exporter
def test_capacity_with_monitor_reads_each_step_on_the_host(tmp_path: Path):
    """A search of the built-in `/queue` (an M/M/1 queue whose service is
    a sleep, μ = 500/s): each step carries the host's CPU from
    node_exporter, and where the objective was missed the host's CPUs were
    far from full, said without naming a cause. A dead exporter is said,
    never a zero."""
    import json

    from corebench.targets.builtin import Served
    from tests.conftest import run_cli

    out = tmp_path / "search.json"
    args = ["--slo", "p50<=10ms", "--arrivals", "uniform", "-k", "--precision", "10%", "--start-rate", "300"]
    with Served("--model", "threads", "--workers", "64") as srv, NodeExporter() as ne:
        url = srv.url + "queue?service_us=2000"
        p = run_cli("capacity", url, *args, "--monitor", ne.url, "--json", str(out), timeout=300)
        dead = run_cli(
            "capacity", url, *args, "--max-steps", "2", "--monitor", f"http://127.0.0.1:{free_port()}/metrics",
            timeout=120,
        )  # fmt: skip
    bad = run_cli("capacity", "http://127.0.0.1:9/", "--slo", "p99<=20ms", "--monitor", "127.0.0.1:9100")
    assert p.returncode == 0, p.stdout + p.stderr
    steps = json.loads(out.read_text())["steps"]
    assert all(s["host_cpus"] == os.cpu_count() and 0 <= s["host_cpu"] <= s["host_cpus"] for s in steps), steps
    assert "host CPUs" in p.stdout and "host CPU " in p.stdout, "the table's column and each step's line"
    (line,) = [x for x in p.stdout.splitlines() if x.startswith("Target host CPU (node_exporter")]
    assert "the highest rate that met the objective" in line and "the lowest that missed" in line, line
    assert "that host ran this load too" in line
    # A sleeping queue at a few hundred requests a second leaves the CPUs mostly idle.
    assert "missed for another reason" in p.stdout, p.stdout
    assert "Target host CPU: unknown: node_exporter gave no figures" in dead.stdout, dead.stdout + dead.stderr
    assert bad.returncode == 2 and "--monitor" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
