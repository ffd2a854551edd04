"""B against A, point by point: benchstat's layout (old, new, delta with
the test's p-value, "~" where the difference is not significant)."""

from __future__ import annotations

import json
from pathlib import Path

from corebench.analysis.points import PointStats
from corebench.analysis.stats import compare
from corebench.errors import UsageError


def _points(store: Path) -> list[PointStats]:
    from corebench.report.data import load

    return load(store).points


def _row(label: str, a: PointStats, b: PointStats) -> list[str]:
    out = []
    for what, fmt, xa, xb in (
        ("req/s", "{:,.0f}", a.rps, b.rps),
        ("p99 ms", "{:.3f}", [r["p99_us"] / 1000 for r in a.measured], [r["p99_us"] / 1000 for r in b.measured]),
    ):
        if not xa or not xb:
            out.append(f"{label:<40} {what:<7} {'(no measured runs)':>30}")
            continue
        c = compare(xa, xb)
        delta = (
            f"{c.relative * 100:+.1f}% (p={c.p_value:.3f} n={len(xa)}+{len(xb)})"
            if c.significant
            else f"~ (p={c.p_value:.3f} n={len(xa)}+{len(xb)})"
        )
        ma, mb = sum(xa) / len(xa), sum(xb) / len(xb)
        out.append(f"{label:<40} {what:<7} {fmt.format(ma):>12} {fmt.format(mb):>12}  {delta}")
    return out


_HEAD = f"{'point':<40} {'':<7} {'A':>12} {'B':>12}  delta (Welch's t-test; ~ = no significant difference)"


def compare_stores(a: Path, b: Path) -> list[str]:
    pa, pb = _points(a), _points(b)
    by = {json.dumps(p.levels, sort_keys=True): p for p in pb}
    lines = [f"A = {a}, B = {b}", _HEAD]
    matched = 0
    for p in pa:
        other = by.get(json.dumps(p.levels, sort_keys=True))
        if other is not None:
            matched += 1
            lines += _row(p.label(), p, other)
    if not matched:
        raise UsageError(f"{a} and {b} have no point in common (same factor levels) to compare")
    return lines


def _selector(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise UsageError(f"{text!r}: a selector is FACTOR=LEVEL, like cpus=2")
    return name, value


def compare_points(store: Path, sel_a: str, sel_b: str) -> list[str]:
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
    lines = [f"A = {sel_a}, B = {sel_b} in {store}", _HEAD]
    for key, p in a.items():
        if key in b:
            label = " ".join(f"{k}={v}" for k, v in json.loads(key).items()) or "(all)"
            lines += _row(label, p, b[key])
    return lines
