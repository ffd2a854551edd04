"""The capacity search's HTML report: the answer, latency against offered
rate with the objective's bounds, achieved against offered rate, and every
step. Self-contained like the experiment report (inline SVG, no scripts)."""

from __future__ import annotations

import jinja2
import matplotlib.pyplot as plt
from markupsafe import Markup

from corebench.plan.objective import parse_objective
from corebench.report import charts
from corebench.store import Capacity

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("corebench.report", "templates"), autoescape=True, undefined=jinja2.StrictUndefined
)


def latency_chart(c: Capacity) -> str:
    """Each bounded percentile against the offered rate: met steps filled,
    missed hollow, the bounds dashed, the bracket shaded."""
    fig, ax = plt.subplots()
    bounds = list(parse_objective(c.objective).latency) if c.steps else []
    for i, t in enumerate(bounds):
        color = f"C{i}"
        pts = sorted((s.rate_rps, s.measured[t.metric] / 1000, s.meets) for s in c.steps)
        ax.plot([x for x, _, _ in pts], [y for _, y, _ in pts], color=color, alpha=0.4)
        for x, y, ok in pts:
            ax.plot(x, y, "o", color=color, fillstyle="full" if ok else "none")
        ax.axhline(t.limit / 1000, color=color, linestyle="--", label=t.text)
        ax.plot([], [], "o-", color=color, label=f"{t.metric} measured")
    lo, hi = c.bracket
    if lo is not None and hi is not None:
        ax.axvspan(lo, hi, color="grey", alpha=0.2, label="verdicts change here")
    ax.set_yscale("log")
    ax.set_xlim(left=0)
    ax.set_xlabel("offered rate (req/s)")
    ax.set_ylabel("latency from intended send (ms, log)")
    ax.set_title(f"Latency vs offered rate ({c.arrivals} arrivals); hollow: step missed")
    ax.legend(fontsize=7)
    return charts._svg(fig)


def throughput_chart(c: Capacity) -> str:
    fig, ax = plt.subplots()
    pts = sorted((s.rate_rps, s.goodput_rps) for s in c.steps)
    top = max((max(x, y) for x, y in pts), default=1.0) * 1.05
    ax.plot([0, top], [0, top], ":", color="grey", label="achieved = offered")
    ax.plot([x for x, _ in pts], [y for _, y in pts], "o-", label="goodput (successful responses/s)")
    ax.set_xlim(0, top)
    ax.set_ylim(0, top)
    ax.set_xlabel("offered rate (req/s)")
    ax.set_ylabel("achieved (req/s)")
    ax.set_title("What the server answered, by offered rate")
    ax.legend(fontsize=7)
    return charts._svg(fig)


def html(c: Capacity, estimate: str | None = None, url: str | None = None) -> str:
    """`estimate`: the interpolated limit's sentence, when there is one;
    `url`: what was loaded (a report must say what it measured)."""
    return _ENV.get_template("capacity.html.j2").render(
        c=c,
        url=url,
        estimate=estimate,
        charts=[Markup(latency_chart(c)), Markup(throughput_chart(c))] if c.steps else [],
    )
