"""`corebench report STORE --format md`: the verdicts and the points table
as Markdown, for a pull request or a wiki."""

from __future__ import annotations

import math

from pydantic import JsonValue

from corebench.analysis.scaling import METHOD
from corebench.analysis.scaling_model import ALPHA
from corebench.report.data import RESPONSES, ReportData


def _n(x: float | None, digits: int = 0) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:,.{digits}f}"


def _g(x: float) -> str:
    """Four significant digits; an interval open to one side reads ∞."""
    return "–" if math.isnan(x) else ("∞" if math.isinf(x) else f"{x:.4g}")


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


class Markdown:
    name = "md"

    def render(self, d: ReportData) -> str:
        out = [
            f"# {_cell(d.experiment.name)}",
            "",
            f"{len(d.runs)} runs of {d.experiment.runs_planned} planned; host: {_cell(d.host.cpu_model)}, "
            f"{d.host.cpus} CPUs, kernel {_cell(d.host.kernel)}{_node(d.host.target_node)}.",
            "",
            "## Verdict",
            "",
        ]
        out += [f"- {_cell(v)}" for v in d.verdicts]
        if d.capacity:
            out += [
                "",
                "## Capacity within the objective",
                "",
                "| point | sustained req/s | 95% CI | searches |",
                "|---|---|---|---|",
            ]
            for r in d.capacity:
                ci = f"{r.ci[0]:,.0f}–{r.ci[1]:,.0f}" if r.ci else "–"
                out.append(f"| {_cell(r.point)} | {r.sustained_rps:,.0f} | {ci} | {r.searches} |")
        factors = list(d.factors)
        out += [
            "",
            "## Points",
            "",
            "Throughput is goodput: successful (2xx, 3xx) responses per second; errors, 4xx and 5xx are failed "
            "requests, never throughput." + d.as_logged_note(),
            "",
            "| "
            + " | ".join(
                factors
                + [
                    "runs",
                    "good req/s mean",
                    "CV",
                    "95% CI",
                    "p50 ms (geometric mean of runs)",
                    "p99 ms (geometric mean of runs)",
                    "failed requests",
                    "diagnosis",
                ]
            )
            + " |",
            "|" + "---|" * (len(factors) + 8),
        ]
        for p, dg in zip(d.points, d.diagnoses, strict=True):
            t = p.goodput_rps
            cells = [_cell(p.levels.get(f)) for f in factors] + [
                str(t.n),
                _n(t.mean),
                f"{_n(t.cv * 100, 1)}%" if t.n else "–",
                f"{_n(t.ci_low)}–{_n(t.ci_high)}" if t.n else "–",
                _n(p.p50_us.geomean / 1000, 3),
                _n(p.p99_us.geomean / 1000, 3),
                f"{_n(p.error_share * 100, 1)}%",
                _cell(dg.kind),
            ]
            out.append("| " + " | ".join(cells) + " |")
        if d.anova:
            out += [
                "",
                "## Factor effects (Type II ANOVA)",
                "",
                "| response | term | df | F | p | ω² |",
                "|---|---|---|---|---|---|",
            ]
            for a in d.anova:
                for term in a.terms:
                    cells = [RESPONSES[a.response], _cell(term.name), str(term.df), _g(term.f)]
                    cells += [a.p_said(term), _g(term.omega2)]
                    out.append("| " + " | ".join(cells) + " |")
            out += ["", *(f"- {RESPONSES[a.response]}: {a.method_words()}" for a in d.anova), "", d.anova_scope]
        if d.fits:
            out += ["", "## Scaling fits", "", f"Method: {METHOD}; the law chosen by F tests (α = {ALPHA}).", ""]
            for sf in d.fits:
                out.append(f"- over {sf.factor} ({_cell(sf.fixed) or 'all'}): {_cell(sf.model.why)}")
                f = sf.fit
                if f is not None:
                    params = ", ".join(
                        f"{k} = {v:.4g} (95% CI {_g(f.intervals[k][0])}–{_g(f.intervals[k][1])})"
                        for k, v in f.params.items()
                    )
                    peak = f"peak at N* = {f.peak_n:.1f}" if f.peak_n else "no peak claimed"
                    predicted = ", ".join(
                        f"X({n:g}) = {x:,.0f} (95% {_g(f.bands[n][0])}–{_g(f.bands[n][1])})"
                        for n, x in f.predictions.items()
                    )
                    out.append(f"  {params}; R² = {f.r2:.3f}; {peak}; predicted {predicted}")
        return "\n".join(out) + "\n"


def _node(node: dict[str, JsonValue] | None) -> str:
    """The target's own host, where it ran on a Ray node of its own."""
    if not node:
        return ""
    return (
        f"; the target's host, Ray node {_cell(node.get('node'))}: {_cell(node.get('cpu_model'))}, "
        f"{node.get('cpus')} CPUs, kernel {_cell(node.get('kernel'))}"
    )
