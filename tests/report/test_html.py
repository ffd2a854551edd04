"""The HTML report in a real browser (Debian's chromium, headless): no
console errors, every chart drawn, the page's script ran, and nothing
planted in a plan, a target's output or a header executes."""

import json
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from corebench import report
from tests.conftest import run_cli
from tests.support.experiments import run_plan
from tests.support.records import load_result

PY = sys.executable
OUT = Path(__file__).resolve().parents[2] / "out" / "test-report"
# Each payload, if it ran, would mark the page's body.
SCRIPT = "<script>document.body.setAttribute('data-pwned','script')</script>"
ATTR = "\" onload=\"document.body.setAttribute('data-pwned','attr')\" x=\""
IMG = "<img src=x onerror=\"document.body.setAttribute('data-pwned','img')\">"
# The target's script: a label other than ok fails its points at concurrency 4, printing the label.
TARGET_SH = (
    'if [ \\"$LABEL\\" != ok ] && [ {concurrency} = 4 ]; then echo \\"$LABEL\\"; exit 3; fi; '
    f"exec {PY} -m corebench serve --port {{port}} --workers {{cpus}}"
)

PLAN = f"""
[experiment]
calibrate = false  # the generator's ceiling is tested in test_adaptive_run
name = "cores {SCRIPT.replace('"', "")}"
repetitions = 2
warmup = 0
duration = "0.3s"

[factors]
cpus = [1, 2]
concurrency = [1, 2, 4]
label = ["ok", {json.dumps(ATTR)}, {json.dumps(IMG)}]

[target]
command = ["sh", "-c", "{TARGET_SH}"]
env = {{ LABEL = "{{label}}" }}
restart = "point"

[load]
path = "/dynamic?work_us=50"
concurrency = "{{concurrency}}"
headers = {{ X-Label = "{{label}}" }}
"""


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    ran = run_plan(tmp_path_factory.mktemp("report"), PLAN)
    assert ran.out.ok > 0 and ran.out.failed > 0, "some points fail on purpose: their errors carry payloads"
    return ran.store


class Tags(HTMLParser):
    """The elements and event-handler attributes of a serialized DOM."""

    def __init__(self):
        super().__init__()
        self.names, self.handlers, self.body_attrs, self.scripts = set(), [], [], 0

    def handle_starttag(self, tag, attrs):
        self.names.add(tag)
        self.scripts += tag == "script"
        self.handlers += [(tag, k) for k, _ in attrs if k.startswith("on")]
        if tag == "body":
            self.body_attrs = attrs


def chromium(*args: str) -> subprocess.CompletedProcess:
    exe = shutil.which("chromium")
    assert exe, "chromium is installed by scripts/install-system-deps"
    return subprocess.run(
        [exe, "--headless", "--no-sandbox", "--disable-gpu", *args], capture_output=True, text=True, timeout=120
    )


# Measures the laid-out page from inside the browser, into the DOM it dumps.
PROBE = """<script>
window.addEventListener("load", function () {
  var td = document.querySelector("#points td.notes");
  document.body.setAttribute("data-notes-px", td ? td.getBoundingClientRect().width : -1);
});
</script>"""


