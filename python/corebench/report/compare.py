"""B against A, point by point: benchstat's layout (old, new, delta with
the test's p-value). Each delta is an `analysis.effect.Effect`: a change
(significant), "≈" (equivalent within the margin, Schuirmann's TOST), or
"~" with the smallest change the runs could have detected (inconclusive).
Every test in the table is held to α over their number (Bonferroni, with
simultaneous intervals, as the report's comparisons), so a long table does
not find a difference by chance; a regression gate asks for both a
significant and a large enough slowdown. `Table.svg` overlays the
compared points' latency distributions, A against B, in one chart."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from corebench.analysis.effect import Effect, effect, log_effect
from corebench.analysis.points import PointStats
from corebench.analysis.stats import p_is
from corebench.errors import UsageError


@dataclass
class Row:
    label: str
    what: str  # "req/s" or "p99 ms"
    fmt: str
    xa: list[float]
    xb: list[float]
    c: Effect | None = None

    @property
    def significant(self) -> bool:
        return self.c is not None and self.c.significant

    def delta(self) -> str:
        c = self.c
        assert c is not None
        n = f"n={len(self.xa)}+{len(self.xb)}"
        if not c.tested:
            return f"– (not tested, {n})"
        p = f"p {p_is(c.p)} {n}"
        if c.significant:
            return f"{c.relative * 100:+.1f}% ({p})"
        if c.equivalent:
            return f"≈ within ±{c.margin:.0%} ({p})"
        return f"~ could detect ±{c.detectable:.0%} ({p})"


@dataclass
class Table:
    title: str
    rows: list[Row]
    # The compared points, (label, A's, B's): what the chart draws.
    pairs: list[tuple[str, PointStats, PointStats]] = field(default_factory=list)

    def svg(self) -> str | None:
        """Both sides' latency distributions in one percentile plot (the
        report's, on a 1/(1 − q) axis): a difference in the tail shows
        beside the table's p99. None when no run stored a spectrum."""
        from corebench.report.charts import compare_distribution

        return compare_distribution(self.pairs, self.title)

    def lines(self) -> list[str]:
        out = [self.title, _HEAD]
        for r in self.rows:
            if r.c is None:
                out.append(f"{r.label:<40} {r.what:<7} {'(no measured runs)':>30}")
                continue
            ma, mb = (r.c.mean_a, r.c.mean_b) if r.c.geometric else (sum(r.xa) / len(r.xa), sum(r.xb) / len(r.xb))
            out.append(f"{r.label:<40} {r.what:<7} {r.fmt.format(ma):>12} {r.fmt.format(mb):>12}  {r.delta()}")
        return out

    def slower(self, margin: float) -> list[Row]:
        """Throughput rows where B is significantly lower than A, by more than the margin."""
        return [r for r in self.rows if r.what == "req/s" and r.c and r.significant and r.c.relative < -margin]


def _rows(label: str, a: PointStats, b: PointStats) -> list[Row]:
    out = []
    # p99: the runs' geometric mean, compared on the log scale, as the report's.
    for what, fmt, xa, xb, compared in (
        ("req/s", "{:,.0f}", a.run_goodput_rps, b.run_goodput_rps, effect),
        ("p99 ms", "{:.3f}", _p99_ms(a), _p99_ms(b), log_effect),
    ):
        out.append(Row(label, what, fmt, xa, xb, compared(xa, xb) if xa and xb else None))
    return out


def _p99_ms(p: PointStats) -> list[float]:
    return [r.p99_us / 1000 for r in p.measured if r.p99_us is not None]


def _adjust(rows: list[Row]) -> list[Row]:
    tested = [r for r in rows if r.c is not None and r.c.tested]
    for r in tested:
        assert r.c is not None
        r.c = r.c.in_family(len(tested))
    return rows


_HEAD = (
    f"{'point':<40} {'':<7} {'A':>12} {'B':>12}  delta (ratio of means, Welch's t on the log scale, "
    "Bonferroni-adjusted p; ≈ = equivalent, TOST; ~ = inconclusive, with the change 80% power would see)"
)


def _points(store: Path) -> list[PointStats]:
    from corebench.report.data import load

    return load(store).points


def compare_stores(a: Path, b: Path) -> Table:
    pa, pb = _points(a), _points(b)
    by = {json.dumps(p.levels, sort_keys=True): p for p in pb}
    rows: list[Row] = []
    pairs = []
    for p in pa:
        other = by.get(json.dumps(p.levels, sort_keys=True))
        if other is not None:
            rows += _rows(p.label(), p, other)
            pairs.append((p.label(), p, other))
    if not rows:
        raise UsageError(f"{a} and {b} have no point in common (same factor levels) to compare")
    return Table(f"A = {a}, B = {b}", _adjust(rows), pairs)


def _selector(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise UsageError(f"{text!r}: a selector is FACTOR=LEVEL, like cpus=2")
    return name, value


def compare_points(store: Path, sel_a: str, sel_b: str) -> Table:
    """Within one store: points that differ only in the selected factor."""
    (fa, va), (fb, vb) = _selector(sel_a), _selector(sel_b)
    if fa != fb:
        raise UsageError(f"{sel_a} and {sel_b} select different factors; compare two levels of one factor")
    points = _points(store)
    if not any(fa in p.levels for p in points):
        raise UsageError(f"{store}: no factor {fa!r}")

    def rest(p: PointStats) -> str:
        return json.dumps({k: v for k, v in p.levels.items() if k != fa}, sort_keys=True)

    a = {rest(p): p for p in points if str(p.levels.get(fa)) == va}
    b = {rest(p): p for p in points if str(p.levels.get(fa)) == vb}
    if not a or not b:
        raise UsageError(f"{store}: no points with {sel_a if not a else sel_b}")
    rows: list[Row] = []
    pairs = []
    for key, p in a.items():
        if key in b:
            label = " ".join(f"{k}={v}" for k, v in json.loads(key).items()) or "(all)"
            rows += _rows(label, p, b[key])
            pairs.append((label, p, b[key]))
    return Table(f"A = {sel_a}, B = {sel_b} in {store}", _adjust(rows), pairs)
