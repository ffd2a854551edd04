"""A target made of several processes on the real parts: PostgreSQL (Debian's
postgresql, a fresh cluster per start, run as the postgres user) as a
service of Apache httpd with mod_php and php-pgsql; shared_buffers as a
factor, the database on a loop-mounted image, the data set loaded per
start, each process's CPU monitored apart; a stack that fails to start
fails its runs with the reason and leaves nothing running or mounted."""

import json
import os
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

from corebench.plan.model import Service, Target, order
from corebench.report import charts
from corebench.report.data import load
from corebench.report.html import Html
from corebench.targets import filesystem, process, recipes, services
from corebench.targets.cpus import CpuControl
from tests.conftest import CLI, run_cli
from tests.support.experiments import run_plan
from tests.support.records import as_json

DATA = Path(__file__).resolve().parents[1] / "data" / "stack"

PLAN = """
[experiment]
calibrate = false
repetitions = 1
duration = "0.5s"

[factors]
buffers = BUFFERS

[target]
recipe = "apache"
settings = { mpm = "prefork", max_request_workers = 8, php_app = "DATA/php", php_env = { DB_PORT = "{db_port}" } }
filesystem = { type = "ext4-ordered", size = "256MB" }

[target.services.db]
recipe = "postgresql"
settings = { shared_buffers = "{buffers}", fsync = "off", init_sql = "DATA/init.sql" }

[load]
path = "/index.php"
concurrency = 2
""".replace("DATA", str(DATA))


def _plan(buffers: str) -> str:
    return PLAN.replace("BUFFERS", buffers)


pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="PostgreSQL runs as its own user: needs root")


def _running(name: str) -> int:
    return int(subprocess.run(["pgrep", "-c", "-x", name], capture_output=True, text=True).stdout.strip() or 0)


@pytest.fixture(autouse=True)
def nothing_left():
    before = (_running("postgres"), _running("apache2"))
    yield
    assert (_running("postgres"), _running("apache2")) == before, "a process of the stack outlived it"
    assert not [left for left in filesystem.leftovers() if filesystem.owner(Path(left["image"])) is None]


def test_services_start_in_the_order_of_after():
    db = Service(recipe="postgresql")
    cache = Service(command=["memcached"], after=["db"])
    web = Service(command=["x"], after=["cache", "db"])
    assert order({"web": web, "cache": cache, "db": db}) == ["db", "cache", "web"]
    with pytest.raises(ValueError, match="wait for each other"):
        Target(
            recipe="apache",
            services={"a": Service(command=["a"], after=["b"]), "b": Service(command=["b"], after=["a"])},
        )


def test_php_on_postgresql_per_shared_buffers_level(tmp_path):
    ran = run_plan(tmp_path, _plan('["8MB", "28MB"]'))
    assert (ran.out.ok, ran.out.failed) == (2, 0), [r.error for r in ran.runs if r.error]
    for run in ran.runs:
        levels, target = run.point, as_json(run.target)
        db = target["services"]["db"]
        assert db["kind"] == "postgresql" and f"shared_buffers={levels['buffers']}" in db["argv"]
        assert target["filesystem"]["kernel_type"] == "ext4"
        result = as_json(run.result)
        assert result["failed"] == 0 and result["responses"] > 0, result["error_samples"]
        # The page's length is that of "articles=250 shared_buffers=8MB\n" (or 28MB): the data loaded.
        assert result["document_length"] == len(f"articles=250 shared_buffers={levels['buffers']}\n")
        monitor = as_json(run.monitor)
        assert monitor["services"]["db"]["cpu"] > 0 and monitor["target_cpu"] > 0, monitor["services"]
        assert 0 <= monitor["services"]["db"]["system_share"] <= 1
        if as_json(run.layout)["accounting"]:  # each measured by a cgroup of its own
            assert 0 <= monitor["services"]["db"]["io_wait"] <= 1 and monitor["target_io_wait"] is not None
    # The report: each process at each point, and a chart of their CPU.
    d = load(ran.store)
    assert sorted({(r.point, r.process) for r in d.processes}) == [
        (f"buffers={b}", name) for b in ("28MB", "8MB") for name in ("db", "target")
    ]
    assert all(r.system_share is not None and r.user_cpu + r.system_cpu > 0 for r in d.processes)
    assert "<th>I/O wait</th>" in Html().render(d)
    assert "db system" in dict(charts.all_charts(d))["CPU by process"]


def test_a_stack_whose_database_fails_fails_its_runs_and_leaves_nothing(tmp_path):
    ran = run_plan(tmp_path, _plan('["lots"]'))
    assert (ran.out.ok, ran.out.failed) == (0, 1)
    error = ran.runs[0].error
    assert error.startswith("target not started: service db exited with status"), error
    assert 'invalid value for parameter "shared_buffers": "lots"' in error, error


def test_the_page_answers_through_the_stack(tmp_path, layout):
    """The same stack started by hand: the page reads the loaded rows."""
    run_dir = Path(tempfile.mkdtemp(prefix="corebench-test-"))
    os.chmod(run_dir, 0o755)
    db = Service(recipe="postgresql", settings={"init_sql": str(DATA / "init.sql"), "shared_buffers": "16MB"})
    started = services.start_all({"db": db}, {}, layout, tmp_path, run_dir)
    try:
        t = Target(
            recipe="apache",
            settings={"mpm": "prefork", "php_app": str(DATA / "php"), "php_env": {"DB_PORT": "{db_port}"}},
        )
        web = process.start(t, services.values_of(started), layout, tmp_path, run_dir, "/index.php")
        try:
            with urllib.request.urlopen(web.base_url + "index.php", timeout=10) as r:
                assert r.read().decode() == "articles=250 shared_buffers=16MB\n"
        finally:
            process.stop(web.proc, recipes.expand(t))
    finally:
        services.stop_all(started)
        subprocess.run(["rm", "-rf", str(run_dir)], check=False)


