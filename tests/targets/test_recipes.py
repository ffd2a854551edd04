"""The ready recipes against the real servers from the Debian packages:
Apache httpd with each MPM and nginx, a short plan each that runs, stores
and reports; the system's own instances are never touched."""

import os
import re
import shutil
import subprocess
import tempfile
import urllib.request
from pathlib import Path

import pytest

from corebench import report
from corebench.plan.model import Target
from corebench.targets import process, recipes
from tests.conftest import run_cli
from tests.support.experiments import run_plan
from tests.support.records import as_json

APP = Path(__file__).resolve().parents[2] / "examples" / "cores-worth-it" / "wsgi"


def experiment(tmp_path, text):
    ran = run_plan(tmp_path, text)
    return ran.out, ran.runs, ran.host


def servers_running(name: str) -> int:
    return subprocess.run(["pgrep", "-c", "-x", name], capture_output=True, text=True).stdout.strip() or "0"


def test_apache_prefork_worker_event(tmp_path):
    before = servers_running("apache2")
    text = """
[experiment]
calibrate = false  # the generator's ceiling is tested in test_adaptive_run
repetitions = 2
warmup = 1
duration = "0.5s"

[factors]
mpm = ["prefork", "worker", "event"]
concurrency = [4, 16]

[target]
recipe = "apache"
settings = { mpm = "{mpm}", max_request_workers = 32, threads_per_child = 8 }
pages = [44]

[load]
path = "/44.html"
concurrency = "{concurrency}"
"""
    out, runs, host = experiment(tmp_path, text)
    # Interleaved: 2 rounds, each starting the 3 MPMs afresh and warming each up once.
    assert (out.ok, out.failed, out.starts) == (18, 0, 6), [r.error for r in runs if r.error]
    assert host.server_version.startswith("Server version: Apache/2.4")
    for r in runs:
        result = as_json(r.result)
        assert result["server_software"].startswith("Apache") and result["document_length"] == 44
        assert result["failed"] == 0 and as_json(r.target)["kind"] == "apache"
    assert servers_running("apache2") == before, "no Apache left running"
    html = tmp_path / "report.html"
    p = run_cli("report", str(tmp_path / "store.sqlite"), "-o", str(html))
    assert p.returncode == 0 and "mpm=prefork" in html.read_text()


def test_nginx_worker_processes(tmp_path):
    text = """
[experiment]
calibrate = false  # the generator's ceiling is tested in test_adaptive_run
repetitions = 1
duration = "0.5s"

[factors]
workers = [1, 2]

[target]
recipe = "nginx"
settings = { worker_processes = "{workers}" }
pages = [2048]
address = "127.0.0.3"

[load]
path = "/2048.html"
concurrency = 8
"""
    out, runs, host = experiment(tmp_path, text)
    assert (out.ok, out.starts) == (2, 2), [r.error for r in runs]
    assert host.server_version.startswith("nginx version")
    assert all(as_json(r.result)["document_length"] == 2048 for r in runs)
    assert all(as_json(r.result)["address"].startswith("127.0.0.3:") for r in runs)
    d = report.load(tmp_path / "store.sqlite")
    assert len(d.points) == 2 and d.verdicts


def test_a_bad_recipe_setting_fails_before_any_run(tmp_path):
    plan = tmp_path / "plan.toml"
    plan.write_text('[target]\nrecipe = "apache"\nsettings = { mpm = "threaded" }\n')
    p = run_cli("run", str(plan), "--store", str(tmp_path / "s.sqlite"))
    assert (
        p.returncode == 2
        and "plan.toml:3: target.settings: mpm 'threaded' is not one of prefork, worker, event" in p.stderr
    )


def test_apache_mod_wsgi_serves_the_framework_page(tmp_path, layout):
    """The first field report's page on Apache + mod_wsgi, in embedded and
    daemon mode: the page comes through the route, the controller (the
    time) and the layout, and every request of a run succeeds."""
    before = servers_running("apache2")
    t = Target(recipe="apache", settings={"mpm": "prefork", "max_request_workers": 4, "wsgi_app": str(APP)})
    # A folder Apache's children (www-data) can reach, as the runner's is.
    run_dir = Path(tempfile.mkdtemp(prefix="corebench-test-"))
    os.chmod(run_dir, 0o755)
    started = process.start(t, {}, layout, tmp_path, run_dir / "direct", "/app/")
    try:
        with urllib.request.urlopen(started.base_url + "app/", timeout=10) as r:
            page = r.read().decode()
    finally:
        process.stop(started.proc, recipes.expand(t))
        shutil.rmtree(run_dir)
    assert "<p>Autohandler called</p>" in page and re.search(r"The time here is \d{4}-\d\d-\d\d \d\d:", page), page
    text = f"""
[experiment]
calibrate = false
repetitions = 1
duration = "0.5s"

[factors]
mode = ["embedded", "daemon"]

[target]
recipe = "apache"
settings = {{ mpm = "prefork", max_request_workers = 8, wsgi_app = "{APP}", wsgi_mode = "{{mode}}" }}

[load]
path = "/app/"
concurrency = 4
"""
    out, runs, _ = experiment(tmp_path, text)
    assert (out.ok, out.failed) == (2, 0), [r.error for r in runs if r.error]
    for r in runs:
        result = as_json(r.result)
        assert result["failed"] == 0 and result["responses"] > 0, result["error_samples"]
        assert result["document_length"] == len(page.encode())
    assert servers_running("apache2") == before, "no Apache left running"


def test_a_wsgi_app_that_is_not_there_fails_its_start_in_one_line(tmp_path, layout):
    t = Target(recipe="apache", settings={"wsgi_app": "nowhere"})
    with pytest.raises(process.TargetError, match="recipe apache: wsgi_app: no app.wsgi in"):
        process.start(t, {}, layout, tmp_path, tmp_path / "t", "/app/")


@pytest.mark.parametrize(
    ("recipe", "settings", "server"),
    [("nginx", "{ http2 = true }", "nginx"), ("apache", '{ mpm = "event", http2 = true }', "Apache")],
)
def test_recipes_serve_http2_when_asked(tmp_path, recipe, settings, server):
    text = f"""
[experiment]
calibrate = false
repetitions = 1
duration = "0.5s"

[factors]
streams = [1, 8]

[target]
recipe = "{recipe}"
settings = {settings}
pages = [2048]

[load]
path = "/2048.html"
http = "2"
concurrency = 4
streams = "{{streams}}"
"""
    out, runs, _ = experiment(tmp_path, text)
    assert (out.ok, out.failed) == (2, 0), [r.error for r in runs]
    for r in runs:
        result = as_json(r.result)
        assert result["http_version"] == "2" and result["failed"] == 0, result["error_samples"]
        assert result["server_software"].startswith(server) and result["document_length"] == 2048
        assert result["http2"]["connections"] >= 4 and result["http2"]["peak_streams"] == result["streams"]


def test_apache_http2_refuses_prefork_in_one_line(tmp_path):
    t = Target(recipe="apache", settings={"mpm": "prefork", "http2": True})
    with pytest.raises(recipes.RecipeError, match="mod_http2.*prefork"):
        recipes.settings(t)
