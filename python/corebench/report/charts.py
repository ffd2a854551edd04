"""The report's charts, drawn by matplotlib as inline SVG (text stays text,
escaped by matplotlib's SVG writer; no fonts or scripts are fetched)."""

from __future__ import annotations

import io
import re
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib import ticker  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from corebench.analysis.points import PointStats  # noqa: E402
from corebench.analysis.scaling import Fit  # noqa: E402
from corebench.analysis.stats import geometric  # noqa: E402
from corebench.plan.objective import parse_objective  # noqa: E402
from corebench.plan.thresholds import Threshold  # noqa: E402
from corebench.report.data import ReportData, ScalingFit  # noqa: E402
from corebench.result import LoadResult  # noqa: E402

plt.rcParams.update(
    {
        "svg.fonttype": "none",
        # Labels come from plans and servers: "$" must not start math mode.
        "text.parse_math": False,
        "font.size": 9,
        "figure.figsize": (6.4, 3.6),
        "axes.grid": True,
        "grid.alpha": 0.3,
        # Fixed ids: the same store gives the same report.
        "svg.hashsalt": "corebench",
    }
)
_HEADER = re.compile(r"^.*?(?=<svg)", re.S)


def _svg(fig: Figure) -> str:
    buf = io.StringIO()
    # No metadata: a date would make reports differ for no reason.
    fig.savefig(
        buf, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None, "Format": None, "Type": None}
    )
    plt.close(fig)
    return _HEADER.sub("", buf.getvalue(), count=1)


def _numeric(levels: list[Any]) -> bool:
    return bool(levels) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in levels)


def _continuous(levels: list[Any]) -> bool:
    """A numeric factor of 3 or more levels gets a numeric axis; two levels,
    or names, are categories (a line between 2 levels invents the middle)."""
    return _numeric(levels) and len(levels) >= 3


def _x(p: PointStats, factor: str, levels: list[Any]) -> Any:
    return p.levels[factor] if _continuous(levels) else str(p.levels[factor])


def _x_level(value: float, levels: list[Any]) -> Any:
    """The axis position of a numeric value that is one of the factor's levels."""
    level = next((v for v in levels if float(v) == value), value)
    return level if _continuous(levels) else str(level)


def _series(points: list[PointStats], factor: str, order: list[Any] | None = None) -> dict[str, list[PointStats]]:
    """Points grouped by the levels of every other factor, in the order of
    `factor`'s levels in the plan (levels may mix numbers and text)."""
    out: dict[str, list[PointStats]] = {}
    for p in points:
        if not p.measured or not p.goodput_rps.mean > 0:
            continue
        rest = ", ".join(f"{k}={v}" for k, v in p.levels.items() if k != factor) or "all"
        out.setdefault(rest, []).append(p)
    rank = {repr(v): i for i, v in enumerate(order or [])}
    for ps in out.values():
        ps.sort(key=lambda p: rank.get(repr(p.levels[factor]), len(rank)))
    return out


def throughput_by(d: ReportData, factor: str) -> str:
    fig, ax = plt.subplots()
    for label, ps in _series(d.points, factor, d.factors.get(factor)).items():
        xs = [_x(p, factor, d.factors[factor]) for p in ps]
        ys = [p.goodput_rps.mean for p in ps]
        err = [
            [max(0.0, p.goodput_rps.mean - p.goodput_rps.ci_low) if p.goodput_rps.n > 1 else 0.0 for p in ps],
            [max(0.0, p.goodput_rps.ci_high - p.goodput_rps.mean) if p.goodput_rps.n > 1 else 0.0 for p in ps],
        ]
        ax.errorbar(xs, ys, yerr=np.nan_to_num(err), marker="o", capsize=3, label=label)
    ax.set_xlabel(factor)
    ax.set_ylabel("throughput (successful req/s)")
    ax.set_ylim(bottom=0)
    ax.set_title(f"Throughput by {factor} (mean, 95% CI)")
    ax.legend(fontsize=7)
    return _svg(fig)


