"""Multiple comparisons, ratio intervals and tests of spread, against a
reference implementation (statsmodels, scipy) or synthetic data of known
truth; and verdicts that compare configurations at matched load only."""

import math

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from corebench.analysis.points import PointStats
from corebench.analysis.stats import benjamini_hochberg, compare, dispersion_differs, fieller, holm, summarize
from corebench.analysis.verdict import best_set, load_factors, verdicts

P = [0.01, 0.04, 0.03, 0.005, 0.2, math.nan, 0.049]


def test_holm_and_bh_match_statsmodels():
    tested = [p for p in P if not math.isnan(p)]
    for ours, method in ((holm, "holm"), (benjamini_hochberg, "fdr_bh")):
        want = multipletests(tested, alpha=0.05, method=method)[1]
        got = [q for q in ours(P) if not math.isnan(q)]
        assert got == pytest.approx(list(want), rel=1e-12), method
        assert math.isnan(ours(P)[5]), "an untested comparison stays untested"


def test_fieller_interval_covers_the_true_ratio():
    # Two means of known ratio 1.2; both samples noisy, A's too.
    rng = np.random.default_rng(2)
    covered, trials = 0, 400
    for _ in range(trials):
        a = rng.normal(1000, 80, 4)
        b = rng.normal(1200, 80, 4)
        c = compare(list(a), list(b))
        covered += c.rel_low <= 0.2 <= c.rel_high
    # 95% nominal over 400 trials: the standard error is about 1.1 points.
    assert 0.92 <= covered / trials <= 0.98, covered / trials


def test_fieller_reduces_to_the_plain_interval_when_a_is_exact():
    lo, hi = fieller(100.0, 0.0, 120.0, 4.0, 2.0)
    assert (lo, hi) == pytest.approx((1.16, 1.24))
    assert fieller(1.0, 4.0, 10.0, 1.0, 2.0) == (-math.inf, math.inf), "A's mean indistinguishable from 0"


def test_brown_forsythe_sees_a_difference_in_spread_only_when_there_is_one():
    rng = np.random.default_rng(4)
    steady, noisy = list(rng.normal(100, 1, 8)), list(rng.normal(100, 15, 8))
    assert dispersion_differs(steady, noisy) < 0.05
    assert dispersion_differs(steady, list(rng.normal(100, 1, 8))) > 0.05
    assert math.isnan(dispersion_differs([1.0, 2.0], [3.0, 4.0])), "no test below 3 runs a side"


def point(levels, rps, p99_ms=10.0):
    s = summarize(rps)
    runs = [{"p99_us": p99_ms * 1000} for _ in rps]
    lat = summarize([p99_ms * 1000] * len(rps))
    return PointStats(levels, runs, runs, s, lat, lat, 0, 0.0, None, None, False, None, False, list(rps))


def test_the_best_is_a_set_of_configurations_not_shown_worse():
    a = point({"mpm": "event"}, [1000, 1010, 990, 1005])
    b = point({"mpm": "worker"}, [995, 1012, 985, 1000])
    c = point({"mpm": "prefork"}, [800, 805, 795, 802])
    best, tied = best_set([a, b, c])
    assert best is a and tied == [b]


def test_load_levels_are_never_offered_as_the_best_configuration():
    ps = [point({"concurrency": c}, [x, x + 5, x - 5]) for c, x in ((25, 1000), (75, 1100), (150, 1090))]
    out = verdicts(ps, factors={"concurrency": [25, 75, 150]})
    assert not any("best" in v.lower() for v in out), out
    assert any(v.startswith("No configuration to compare: the factors set the load only") for v in out)


def test_configurations_are_compared_at_matched_load():
    ps = [
        point({"cpus": c, "clients": n}, [x, x * 1.01, x * 0.99], p99)
        for c, n, x, p99 in ((1, 10, 900, 12.0), (2, 10, 1700, 6.0), (1, 50, 950, 60.0), (2, 50, 1800, 30.0))
    ]
    load = load_factors({"cpus": [1, 2], "clients": [10, 50]}, {"concurrency": "{clients}"})
    assert load == {"clients"}
    out = verdicts(ps, factors={"cpus": [1, 2], "clients": [10, 50]}, load=load)
    best = [v for v in out if "best throughput" in v]
    assert [v.split(",")[0] for v in best] == ["At clients=10", "At clients=50"]
    assert all(": cpus=2 at" in v for v in best)
    assert not any("clients=50 against clients=10" in v for v in out), "load levels are not factor effects"


