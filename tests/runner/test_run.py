"""Experiments end to end against real targets: the store's content after
normal runs, a target that dies mid-run, one that never becomes ready, and
the CPU layout seen from /proc."""

import os
import sys
from pathlib import Path

import pytest

from corebench.targets.cpus import online_cpus, plan_layout
from tests.support.experiments import run_plan
from tests.support.records import as_json

SUPPORT = Path(__file__).resolve().parents[1] / "support"
PY = sys.executable


def experiment(tmp_path, text):
    ran = run_plan(tmp_path, text)
    return ran.out, ran.runs, ran.host


def test_cores_by_concurrency_by_repetitions(tmp_path):
    """The issue's plan: 2 cpus levels x 3 concurrency levels x 3 measured
    repetitions, interleaved: each round starts each configuration afresh
    and warms it up once. The target writes the CPUs /proc gives it on every
    start."""
    cpus_file = tmp_path / "cpus.txt"
    serve = f"exec {PY} -m corebench serve --port {{port}} --workers {{cpus}}"
    text = f"""
[experiment]
calibrate = false  # the generator's ceiling is tested in test_adaptive_run
repetitions = 3
warmup = 1
duration = "0.5s"

[factors]
cpus = [1, 2]
concurrency = [2, 4, 8]

[target]
command = ["sh", "-c", "echo {{cpus}} $(grep Cpus_allowed_list /proc/self/status | cut -f2) >> {cpus_file}; {serve}"]

[load]
path = "/dynamic?work_us=100"
concurrency = "{{concurrency}}"
"""
    out, runs, _ = experiment(tmp_path, text)
    assert (out.ok, out.failed, len(runs)) == (24, 0, 24)
    assert sum(r.warmup for r in runs) == 6, "a warm-up after each of the 6 starts, never counted"
    points = {(c, n) for c in (1, 2) for n in (2, 4, 8)}
    assert {(r.point["cpus"], r.point["concurrency"]) for r in runs} == points
    assert out.starts == 6, "every round starts each cpus configuration afresh"
    assert len(cpus_file.read_text().splitlines()) == 6
    for rnd in (1, 2, 3):
        in_round = sorted((r for r in runs if r.round == rnd), key=lambda r: r.position)
        assert [r.position for r in in_round] == list(range(1, 9))
        measured = [r for r in in_round if not r.warmup]
        assert {r.repetition for r in measured} == {rnd}, "repetitions are numbered from 1, by round"
        assert len({r.point_key for r in measured}) == 6, "each round visits every point once"
        visits = [r.point["cpus"] for r in in_round]
        assert visits[0] != visits[-1] and in_round[0].warmup and in_round[4].warmup, visits
    orders = [[r.point_key for r in runs if r.round == rnd and not r.warmup] for rnd in (1, 2, 3)]
    assert len({tuple(o) for o in orders}) > 1, "a fresh random order each round"
    shared = [r for r in runs if as_json(r.layout)["shared"]]
    assert all("shared the target's cores" in (r.lower_bound or "") for r in shared)
    online = online_cpus()
    for line in cpus_file.read_text().splitlines():
        cpus, allowed = line.split()
        target, _, _ = plan_layout(float(cpus), online)
        assert _expand(allowed) == target, line
    for r in runs:
        layout, monitor = as_json(r.layout), as_json(r.monitor)
        cpus = r.point["cpus"]
        assert len(layout["target_cpus"]) == cpus
        assert _expand(as_json(r.target)["cpus_allowed"]) == layout["target_cpus"]
        assert monitor["samples"] >= 1 and len(monitor["cores"]) == os.cpu_count()
        assert monitor["target_cpu"] > 0 and r.throughput_rps > 0 and r.p99_us > 0
        assert as_json(r.result)["responses"] > 0


def _expand(cpulist: str) -> list[int]:
    out = []
    for part in cpulist.split(","):
        lo, _, hi = part.partition("-")
        out += range(int(lo), int(hi or lo) + 1)
    return out


def test_a_target_that_dies_mid_run_fails_that_run_and_is_restarted(tmp_path):
    # The target exits after 150 requests; each run makes 100: every second
    # run loses it, is stored failed, and the next run gets a new target
    # (blocked: runs share a start unless the target dies).
    text = f"""
[experiment]
calibrate = false  # the generator's ceiling is tested in test_adaptive_run
repetitions = 4
requests = 100
randomize = false
schedule = "blocked"

[target]
command = ["{PY}", "{SUPPORT / "dying_server.py"}", "{{port}}", "150"]

[load]
concurrency = 1
keep_alive = true
"""
    out, runs, _ = experiment(tmp_path, text)
    assert [r.status for r in runs] == ["ok", "failed", "ok", "failed"]
    assert (out.ok, out.failed, out.starts) == (2, 2, 2)
    for r in runs[1::2]:
        assert "the target exited with status 3 during the run" in r.error
        assert "exits after 150 requests" in r.error, "the error carries the tail of the target's output"
        assert as_json(r.result)["errors"]["connect"] > 0