def efficiency(d: ReportData) -> str | None:
    if "cpus" not in d.factors or not _numeric(d.factors["cpus"]) or len(d.factors["cpus"]) < 2:
        return None
    if any(p.searched for p in d.points):
        return None  # capacity searches: their rates are in the capacity table, not the stored step
    ghz = d.clock_ghz
    fig, ax = plt.subplots()
    for label, ps in _series(d.points, "cpus", d.factors.get("cpus")).items():
        base = [p for p in ps if float(p.levels["cpus"]) == min(float(q.levels["cpus"]) for q in ps)][0]
        n0, x0 = float(base.levels["cpus"]), base.goodput_rps.mean
        xs = [_x(p, "cpus", d.factors["cpus"]) for p in ps]
        ax.plot(xs, [p.goodput_rps.mean / (float(p.levels["cpus"]) / n0 * x0) for p in ps], marker="o", label=label)
    measured = [(b.cpus, b.speedup / b.ideal) for b in d.baseline if b.speedup is not None]
    if len(measured) >= 2:
        # The CPU-bound yardstick on the same cores: its speedup over the ideal.
        xs = [_x_level(c, d.factors["cpus"]) for c, _ in measured]
        ax.plot(xs, [e for _, e in measured], color="black", linestyle=":", marker="s", label="hackbench")
    ax.axhline(1.0, color="grey", linestyle="--", linewidth=1)
    # From zero: on a narrow axis (0.94 to 1.04) noise looks like a trend.
    ax.set_ylim(0, max(1.2, ax.get_ylim()[1]))
    ax.set_xlabel("cpus")
    ax.set_ylabel("efficiency per core")
    title = "Efficiency: rps(n) / (n · rps(1))"
    if ghz:
        title += f"; clock {ghz} GHz"
    ax.set_title(title)
    ax.legend(fontsize=7)
    return _svg(fig)


def latency(d: ReportData) -> str | None:
    factor = "concurrency" if "concurrency" in d.factors else next(iter(d.factors), None)
    if factor is None:
        return None
    fig, ax = plt.subplots()
    for label, ps in _series(d.points, factor, d.factors.get(factor)).items():
        xs = [_x(p, factor, d.factors[factor]) for p in ps]
        (line,) = ax.plot(xs, [p.p99_us.geomean / 1000 for p in ps], marker="o", label=f"p99 {label}")
        ax.plot(
            xs,
            [p.p50_us.geomean / 1000 for p in ps],
            marker=".",
            linestyle="--",
            color=line.get_color(),
            label=f"p50 {label}",
        )
    ax.set_xlabel(factor)
    ax.set_ylabel("latency (ms)")
    ax.set_ylim(bottom=0)
    ax.set_title(f"Latency percentiles by {factor} (geometric mean of runs)")
    ax.legend(fontsize=6)
    return _svg(fig)


def distribution(d: ReportData) -> str | None:
    """Gil Tene's percentile plot (as HdrHistogram's): latency against
    1/(1 − q) on a log axis, so the tail from p90 to p99.999 is as wide as
    the body; per point, the geometric mean over its runs at each percentile."""
    fig, ax = plt.subplots()
    drawn, right = 0, 2.0
    for p in d.points:
        if not p.measured or p.failing or drawn >= 12:
            continue
        curve = percentile_curve(p)
        if curve is None:
            continue
        ax.plot(*curve, marker=".", label=p.label().replace(" ", ", "))
        right = max(right, curve[0][-1])
        drawn += 1
    if not drawn:
        plt.close(fig)
        return None
    _percentile_axis(ax, right)
    ax.set_title("Latency distribution (geometric mean of runs at each percentile)")
    ax.legend(fontsize=6)
    return _svg(fig)


def compare_distribution(pairs: list[tuple[str, PointStats, PointStats]], sides: str) -> str | None:
    """`corebench compare`'s overlay: the percentile plot of each compared
    point, A solid and B dashed in one colour, so a shift anywhere from the
    median to the tail shows where the table's p99 alone would not. `sides`
    says what A and B are."""
    fig, ax = plt.subplots()
    drawn, right = 0, 2.0
    for label, a, b in pairs:
        ca, cb = percentile_curve(a), percentile_curve(b)
        if drawn >= 6 or ca is None or cb is None:
            continue
        for side, style, (xs, ys) in (("A", "-", ca), ("B", "--", cb)):
            ax.plot(xs, ys, linestyle=style, marker=".", color=f"C{drawn}", label=f"{side}: {label}")
            right = max(right, xs[-1])
        drawn += 1
    if not drawn:
        plt.close(fig)
        return None
    _percentile_axis(ax, right)
    ax.set_title(
        f"Latency distribution, A solid, B dashed (geometric mean of runs at each percentile)\n{sides}", fontsize=8
    )
    ax.legend(fontsize=6)
    return _svg(fig)


