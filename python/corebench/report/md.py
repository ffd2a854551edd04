"""`corebench report STORE --format md`: the verdicts and the points table
as Markdown, for a pull request or a wiki."""

from __future__ import annotations

import math

from corebench.report.data import ReportData


def _n(x: float | None, digits: int = 0) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:,.{digits}f}"


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


class Markdown:
    name = "md"

    def render(self, d: ReportData) -> str:
        out = [
            f"# {_cell(d.experiment['name'])}",
            "",
            f"{len(d.runs)} runs of {d.experiment['runs_planned']} planned; host: {_cell(d.host.get('cpu_model'))}, "
            f"{d.host.get('cpus')} CPUs, kernel {_cell(d.host.get('kernel'))}.",
            "",
            "## Verdict",
            "",
        ]
        out += [f"- {_cell(v)}" for v in d.verdicts]
        factors = list(d.factors)
        out += [
            "",
            "## Points",
            "",
            "| " + " | ".join(factors + ["runs", "req/s mean", "CV", "95% CI", "p50 ms", "p99 ms", "diagnosis"]) + " |",
            "|" + "---|" * (len(factors) + 7),
        ]
        for p, dg in zip(d.points, d.diagnoses, strict=True):
            t = p.throughput
            cells = [_cell(p.levels.get(f)) for f in factors] + [
                str(t.n),
                _n(t.mean),
                f"{_n(t.cv * 100, 1)}%",
                f"{_n(t.ci_low)}–{_n(t.ci_high)}",
                _n(p.p50_us.median / 1000, 3),
                _n(p.p99_us.median / 1000, 3),
                _cell(dg.kind),
            ]
            out.append("| " + " | ".join(cells) + " |")
        if d.fits:
            out += ["", "## Scaling fits", "", f"Method: {d.fits[0].fit.method}.", ""]
            for sf in d.fits:
                f = sf.fit
                peak = f"peak at N* = {f.peak_n:.1f}" if f.peak_n else "no peak (κ = 0)"
                out.append(
                    f"- {sf.fit.law.upper()} over {sf.factor} ({_cell(sf.fixed) or 'all'}): "
                    f"λ = {f.params['lambda']:.4g}, "
                    f"σ = {f.params['sigma']:.4g}, κ = {f.params.get('kappa', 0.0):.4g}, R² = {f.r2:.3f}, {peak}"
                )
        return "\n".join(out) + "\n"