def test_a_target_that_never_becomes_ready(tmp_path):
    text = """
[experiment]
calibrate = false  # the generator's ceiling is tested in test_adaptive_run
repetitions = 2
duration = "1s"

[factors]
mode = ["silent", "crash"]

[target]
command = ["sh", "-c", "echo starting {mode}; if [ {mode} = crash ]; then exit 7; fi; exec sleep 30"]
# Long enough for a shell to start and exit on a machine busy with other work.
ready_timeout = "4s"
"""
    out, runs, _ = experiment(tmp_path, text)
    assert (out.ok, out.failed, len(runs)) == (0, 4, 4)
    for r in runs:
        mode = r.point["mode"]
        why = "did not answer" if mode == "silent" else "exited with status 7 before it was ready"
        assert why in r.error and f"starting {mode}" in r.error, r.error
        assert r.result is None
    assert out.starts == 4, "a target that failed to start is tried at each round's visit, not again within it"


@pytest.mark.skipif(len(online_cpus()) < 2, reason="needs a core for the generator")
def test_fractional_cpus_get_a_quota(tmp_path):
    proof = tmp_path / "cgroup.txt"
    text = f"""
[experiment]
calibrate = false  # the generator's ceiling is tested in test_adaptive_run
repetitions = 1
duration = "0.5s"

[target]
command = ["sh", "-c", "cat /proc/self/cgroup > {proof}; exec {PY} -m corebench serve --port {{port}} --workers 1"]
cpus = 0.5

[load]
path = "/dynamic?work_us=200"
concurrency = 4
"""
    out, runs, _ = experiment(tmp_path, text)
    layout = as_json(runs[0].layout)
    assert out.ok == 1 and layout["quota_cpus"] == 0.5 and layout["target_cpus"] == [online_cpus()[0]]
    if layout["method"] == "affinity":
        pytest.skip("this machine's cgroups cannot be written")
    # The target ran inside the group that carries the quota...
    groups = proof.read_text()
    assert any(Path(g).name in groups for g in layout["groups"]), groups
    # ...and used about half a core at most (the quota), with work to spare.
    monitor = as_json(runs[0].monitor)
    assert monitor["target_cpu"] < 0.75, monitor["target_cpu"]


NGINX_CONF = """
worker_processes {{ workers }};
daemon off;
pid {{ dir }}/nginx.pid;
error_log {{ dir }}/error.log;
events { worker_connections 256; }
http {
  access_log off;
  server {
    listen 127.0.0.1:{{ port }};
    root {{ dir }};
    location = /status { stub_status; }
  }
}
"""


def test_a_real_server_with_a_configuration_rendered_per_point(tmp_path, nginx):
    # nginx (the fixture ensures it is installed), its configuration rendered
    # from a template for each level of the workers factor.
    (tmp_path / "nginx.conf.j2").write_text(NGINX_CONF)
    text = """
[experiment]
calibrate = false  # the generator's ceiling is tested in test_adaptive_run
repetitions = 1
duration = "0.5s"

[factors]
workers = [1, 2]

[target]
command = ["nginx", "-c", "{dir}/nginx.conf", "-p", "{dir}"]
files = [{ path = "nginx.conf", template = "nginx.conf.j2" }]
ready_url = "http://127.0.0.1:{port}/status"
stop_signal = "SIGQUIT"
version_command = ["nginx", "-v"]

[load]
path = "/nginx.conf"
concurrency = 2
"""
    out, runs, host = experiment(tmp_path, text)
    assert (out.ok, out.starts) == (2, 2), [r.error for r in runs]
    assert host.server_version.startswith("nginx version: nginx/")
    for r in runs:
        result = as_json(r.result)
        assert result["server_software"].startswith("nginx") and result["failed"] == 0


def test_targets_leave_nothing_behind(tmp_path):
    """A placeholder in the environment is text; a target whose leader exits
    takes its whole process group with it, ready or not."""
    marker = f".{os.getpid()}17"  # a distinct sleep length to find it by
    serve = f"exec {PY} -m corebench serve --port $PORT --workers 1"
    text = f"""
[experiment]
calibrate = false  # the generator's ceiling is tested in test_adaptive_run
repetitions = 1
duration = "0.3s"

[factors]
mode = ["serve", "die"]

[target]
command = ["sh", "-c", "sleep 300{marker} & if [ {{mode}} = die ]; then exit 5; fi; {serve}"]
env = {{ PORT = "{{port}}" }}
ready_timeout = "5s"
"""
    out, runs, _ = experiment(tmp_path, text)
    assert (out.ok, out.failed) == (1, 1), [r.error for r in runs]
    import subprocess

    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split()
    assert not left, f"stragglers left running: {left}"


def test_a_target_listens_on_the_address_asked_for(tmp_path):
    """127.0.0.2 is this machine too (all of 127/8 is), yet not the default:
    the built-in server listens there and the load goes there."""
    text = """
[experiment]
calibrate = false  # the generator's ceiling is tested in test_adaptive_run
repetitions = 1
duration = "0.3s"

[target]
builtin = { model = "async" }
address = "127.0.0.2"

[load]
concurrency = 2
"""
    out, runs, _ = experiment(tmp_path, text)
    assert (out.ok, out.failed) == (1, 0), [r.error for r in runs]
    assert as_json(runs[0].target)["base_url"].startswith("http://127.0.0.2:")
    assert as_json(runs[0].result)["address"].startswith("127.0.0.2:")