def percentile_curve(p: PointStats) -> tuple[list[float], list[float]] | None:
    """(1/(1 − q), latency ms) at each of `_QUANTILES` the point's runs
    resolve (none finer than their counts allow): the geometric mean over
    its runs, as the tables' percentiles.
    None when its runs stored no spectrum."""
    curves = [c for c in (_spectrum(x) for x in p.results()) if c]
    if not curves:
        return None
    top = min(1 - 1 / max(c[-1][2], 2) for c in curves)
    qs = [q for q in _QUANTILES if q <= top]
    if len(qs) < 2:
        return None
    ys = [_centre([_at(c, q) for c in curves]) / 1000 for q in qs]
    return [1 / (1 - q) for q in qs], ys


def _centre(values: list[float]) -> float:
    return geometric(values)[0] if min(values) > 0 else 0.0


def _plain_log(axis: Any) -> None:
    """Plain numbers on a log axis: its default labels are mathtext
    ($\\mathdefault{10^{3}}$), which an SVG with text as text shows raw."""
    axis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(ticker.NullFormatter())


def _percentile_axis(ax: Axes, right: float) -> None:
    """The 1/(1 − q) log axis labelled in percentiles, latency from zero."""
    ax.set_xscale("log")
    ax.xaxis.set_minor_formatter(ticker.NullFormatter())
    ticks = [q for q in (0.5, 0.9, 0.99, 0.999, 0.9999, 0.99999) if 1 / (1 - q) <= right]
    ax.set_xticks([1 / (1 - q) for q in ticks], [f"p{q * 100:g}" for q in ticks])
    ax.set_xlim(1, right * 1.3)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("percentile")
    ax.set_ylabel("latency (ms)")


_QUANTILES = [0.0, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.995, 0.999, 0.9995, 0.9999, 0.99999]


def _spectrum(result: LoadResult) -> list[tuple[float, float, int]]:
    """(quantile, latency µs, count so far) of a run's total latency."""
    return [(s.percentile, float(s.value_us), s.total_count) for s in result.latency_us.total.spectrum]


def _at(curve: list[tuple[float, float, int]], q: float) -> float:
    """The latency at quantile q: the first step of the spectrum that reaches it."""
    return next((v for quantile, v, _ in curve if quantile >= q), curve[-1][1])


def variability(d: ReportData) -> str | None:
    """Run-to-run variation of each point's throughput (not the spread of
    its requests' latency, which the latency charts show); None where no
    point has the 2 runs a coefficient of variation needs, as capacity
    searches have none of their own."""
    ps = [p for p in d.points if p.measured and not p.searched]
    if not any(p.goodput_rps.n >= 2 and not np.isnan(p.goodput_rps.cv) for p in ps):
        return None
    fig, ax = plt.subplots(figsize=(6.4, max(2.0, 0.22 * len(ps) + 1)))
    labels = [p.label().replace(" ", ", ") for p in ps]
    ax.barh(range(len(ps)), [np.nan_to_num(p.goodput_rps.cv) * 100 for p in ps], color="#4c72b0")
    ax.set_yticks(range(len(ps)), labels, fontsize=7)
    ax.set_xlabel("coefficient of variation of throughput across runs (%)")
    ax.set_title("Run-to-run variability of throughput: lower is steadier")
    return _svg(fig)


_LAW_NAMES = {"linear": "linear", "amdahl": "Amdahl", "usl": "USL"}


def fit_chart(sf: ScalingFit) -> str:
    """The measured points (and those left out), the chosen law up to its
    extrapolation limit with its 95% confidence band."""
    m, f = sf.model, sf.fit
    assert f is not None  # drawn only where a law was chosen
    fig, ax = plt.subplots()
    ax.plot(m.ns, m.xs, "o", label="measured, fitted")
    if sf.left_out:
        ax.plot(*zip(*sf.left_out, strict=True), "x", color="grey", label="measured, left out (see the table)")
    grid = np.linspace(min(m.ns) / 2, m.limit, 200)
    ax.plot(grid, [f.predict(n) for n in grid], "-", label=f"{_LAW_NAMES[f.law]} " + _params(f))
    bands = [f.band(n) for n in grid]
    ax.fill_between(grid, [b[0] for b in bands], [b[1] for b in bands], alpha=0.2, label="95% band")
    ax.axvline(max(m.ns), color="grey", linestyle=":", linewidth=1)
    ax.set_xlim(0, m.limit)
    ax.set_ylim(bottom=0)
    ax.set_xlabel(sf.factor)
    ax.set_ylabel("throughput (req/s)")
    ax.set_title(f"Scaling over {sf.factor} ({sf.fixed or 'all'}); right of the dotted line: predicted")
    ax.legend(fontsize=7)
    return _svg(fig)


def _params(f: Fit) -> str:
    return " ".join(f"{ {'lambda': 'λ', 'sigma': 'σ', 'kappa': 'κ'}[k] }={v:.3g}" for k, v in f.params.items())


