"""The shared-server example's CMS on its real stack (Apache prefork +
mod_php, or Apache event + a php-fpm service; PostgreSQL with the generated data set, the log's static files
written by its prepare step): every route answers as the access log's
paths need it, the view counter and comments write the database, and a
short replay of the real log through a plan succeeds."""

import os
import re
import shutil
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from corebench.plan.model import Service, Target
from corebench.targets import process, recipes, services
from corebench.targets.cpus import CpuControl
from tests.support.experiments import run_plan
from tests.support.records import as_json

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "shared-server"
LOG = EXAMPLE.parent / "data" / "apache-combined-10k.log"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="PostgreSQL runs as its own user: needs root")


def _get(url: str, data: bytes | None = None) -> tuple[int, str]:
    class Stay(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):  # the 303 itself is the answer
            return None

    opener = urllib.request.build_opener(Stay, urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, data=data, timeout=20) as r:
            return r.status, r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


# PHP in Apache's prefork children (mod_php), or in a php-fpm service behind
# the event MPM (mod_proxy_fcgi): the same pages either way.
HANDLERS = {
    "mod_php": ({"mpm": "prefork"}, {}),
    "php-fpm": (
        {"mpm": "event", "php_fcgi": "127.0.0.1:{php_port}"},
        {"php": Service(recipe="php-fpm", settings={"max_children": 4}, after=["db"])},
    ),
}


@pytest.fixture(scope="module", params=list(HANDLERS))
def cms(request):
    web_settings, more = HANDLERS[request.param]
    run_dir = Path(tempfile.mkdtemp(prefix="corebench-test-"))
    os.chmod(run_dir, 0o755)
    db = Service(recipe="postgresql", settings={"init_sql": "cms/schema.sql", "init_vars": {"articles": 500}})
    stack = {"db": db, **more}
    layout = CpuControl().layout(None, dict.fromkeys(stack))
    started = services.start_all(stack, {}, layout, EXAMPLE, run_dir)
    t = Target(
        recipe="apache",
        settings={
            **web_settings,
            "max_request_workers": 8,
            "php_app": "cms/htdocs",
            "php_front": "/index.php",
            "php_env": {"DB_PORT": "{db_port}"},
        },
        prepare=["python3", "cms/assets.py", str(LOG), "{dir}/htdocs"],
    )
    try:
        web = process.start(t, services.values_of(started), layout, EXAMPLE, run_dir, "/")
        try:
            yield web.base_url.rstrip("/")
        finally:
            process.stop(web.proc, recipes.expand(t))
    finally:
        services.stop_all(started)
        CpuControl.release(layout)
        shutil.rmtree(run_dir, ignore_errors=True)


def test_every_route_of_the_log(cms):
    status, page = _get(cms + "/")
    assert status == 200 and page.count("<article>") == 10 and "Article 500" in page
    assert _get(cms + "/blog/page/3")[0] == 200
    status, page = _get(cms + "/blog/tags/puppet?flav=rss20")
    assert status == 200 and "<h1>puppet</h1>" in page and "<li>" in page
    assert "<h1>" in _get(cms + "/projects/xdotool/")[1]
    status, page = _get(cms + "/?s=Article+12")
    assert status == 200 and re.search(r"<h1>\d+ found</h1>", page) and "Article 12" in page
    status, page = _get(cms + "/about")
    assert status == 404 and "Not found" in page
    # A static file of the log, served by Apache with the size the log recorded.
    css = next(line for line in LOG.read_text().splitlines() if '"GET /style2.css HTTP/1.1" 200 ' in line)
    size = int(css.split('" 200 ')[1].split()[0])
    status, body = _get(cms + "/style2.css")
    assert status == 200 and len(body) == size


def test_views_and_comments_write_the_database(cms):
    path = "/articles/ssh-security/"
    views = [int(re.search(r"read (\d+) times", _get(cms + path)[1]).group(1)) for _ in range(2)]
    assert views[1] == views[0] + 1
    status, _ = _get(cms + path, data=b"first!")
    assert status == 303
    assert "first! (visitor," in _get(cms + path)[1]


def test_the_quick_plan_replays_the_log_against_it(tmp_path):
    text = (EXAMPLE / "cms-quick.toml").read_text()
    text = re.sub(r"(?m)^(buffers|fs|opcache) = .*$", "", text)
    text = text.replace("repetitions = 2", "repetitions = 1").replace('warmup = "2s"', "warmup = 0")
    text = text.replace('duration = "5s"', 'duration = "1s"\ncalibrate = false')
    text = text.replace("{buffers}", "16MB").replace("{fs}", "ext4-ordered").replace('"{opcache}"', "true")
    text = text.replace("articles = 20000", "articles = 2000")
    for rel in ("cms", "../data"):
        text = text.replace(f'"{rel}/', f'"{(EXAMPLE / rel).resolve()}/')
    ran = run_plan(tmp_path, text)
    assert (ran.out.ok, ran.out.failed) == (1, 0), [r.error for r in ran.runs if r.error]
    result = as_json(ran.runs[0].result)
    assert result["failed"] == 0 and result["status_counts"].get("200", 0) > 0.5 * result["responses"], result
    monitor = as_json(ran.runs[0].monitor)
    assert monitor["services"]["db"]["cpu"] > 0 and monitor["disk_devices"]