def test_report_in_a_real_browser(store, tmp_path):
    html = tmp_path / "report.html"
    p = run_cli("report", str(store), "-o", str(html), timeout=120)
    assert p.returncode == 0, p.stderr
    text = html.read_text()
    assert "CPUs: target (cores, nodes) | generator" in text and '<td class="l">0 (1 core, node 0) | 1</td>' in text
    fetched = re.findall(r'(?:src|href)\s*=\s*"(?:https?:)?//|url\(\s*["\']?(?:https?:)?//|@import', text)
    assert not fetched, "nothing is fetched from elsewhere"
    dom_run = chromium("--enable-logging=stderr", "--v=0", "--virtual-time-budget=3000", "--dump-dom", html.as_uri())
    dom = dom_run.stdout
    console = [line for line in dom_run.stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]
    assert not console, console
    # Every chart is there and drawn.
    figures = re.findall(r'<figure class="chart".*?</figure>', dom, re.S)
    assert len(figures) >= 6, len(figures)
    for fig in figures:
        assert "<svg" in fig and len(re.findall(r"<(path|use|rect)\b", fig)) >= 3, fig[:200]
    # The page's script ran: the run selector is filled and a timeline drawn.
    assert dom.count("<option ") >= 10 and "<polyline" in dom
    # No payload ran or became markup: the browser's own DOM has no planted
    # element or handler, and the body is unmarked.
    tags = Tags()
    tags.feed(dom)
    assert "img" not in tags.names and not tags.handlers, (tags.handlers, "img" in tags.names)
    assert not any(k == "data-pwned" for k, _ in tags.body_attrs), tags.body_attrs
    assert tags.scripts == 2, "the page's own two script elements, no more"
    assert "&lt;script&gt;" in dom, "the payloads are shown, as text"
    # Log axes are labelled in plain numbers: mathtext would show raw.
    assert "mathdefault" not in text
    # The run timeline has its axes, and counts whole seconds.
    timeline = dom[dom.index('<div id="timeline">') :]
    timeline = timeline[: timeline.index("</svg>")]
    assert timeline.count("<line") >= 4 and "seconds into the run" in timeline and " s shown" in timeline
    # Laid out at 1200 px, the Points table's notes column is readable (it
    # was a few characters wide, each row a screen tall).
    probe = tmp_path / "probe.html"
    probe.write_text(text.replace("</body>", PROBE + "</body>"))
    laid = chromium("--window-size=1200,3000", "--virtual-time-budget=3000", "--dump-dom", probe.as_uri()).stdout
    notes = re.search(r'data-notes-px="([\d.]+)"', laid)
    assert notes and float(notes.group(1)) >= 300, notes
    shot = tmp_path / "report.png"
    chromium("--window-size=1200,5000", f"--screenshot={shot}", html.as_uri())
    assert shot.stat().st_size > 50_000
    import matplotlib.image

    pixels = matplotlib.image.imread(shot)
    assert pixels.std() > 0.05, "the screenshot is not blank"
    OUT.mkdir(parents=True, exist_ok=True)
    shutil.copy(shot, OUT / "report.png")


def test_markdown_and_exports(store, tmp_path):
    md = run_cli("report", str(store), "--format", "md")
    assert md.returncode == 0 and md.stdout.startswith("# cores") and "## Points" in md.stdout
    js = run_cli("report", str(store), "--format", "json")
    assert js.returncode == 0, js.stderr
    found = json.loads(js.stdout)["findings"]
    assert [f["sentence"] for f in found] == report.load(store).verdicts
    assert any(f["kind"] == "verdict" and f["outcome"] for f in found), "the comparisons carry their outcome"
    import csv
    import io

    rows = list(csv.reader(io.StringIO(run_cli("export", str(store), "--csv").stdout)))
    assert rows[0][:3] == ["cpus", "concurrency", "label"] and "throughput_rps" in rows[0]
    data = json.loads(run_cli("export", str(store), "--json").stdout)
    assert len(data["runs"]) == len(rows) - 1 == 36
    p = run_cli("export", str(store))
    assert p.returncode == 2 and "--csv" in p.stderr


def test_compare_two_levels_and_two_stores(store):
    p = run_cli("compare", str(store), "cpus=1", "cpus=2")
    assert p.returncode == 0, p.stderr
    assert "Welch" in p.stdout and "req/s" in p.stdout and "p99 ms" in p.stdout
    same = run_cli("compare", str(store), str(store), "--fail-if-slower", "5%")
    assert same.returncode == 0 and ("≈ within ±5% (p " in same.stdout or "~ could detect" in same.stdout), same.stdout
    assert "Bonferroni-adjusted" in same.stdout and "gate --fail-if-slower 5%: no point failed it" in same.stdout
    bad = run_cli("compare", str(store), str(store), "--fail-if-slower", "5")
    assert bad.returncode == 2 and "give a share of throughput, like 5%" in bad.stderr


def test_the_regression_gate_needs_significance_and_margin():
    from corebench.report.compare import Row, Table, _adjust

    def row(label, a, b):
        from corebench.analysis.effect import effect

        return Row(label, "req/s", "{:,.0f}", a, b, effect(a, b))

    rows = _adjust(
        [
            row("slower by 20%", [1000, 1010, 990, 1005], [800, 805, 795, 802]),
            row("slower by 2%", [1000, 1001, 999, 1000], [980, 981, 979, 980]),
            row("noisy, maybe slower", [1000, 1300, 700, 1000], [800, 1100, 600, 900]),
        ]
    )
    assert [r.label for r in Table("t", rows).slower(0.05)] == ["slower by 20%"]