def test_a_command_service_with_its_own_rendered_file(tmp_path, layout):
    """A service's files are jinja2 templates rendered into its folder with
    its own {port} and the plan's factors; a factor used only there still
    restarts the stack when it changes, and the plan is stored whole."""
    text = """
[experiment]
calibrate = false
repetitions = 1
duration = "0.2s"

[factors]
level = [1, 2]

[target]
builtin = { model = "async", workers = 1 }

[target.services.files]
command = ["python3", "-m", "http.server", "{port}", "--bind", "127.0.0.1", "--directory", "{dir}"]
files = [{ path = "level.txt", content = "level {{ level }} on {{ port }}\\n" }]

[load]
path = "/static/10"
concurrency = 1
"""
    ran = run_plan(tmp_path, text)
    assert (ran.out.ok, ran.out.starts) == (2, 2), [r.error for r in ran.runs if r.error]
    ports = {r.point["level"]: as_json(r.target)["services"]["files"]["port"] for r in ran.runs}
    assert len(set(ports.values())) == 2
    from corebench.store import Store

    s = Store(ran.store, read_only=True)
    try:
        plan = s.experiment(ran.out.experiment_id).plan.model_dump()
    finally:
        s.close()
    assert plan["plan"]["target"]["services"]["files"]["files"][0]["path"] == "level.txt"
    # Started by hand: the file as the service serves it.
    svc = Service(
        command=["python3", "-m", "http.server", "{port}", "--bind", "127.0.0.1", "--directory", "{dir}"],
        files=[{"path": "level.txt", "content": "level {{ level }} on {{ port }}\n"}],
    )
    started = services.start_all({"files": svc}, {"level": 7}, layout, tmp_path, tmp_path / "run")
    try:
        port = started[0].port
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/level.txt", timeout=10) as r:
            assert r.read().decode() == f"level 7 on {port}\n"
    finally:
        services.stop_all(started)


def test_cleanup_stops_the_stack_a_killed_corebench_left(tmp_path):
    plan = tmp_path / "plan.toml"
    text = _plan('["8MB"]').replace('duration = "0.5s"', 'duration = "60s"')
    plan.write_text(text.replace('filesystem = { type = "ext4-ordered", size = "256MB" }\n', ""))
    before = _running("postgres")
    proc = subprocess.Popen([*CLI, "run", str(plan), "--store", str(tmp_path / "s.sqlite"), "-q"])
    deadline = time.monotonic() + 90
    while _running("postgres") <= before or _running("apache2") == 0:
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.1)
    time.sleep(1)
    proc.kill()  # no cleanup of its own: PostgreSQL and Apache stay
    proc.wait()
    work = filesystem.dead_work_dirs()
    assert work and _running("postgres") > before
    r = run_cli("cleanup")
    assert r.returncode == 0 and "Stopped the processes a killed corebench started in" in r.stdout, r.stdout + r.stderr
    deadline = time.monotonic() + 10
    while _running("postgres") > before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(d.exists() for d in work)


SPIN = "import socket, sys, time\ns = socket.create_server(('127.0.0.1', int(sys.argv[1])))\nwhile True: pass"


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="a service with a core of its own needs 2 cores")
def test_a_service_on_a_core_of_its_own_is_measured_apart(tmp_path):
    """cpus = 1 for the target, cpus = 1 for a spinning service: each on its
    own core, as the kernel reports it, and each process's CPU from its own
    cgroup: the service's core busy, the target's not."""
    text = f"""
[experiment]
calibrate = false
repetitions = 1
duration = "1s"

[target]
builtin = {{ model = "async", workers = 1 }}
cpus = 1

[target.services.spin]
command = ["python3", "-c", {json.dumps(SPIN)}, "{{port}}"]
cpus = 1

[load]
model = "rate"
path = "/static/10"
rate = 50
"""
    ran = run_plan(tmp_path, text)
    assert ran.out.ok == 1, [r.error for r in ran.runs if r.error]
    run = ran.runs[-1]
    layout, target = as_json(run.layout), as_json(run.target)
    first, second = sorted(os.sched_getaffinity(0))[:2]
    assert layout["target_cpus"] == [first] and layout["services"]["spin"]["target_cpus"] == [second]
    assert target["cpus_allowed"] == str(first) and target["services"]["spin"]["cpus_allowed"] == str(second)
    monitor = as_json(run.monitor)
    spin = monitor["services"]["spin"]
    assert spin["cpu"] > 0.6 and monitor["target_cpu"] < 0.4, (spin, monitor["target_cpu"])
    if layout["accounting"]:
        assert spin["io_wait"] is not None and monitor["target_io_wait"] is not None


def test_services_need_the_cores_they_ask_for():
    with pytest.raises(ValueError, match="give the target cpus too"):
        Target(builtin={"model": "async"}, services={"db": Service(recipe="postgresql", cpus=1)})
    online = sorted(os.sched_getaffinity(0))
    with pytest.raises(ValueError, match=f"need {len(online) + 1} cores; this machine lets corebench use"):
        CpuControl().layout(len(online), {"db": 1})