def test_a_target_on_a_non_loopback_address_needs_allow_remote(tmp_path):
    from corebench.errors import UsageError

    text = """
[target]
builtin = { model = "async" }
address = "198.51.100.7"
"""
    with pytest.raises(UsageError, match=r"plan.toml:4: target.address: .* set allow_remote = true in \[load\]"):
        experiment(tmp_path, text)


def test_fast_errors_are_never_throughput(tmp_path):
    # "shedding" answers 60% of requests with an instant 503 and the rest
    # in 4 ms; "correct" answers all in 10 ms. More responses per second
    # come from shedding, but its failures are not throughput: it is failing,
    # and the slower correct server is the best.
    text = f"""
[experiment]
calibrate = false  # the generator's ceiling is tested in test_adaptive_run
repetitions = 2
warmup = 0
duration = "1s"

[factors]
server = ["correct", "shedding"]

[target]
command = ["{PY}", "{SUPPORT / "shedding_server.py"}", "{{port}}", "{{server}}"]

[load]
concurrency = 4
keep_alive = true
"""
    ran = run_plan(tmp_path, text)
    out, runs, store = ran.out, ran.runs, ran.store
    assert out.ok == 4, [r.error for r in runs]
    from corebench.report.data import load

    d = load(store)
    by = {p.levels["server"]: p for p in d.points}
    raw = [r.throughput_rps for r in runs if r.point["server"] == "shedding"]
    # Every response counted, as ab would: the 503s more than double the figure.
    assert by["shedding"].goodput_rps.mean < min(raw) * 0.5, "goodput counts only the 200s"
    assert by["shedding"].failing and not by["correct"].failing
    assert by["shedding"].error_share > 0.5
    best = next(v for v in d.verdicts if "best throughput" in v)
    assert best.startswith("At the plan's one load, best throughput: server=correct"), d.verdicts
    assert any(v.startswith("Failing: 1 point(s) (server=shedding)") for v in d.verdicts), d.verdicts
    assert d.diagnoses[[p.levels["server"] for p in d.points].index("shedding")].kind == "failing"


def test_a_dead_url_fails_every_run_and_keeps_what_was_measured(tmp_path):
    from corebench.testing import free_port

    url = f"http://127.0.0.1:{free_port()}/"
    text = f"""
[experiment]
calibrate = false  # the generator's ceiling is tested in test_adaptive_run
repetitions = 2
warmup = 0
requests = 50

[target]
url = "{url}"

[load]
concurrency = 2
"""
    ran = run_plan(tmp_path, text)
    assert (ran.out.ok, ran.out.failed) == (0, 2)
    for r in ran.runs:
        assert r.status == "failed" and r.error.startswith("no request succeeded: 50 sent; connect: 50")
        assert as_json(r.result)["errors"]["connect"] == 50, "the measurement is kept"
    from corebench.report.data import load

    d = load(ran.store)
    assert d.verdicts[0].startswith("Failing: the plan's one point had no run that ended well"), d.verdicts
    assert "100.0% of requests failed" in d.verdicts[0] and "connect: 50" in d.verdicts[0]


def test_a_run_line_counts_unsuccessful_statuses_as_failures_not_rate():
    from corebench.runner import ran_line
    from tests.output.test_siege import _result, _summary

    total = _summary(1000, 1000, 9000, 2000.0) | {"percentiles": [{"percentile": 99.0, "value_us": 8000}]}
    mixed = _result(requests=1000, responses=1000, status={200: 700, 503: 300}, body=0, duration_s=2.0, total=total)
    assert ran_line(mixed, None) == "350 req/s, p99 8.00 ms, 300 failed"
    # A 200 whose length differs from the first is a failed request (ab's
    # rule), though its status is a success: counted as the analysis does.
    lengths = _result(
        requests=1000, responses=1000, status={200: 1000}, body=0, duration_s=2.0, total=total, length_errors=40
    )
    assert ran_line(lengths, None) == "500 req/s, p99 8.00 ms, 40 failed"
    refused = _result(requests=1000, responses=900, status={200: 900}, body=0, duration_s=2.0, total=total)
    assert ran_line(refused, "the generator shared the target's cores").endswith(
        ", 100 failed [lower bound: the generator shared the target's cores]"
    )


def test_a_factor_level_with_a_space_in_the_path_is_measured_not_a_traceback(tmp_path):
    # The engine sends the path as a URL must (a space as %20); the
    # readiness check asks the same, instead of raising on it.
    ran = run_plan(
        tmp_path,
        """
[experiment]
calibrate = false
repetitions = 1
duration = "0.3s"

[factors]
page = ["a b", "c"]

[target]
builtin = { model = "async", workers = 1 }

[load]
path = "/pages/{page}"
concurrency = 2
""",
    )
    assert (ran.out.ok, ran.out.failed) == (2, 0), [r.error for r in ran.runs]