def test_report_data_verdicts_and_diagnosis(store):
    d = report.load(store)
    assert d.verdicts and any("CPUs" in v for v in d.verdicts)
    # Each configuration factor's levels against its first, configuration by
    # configuration; concurrency sets the load, so it is not one of them.
    effect = next(v for v in d.verdicts if v.startswith("label="))
    assert "matched comparison" in effect
    assert any(v.startswith("Comparisons: ") and "Welch" in v and "Bonferroni" in v for v in d.verdicts)
    assert not any(v.startswith("concurrency=") for v in d.verdicts)
    kinds = {dg.kind for dg in d.diagnoses}
    assert "failing" in kinds, kinds


def test_report_errors(tmp_path):
    p = run_cli("report", str(tmp_path / "none.sqlite"))
    assert p.returncode == 2 and "no such store" in p.stderr
    p = run_cli("report", str(tmp_path / "x.sqlite"), "--format", "pdf")
    assert p.returncode == 2 and "--format" in p.stderr


def test_prices_and_latency_target(store):
    from corebench.analysis.slo import parse_slo
    from corebench.analysis.verdict import cost_per_million, verdicts

    d = report.load(store)
    prices = {"cpus": {"1": 0.05, "2": 0.10}}
    lines = verdicts(d.points, prices, parse_slo("p99<1s"))
    cheapest = next(
        v for v in lines if v.startswith("At the plan's one load, lowest cost per request at mean throughput")
    )
    ok = [p for p in d.points if p.measured]
    best = min(ok, key=lambda p: cost_per_million(p, prices["cpus"][str(p.levels["cpus"])]))
    assert best.label() in cheapest
    assert any(v.startswith("At the plan's one load, lowest cost shown to meet p99 < 1000 ms") for v in lines), lines
    said = verdicts(d.points, prices, parse_slo("p99<1us"))
    assert (
        "At the plan's one load, no configuration is shown to meet p99 < 0.001 ms (its one-sided 95% bound within it)."
        in said
    )


def test_report_does_not_touch_a_file_that_is_not_a_store(tmp_path):
    import sqlite3

    other = tmp_path / "other.db"
    db = sqlite3.connect(other)
    db.execute("CREATE TABLE t (x)")
    db.commit()
    db.close()
    before = other.read_bytes()
    p = run_cli("report", str(other))
    assert p.returncode == 2 and "not a corebench store" in p.stderr
    assert other.read_bytes() == before and not (tmp_path / "other.db-wal").exists()


def test_charts_a_reader_can_trust(store):
    from corebench.report import charts, html

    d = report.load(store)
    titles = dict(charts.all_charts(d))
    assert "Latency distribution" in titles and "p99" in titles["Latency distribution"]
    # Two cpus levels: categories, not a numeric axis that invents cpus=1.5
    # (the x axis only: a y tick may well read 1.5).
    for title in ("Throughput by cpus", "Efficiency"):
        svg = titles[title]
        x_axis = svg[svg.index('id="matplotlib.axis_1"') : svg.index('id="matplotlib.axis_2"')]
        assert re.findall(r">([^<>]+)</text>", x_axis)[:2] == ["1", "2"], title
    timeline = [{"second": s, "completed": 100, "errors": 0, "p50_us": 1, "p99_us": 1} for s in range(3)]
    assert [s.second for s in html._whole_seconds(load_result(duration_s=2.4, timeline=timeline))] == [0, 1]
    one = load_result(duration_s=0.3, timeline=timeline[:1])
    assert len(html._whole_seconds(one)) == 1, "a short run keeps its one"


def test_log_axes_and_run_to_run_variability_say_what_they_show(store):
    import dataclasses

    import matplotlib.pyplot as plt

    from corebench.report import charts

    fig, ax = plt.subplots()
    ax.plot([1, 10, 100], [1, 100, 10_000])
    ax.set_yscale("log")
    charts._plain_log(ax.yaxis)
    svg = charts._svg(fig)
    assert "mathdefault" not in svg and ">1000<" in svg.replace(" ", "")
    d = report.load(store)
    shown = charts.variability(d)
    assert shown is not None and "Run-to-run variability of throughput" in shown
    # Capacity searches have no run-to-run throughput of their own: no chart
    # of empty bars.
    searched = dataclasses.replace(d, points=[dataclasses.replace(p, searched=True) for p in d.points])
    assert charts.variability(searched) is None
