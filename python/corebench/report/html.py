"""`corebench report STORE -o report.html`: one self-contained file that
works offline. Every string from a plan, a log or a server is escaped by
jinja2's autoescaping; data for the page's one script travels as JSON in a
non-executable script element."""

from __future__ import annotations

import base64
import json
import math
import time

import jinja2
from markupsafe import Markup

from corebench.analysis.baseline import server_speedup
from corebench.analysis.scaling import METHOD
from corebench.analysis.scaling_model import ALPHA
from corebench.analysis.stats import p_is
from corebench.report import charts, table
from corebench.report.data import RESPONSES, ReportData
from corebench.result import LoadResult, TimelineSecond

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("corebench.report", "templates"), autoescape=True, undefined=jinja2.StrictUndefined
)


def _fmt(x: float | None, digits: int = 0) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if isinstance(x, float) and math.isinf(x):
        return "∞"  # an interval open to that side
    return f"{x:,.{digits}f}"


_ENV.filters["num"] = _fmt
_ENV.globals["server_speedup"] = server_speedup
_ENV.globals["p_is"] = p_is


def _script_json(value: object) -> str:
    # Inside <script type="application/json">, "</script>" would end the
    # element: escape <, > and & as JSON \\u escapes.
    return json.dumps(value).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _timelines(d: ReportData) -> dict[str, dict[str, object]]:
    out: dict[str, dict[str, object]] = {}
    for r in d.runs:
        if r.result is None:
            continue
        rep = "warm-up" if r.warmup else f"rep {r.repetition}"
        out[str(r.id)] = {
            "label": f"run {r.seq}: {r.label()} {rep}",
            "t": [[s.second, s.completed, s.p99_us] for s in _whole_seconds(r.result)],
        }
    return out


def _whole_seconds(result: LoadResult) -> list[TimelineSecond]:
    """A partial last second would read as a drop in throughput: left out,
    unless the run was shorter than a second."""
    seconds = result.timeline
    whole = int(result.duration_s + 1e-6)
    return [s for s in seconds if s.second < whole] if whole >= 1 else seconds


def _data_uri(text: str, mime: str) -> str:
    return f"data:{mime};base64,{base64.b64encode(text.encode()).decode()}"


class Html:
    name = "html"

    def render(self, d: ReportData) -> str:
        return _ENV.get_template("report.html.j2").render(
            d=d,
            charts=[(title, Markup(svg)) for title, svg in charts.all_charts(d)],
            fit_method=METHOD,
            responses=RESPONSES,
            anova_scope=d.anova_scope,
            fit_alpha=ALPHA,
            diagnosed=list(zip(d.points, d.diagnoses, strict=True)),
            timelines=Markup(_script_json(_timelines(d))),
            csv_uri=_data_uri(table.to_csv(d), "text/csv"),
            json_uri=_data_uri(table.to_json(d), "application/json"),
            plan_text=d.experiment.plan_toml,
            host=d.host.shown(),
            created=time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(d.experiment.created_unix)),
            generated=time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        )