def test_an_slo_gets_a_verdict_without_prices():
    from corebench.analysis.verdict import parse_slo

    ps = [
        point({"cpus": c, "concurrency": n}, [x, x, x], p99)
        for c, n, x, p99 in ((1, 10, 900, 12.0), (2, 10, 1700, 6.0), (1, 50, 950, 60.0), (2, 50, 1800, 30.0))
    ]
    slo = parse_slo("p99<=30ms")
    assert slo.met(30_000) and not parse_slo("p99<30ms").met(30_000)
    out = verdicts(ps, slo=slo, factors={"cpus": [1, 2], "concurrency": [10, 50]})
    lines = [v for v in out if v.startswith("p99 ≤ 30 ms")]
    assert lines == [
        "p99 ≤ 30 ms at concurrency=10: met by cpus=2 (6.00 ms, 80% under), cpus=1 (12.00 ms, 60% under).",
        "p99 ≤ 30 ms at concurrency=50: met by cpus=2 (30.00 ms, 0% under); missed by cpus=1 (60.00 ms, 100% over).",
    ]


def test_the_cores_verdict_uses_service_demand():
    # Demand law, D = U / X: 0.9 cores busy at 900 req/s is 1 ms per request;
    # 2 CPUs at the same demand could serve 2,000 req/s, so the ceiling is 2x.
    a = point({"cpus": 1}, [900, 905, 895])
    b = point({"cpus": 2}, [1700, 1710, 1690])
    a.demand_ms, b.demand_ms = [1.0, 1.01, 0.99], [1.0, 0.99, 1.01]
    b.shared = True
    (line,) = [v for v in verdicts([a, b], factors={"cpus": [1, 2]}) if v.startswith("From 1 to 2 CPUs")]
    assert "CPU per request 1.000 → 1.000 ms" in line and "no significant difference in service demand" in line
    assert "the CPU ceiling of 2 CPUs is 2.00× that of 1; measured 1.89×, because the load generator shared" in line
    b.shared = False
    (line,) = [v for v in verdicts([a, b], factors={"cpus": [1, 2]}) if v.startswith("From 1 to 2 CPUs")]
    assert line.endswith("something other than the CPU limited the target (I/O, locks, too few clients).")


def test_factor_effects_say_when_no_difference_matters():
    # Throughput 0.5% apart under the two MPMs at each of two CPU levels, runs 2% apart.
    ps = [
        point({"cpus": c, "mpm": m}, [x * f for f in (0.98, 1.0, 1.02, 1.0)])
        for c, base in ((1, 900), (2, 1700))
        for m, x in (("prefork", base), ("worker", base * 1.005))
    ]
    (line,) = [v for v in verdicts(ps, factors={"cpus": [1, 2], "mpm": ["prefork", "worker"]}) if v.startswith("mpm=")]
    assert "no significant difference in 2 of 2 configurations, and equivalent within ±5% in 2 (Schuirmann" in line


def test_superlinear_steps_and_implausible_demand_are_flagged():
    # 16-core field case: one start of 4 CPUs spent 0.69 ms per request where
    # its neighbours spent ~1.07 ms, and 4 -> 8 looked better than ideal.
    levels = {2: (1850, 1.07), 4: (5800, 0.69), 8: (7400, 1.08)}
    ps = []
    for c, (x, dm) in levels.items():
        p = point({"cpus": c}, [x * 0.99, x, x * 1.01])
        p.demand_ms = [dm * 0.99, dm, dm * 1.01]
        ps.append(p)
    out = verdicts(ps, factors={"cpus": [2, 4, 8]})
    step = next(v for v in out if v.startswith("From 2 to 4 CPUs"))
    assert "superlinear" in step
    assert any(v.startswith("Implausible: at 4 CPUs the target spent less CPU per request (0.690 ms)") for v in out), (
        out
    )
    assert not any("superlinear" in v for v in out if v.startswith("From 4 to 8 CPUs"))