def heatmap(d: ReportData) -> str | None:
    rows, labels = [], []
    for r in d.runs:
        cores = r.monitor.cores if r.monitor is not None else []
        if cores:
            rows.append([c.busy for c in cores])
            labels.append(f"{r.seq}")
    if not rows:
        return None
    width = max(len(x) for x in rows)
    grid = np.array([x + [np.nan] * (width - len(x)) for x in rows])
    fig, ax = plt.subplots(figsize=(6.4, min(12.0, 1.5 + 0.12 * len(rows))))
    im = ax.imshow(grid, aspect="auto", cmap="viridis", vmin=0, vmax=1, interpolation="nearest")
    ax.set_xlabel("core")
    ax.set_ylabel("run (seq)")
    step = max(1, len(labels) // 30)
    ax.set_yticks(range(0, len(labels), step), labels[::step], fontsize=6)
    ax.set_xticks(range(width))
    ax.set_title("Busy share of each core, per run")
    fig.colorbar(im, ax=ax, fraction=0.04)
    return _svg(fig)


def searches(d: ReportData) -> str | None:
    """Plans with [search]: every step of every configuration's searches,
    the objective's first latency percentile against the offered rate, one
    colour per configuration (filled: the step met the objective), and the
    bound dashed."""
    series: dict[str, list[tuple[float, float, bool]]] = {}
    bound: Threshold | None = None
    for p in d.points:
        for r in p.measured:
            found = r.search
            if found is None or not found.steps:
                continue
            bound = bound or next(iter(parse_objective(found.objective).latency), None)
            for step in found.steps:
                if bound is not None and bound.metric in step.measured:
                    value_ms = step.measured[bound.metric] / 1000
                    series.setdefault(p.label(), []).append((step.rate_rps, value_ms, step.meets))
    if not series or bound is None:
        return None
    fig, ax = plt.subplots()
    for i, (label, pts) in enumerate(sorted(series.items())):
        color = f"C{i % 10}"
        for x, y, ok in pts:
            ax.plot(x, y, "o", color=color, fillstyle="full" if ok else "none", alpha=0.8)
        ax.plot([], [], "o", color=color, label=label)
    ax.axhline(bound.limit / 1000, color="black", linestyle="--", label=bound.text)
    ax.set_yscale("log")
    _plain_log(ax.yaxis)
    ax.set_xlim(left=0)
    ax.set_xlabel("offered rate (req/s)")
    ax.set_ylabel(f"{bound.metric} from intended send (ms, log)")
    ax.set_title("Capacity searches, every step; hollow: the step missed")
    ax.legend(fontsize=7)
    return _svg(fig)


def processes(d: ReportData) -> str | None:
    """Stacked bars: each point's CPU by process, user and system time apart."""
    if not d.processes:
        return None
    names = list(dict.fromkeys(r.process for r in d.processes))
    points = list(dict.fromkeys(r.point for r in d.processes))
    at = {(r.point, r.process): r for r in d.processes}
    fig, ax = plt.subplots(figsize=(7, 0.9 + 0.35 * len(points)))
    left = [0.0] * len(points)
    for i, name in enumerate(names):
        for part, hatch in (("user_cpu", None), ("system_cpu", "//")):
            widths = [getattr(at[(p, name)], part) if (p, name) in at else 0.0 for p in points]
            label = f"{name} {part.removesuffix('_cpu')}"
            ax.barh(points, widths, left=left, color=f"C{i}", hatch=hatch, edgecolor="white", label=label)
            left = [a + b for a, b in zip(left, widths, strict=True)]
    ax.set_xlabel("CPU (cores' worth); hatched: system time")
    ax.tick_params(axis="y", labelsize=6)
    ax.set_title("CPU by process (mean of measured runs)")
    ax.legend(fontsize=6, ncol=2)
    return _svg(fig)


def all_charts(d: ReportData) -> list[tuple[str, str]]:
    """(title, svg) for every chart the data supports."""
    out = [(f"Throughput by {f}", throughput_by(d, f)) for f in d.factors]
    for title, make in (
        ("Efficiency", efficiency),
        ("Latency", latency),
        ("Latency distribution", distribution),
        ("Variability", variability),
        ("CPU heat map", heatmap),
        ("CPU by process", processes),
        ("Latency vs offered rate", searches),
    ):
        svg = make(d)
        if svg:
            out.append((title, svg))
    out += [(f"Scaling over {sf.factor} ({sf.fixed or 'all'})", fit_chart(sf)) for sf in d.fits if sf.fit is not None]
    return out
