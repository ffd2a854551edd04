"""`corebench compare`'s chart: both sides' latency distributions overlaid
in one percentile plot, each series labelled, from runs of known latency."""

import math
from pathlib import Path

import pytest

from corebench.analysis.points import PointStats
from corebench.analysis.stats import summarize
from corebench.report import compare as compare_mod
from corebench.report.charts import _QUANTILES, percentile_curve
from corebench.report.compare import Table, compare_points
from corebench.result import SpectrumPoint
from corebench.store import StoredRun
from tests.conftest import run_cli
from tests.support.experiments import run_plan
from tests.support.records import load_result, stored_run


def exponential_run(mean_ms: float, count: int = 100_000) -> StoredRun:
    """A run whose spectrum is the exponential distribution's quantiles,
    −mean·ln(1 − q), at the spectrum's percentiles (HdrHistogram's steps)."""
    qs = [0.0, *(1 - 0.5**k for k in range(1, 17)), 1.0]
    spectrum = [
        {
            "percentile": q,
            "value_us": round(-mean_ms * 1000 * math.log(max(1 - q, 1 / count))),
            "total_count": max(1, math.ceil(q * count)),
        }
        for q in qs
    ]
    result = load_result(p99_us=round(-mean_ms * 1000 * math.log(0.01)))
    total = result.latency_us.total.model_copy(update={"spectrum": [SpectrumPoint(**s) for s in spectrum]})
    return stored_run(
        {}, result.model_copy(update={"latency_us": result.latency_us.model_copy(update={"total": total})})
    )


def point(levels: dict, means_ms: list[float]) -> PointStats:
    runs = [exponential_run(m) for m in means_ms]
    lat = summarize([float(r.p99_us or 0) for r in runs])
    rps = [1000.0 + i for i in range(len(runs))]
    return PointStats(levels, runs, runs, summarize(rps), lat, lat, 0, 0.0, None, None, False, None, False, rps)


def test_the_curve_is_the_runs_geometric_mean_at_each_percentile():
    # Three exponential runs of mean 1, 2 and 3 ms: at every percentile their
    # geometric mean is 6^(1/3)·(−ln(1 − q)) ms, read at the first spectrum
    # step at or past q (the tables' statistic, not the median run's 2 ms).
    xs, ys = percentile_curve(point({"mpm": "event"}, [1.0, 3.0, 2.0]))
    assert xs[0] == 1 and xs[-1] == pytest.approx(1 / (1 - _QUANTILES[len(xs) - 1]))
    for x, y in zip(xs, ys, strict=True):
        q = 1 - 1 / x
        step = next(s for s in [0.0, *(1 - 0.5**k for k in range(1, 17)), 1.0] if s >= q - 1e-12)
        assert y == pytest.approx(-(6 ** (1 / 3)) * math.log(max(1 - step, 1e-5)), abs=1e-3), q


def test_both_sides_are_drawn_and_labelled():
    pairs = [
        ("mpm=event", point({"mpm": "event"}, [1.0, 1.1]), point({"mpm": "event"}, [2.0, 2.2])),
        ("mpm=worker", point({"mpm": "worker"}, [1.5, 1.4]), point({"mpm": "worker"}, [1.5, 1.6])),
    ]
    svg = Table("A = old.sqlite, B = new.sqlite", [], pairs).svg()
    assert svg is not None and svg.startswith("<svg")
    for label in ("A: mpm=event", "B: mpm=event", "A: mpm=worker", "B: mpm=worker"):
        assert label in svg, label
    assert "A = old.sqlite, B = new.sqlite" in svg, "the chart says what A and B are"
    assert "stroke-dasharray" in svg, "B is dashed"
    assert "p99.9" in svg and "latency (ms)" in svg


def test_no_chart_without_spectra():
    bare = point({"mpm": "event"}, [1.0])
    bare.measured = [stored_run({}, load_result(p99_us=1000))]
    assert Table("t", [], [("mpm=event", bare, bare)]).svg() is None


def test_compare_points_keeps_the_pairs_it_compares(monkeypatch):
    ps = [point({"cpus": c, "mpm": m}, [x, x * 1.1]) for c, x in ((1, 2.0), (2, 1.0)) for m in ("event", "worker")]
    monkeypatch.setattr(compare_mod, "_points", lambda store: ps)
    table = compare_points(Path("plan.sqlite"), "cpus=1", "cpus=2")
    assert [label for label, _, _ in table.pairs] == ["mpm=event", "mpm=worker"]
    assert all(a.levels["cpus"] == 1 and b.levels["cpus"] == 2 for _, a, b in table.pairs)
    svg = table.svg()
    assert svg is not None and "A: mpm=worker" in svg and "B: mpm=worker" in svg


def test_compare_writes_the_overlay_with_svg(tmp_path):
    # A real experiment (two cpus levels of the built-in server), compared
    # from the command line: the chart file holds both sides.
    ran = run_plan(
        tmp_path,
        """
[experiment]
calibrate = false  # the generator's ceiling is tested in test_adaptive_run
name = "svg"
repetitions = 2
duration = "0.5s"
[factors]
cpus = [1, 2]
[target]
builtin = { model = "threads", workers = 2 }
[load]
path = "/static/2k"
concurrency = 4
""",
    )
    out = tmp_path / "cmp.svg"
    r = run_cli("compare", str(ran.store), "cpus=1", "cpus=2", "--svg", str(out))
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    assert text.startswith("<svg") and "A: " in text and "B: " in text
