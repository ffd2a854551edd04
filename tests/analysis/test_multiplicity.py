"""Multiple comparisons, ratio intervals and tests of spread, against a
reference implementation (statsmodels, scipy) or synthetic data of known
truth; and verdicts that compare configurations at matched load only."""

import math

import numpy as np
import pytest
from scipy import stats as st
from statsmodels.stats.multitest import multipletests

from corebench.analysis.effect import change_size
from corebench.analysis.family import Family
from corebench.analysis.load import load_factors
from corebench.analysis.points import PointStats
from corebench.analysis.stats import (
    benjamini_hochberg,
    compare,
    dispersion_differs,
    dunnett_one_sided,
    fieller,
    holm,
    mcb,
    summarize,
)
from corebench.analysis.verdict import best_at_matched_load, verdicts
from corebench.store import MonitorSummary
from tests.support.records import load_result, stored_run

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
    runs = [stored_run(levels, load_result(p99_us=round(p99_ms * 1000))) for _ in rps]
    lat = summarize([p99_ms * 1000] * len(rps))
    return PointStats(levels, runs, runs, s, lat, lat, 0, 0.0, None, None, False, None, False, list(rps))


def test_the_best_and_what_the_family_says_of_each_other():
    a = point({"mpm": "event"}, [1000, 1010, 990, 1005])
    b = point({"mpm": "worker"}, [995, 1012, 985, 1000])
    c = point({"mpm": "prefork"}, [800, 805, 795, 802])
    (found, _) = best_at_matched_load([a, b, c], set())
    line = found.sentence
    assert line.startswith("At the plan's one load, best throughput: mpm=event at 1,001 req/s"), line
    # The record behind the sentence: worker cannot be told from event, so event is not shown best.
    assert found.outcome == "not shown best" and found.subject.endswith(": mpm=event")
    assert found.interval is not None and found.interval.unit == "req/s"
    assert found.figure("mpm=event") == pytest.approx(1001.25)
    assert found.interval.low < found.interval.estimate == found.figure("mpm=event") < found.interval.high
    assert (
        "cannot be told from it: mpm=worker (the best +0.3%, 95% CI, simultaneous over 3 (Bonferroni) −2.0% to +2.7%, "
        "equivalent)" in line
    ), line
    assert "mpm=prefork lower: the best's throughput +25.1% (95% CI, simultaneous over 3 (Bonferroni) +2" in line


def runs(levels, rps, p99_ms):
    """A point whose runs differ in p99 as well as in goodput."""
    measured = [stored_run(levels, load_result(p99_us=round(x * 1000))) for x in p99_ms]
    lat = summarize([x * 1000 for x in p99_ms])
    return PointStats(levels, measured, measured, summarize(rps), lat, lat, 0, 0.0, None, None, False, None, False, rps)


# Dunnett (1955), JASA 50, one-sided table at α = 0.05 (as reprinted in Ott &
# Longnecker, "An Introduction to Statistical Methods and Data Analysis",
# Appendix Table 11): {df: critical values for 2, 3 and 4 comparisons}.
DUNNETT_1955 = {5: (2.44, 2.68, 2.85), 20: (2.03, 2.19, 2.30), math.inf: (1.92, 2.06, 2.16)}


@pytest.mark.parametrize("df", list(DUNNETT_1955))
def test_dunnett_critical_values_match_the_published_table(df):
    balanced = math.sqrt(0.5)  # equal n: every correlation is 1/2
    got = [dunnett_one_sided((balanced,) * m, df) for m in (2, 3, 4)]
    assert got == pytest.approx(DUNNETT_1955[df], abs=0.006)
    assert dunnett_one_sided((balanced,), df) == pytest.approx(st.t.ppf(0.95, df)), "one comparison: Student's t"


@pytest.mark.parametrize("df", [3, 12, math.inf])
def test_dunnett_critical_value_for_unequal_n_against_scipy_multivariate_t(df):
    # Control of 2 runs against groups of 3, 9 and 20: unequal correlations λ_j·λ_l.
    lam = np.sqrt(np.array([3, 9, 20]) / (np.array([3, 9, 20]) + 2))
    d = dunnett_one_sided(tuple(lam), df)
    corr = np.outer(lam, lam)
    np.fill_diagonal(corr, 1.0)
    if math.isinf(df):
        p = st.multivariate_normal(cov=corr).cdf([d] * 3)
    else:
        p = st.multivariate_t(shape=corr, df=df).cdf([d] * 3, maxpts=200_000, random_state=1)
    assert p == pytest.approx(0.95, abs=2e-4)


def test_mcb_agrees_with_scipy_dunnett_with_each_group_as_control():
    # Group i is left out of the best set exactly when Dunnett's one-sided
    # test, with i as the control, finds some other group greater.
    rng = np.random.default_rng(7)
    checked = 0
    for _ in range(12):
        sizes = rng.integers(2, 7, 4)
        groups = [list(rng.normal(m, 1.0, n)) for m, n in zip(rng.uniform(0, 2.5, 4), sizes, strict=True)]
        found = mcb(groups)
        for i, g in enumerate(groups):
            others = [np.asarray(h) for j, h in enumerate(groups) if j != i]
            p = st.dunnett(*others, control=np.asarray(g), alternative="greater", rng=0).pvalue.min()
            if abs(p - 0.05) > 0.002:  # scipy's p-value is quasi-Monte Carlo: skip the knife-edge
                assert found.in_set[i] == (p > 0.05), (groups, i, p)
                checked += 1
    assert checked > 40


def test_the_true_best_stays_in_the_set_at_exactly_one_minus_alpha_with_unequal_n():
    # All means equal: each group is a true best, and with its own Dunnett
    # value it stays in the set with probability exactly 0.95. One value for
    # all groups, from the balanced table, gives about 0.965 for the group of
    # 2 runs and 0.94 for the group of 30: this test fails it.
    rng = np.random.default_rng(11)
    sizes, trials = (2, 3, 8, 15, 30), 8000
    kept = np.zeros(len(sizes))
    for _ in range(trials):
        kept += mcb([list(rng.normal(0, 1, n)) for n in sizes]).in_set
    # Binomial standard error about 0.0024.
    assert kept / trials == pytest.approx([0.95] * len(sizes), abs=0.008)


def test_lower_is_better_for_p99():
    rng = np.random.default_rng(9)
    fast, slow, slower = (
        runs({"mpm": m}, [1000.0] * 5, list(rng.normal(ms, 0.5, 5)))
        for m, ms in (("event", 10.0), ("worker", 14.0), ("prefork", 10.3))
    )
    (_, found) = best_at_matched_load([slow, fast, slower], set())
    line = found.sentence
    assert found.figures[0].unit == "ms" and found.outcome == "not shown best"
    assert line.startswith(
        "At the plan's one load, lowest p99: mpm=event at 9.95 ms (the geometric mean of its runs' p99, as tabled)"
    ), line
    assert "cannot be told from it: mpm=prefork" in line, "10.3 ms cannot be told from 10"
    assert "mpm=worker higher: the best's p99 −28.4%" in line, "14 ms can"
    assert mcb([[1.0, 2.0], [5.0, 6.0]], higher=False).in_set == [True, False]


def test_one_configuration_and_untested_ones():
    only = point({"mpm": "event"}, [1000, 1010, 990])
    lone = point({"mpm": "worker"}, [700])  # one run: cannot be tested, not ranked
    poor = point({"mpm": "prefork"}, [500, 505, 495])
    assert mcb([[1.0], [2.0, 2.1]]).tested == [False, True]
    (found, _) = best_at_matched_load([only, lone, poor], set())
    line = found.sentence
    assert line.startswith("At the plan's one load, best throughput: mpm=event at 1,000 req/s"), line
    assert "cannot be told from it" not in line, "an untested configuration is not worded as a result"
    assert "not ranked, fewer than 2 measured runs: mpm=worker" in line, line
    assert found.outcome == "shown best", "the untested one's mean is lower"
    (found, _) = best_at_matched_load([only, point({"mpm": "worker"}, [2000]), poor], set())
    assert found.outcome == "not shown best", "an untested configuration's mean is higher: nothing shows it best"
    # Only one configuration with 2 runs or more: the means, not a ranking.
    (found,) = best_at_matched_load([lone, point({"mpm": "event"}, [1000])], set())
    assert "not ranked" in found.sentence and "best" not in found.sentence, found
    assert found.outcome == "not tested" and found.interval is None


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
    from corebench.analysis.slo import judge, parse_slo

    ps = [
        runs({"cpus": c, "concurrency": n}, [x, x, x], p99)
        for c, n, x, p99 in (
            (1, 10, 900, [11.0, 12.0, 13.0]),
            (2, 10, 1700, [5.8, 6.0, 6.2]),
            (1, 50, 950, [58.0, 60.0, 62.0]),
            (2, 50, 1800, [26.0, 30.0, 34.0]),
        )
    ]
    slo = parse_slo("p99<=30ms")
    assert slo.met(30_000) and not parse_slo("p99<30ms").met(30_000)
    out = verdicts(ps, slo=slo, factors={"cpus": [1, 2], "concurrency": [10, 50]})
    lines = [v for v in out if v.startswith("p99 ≤ 30 ms")]
    head = "by the geometric mean of each point's runs and its one-sided 95% bound (Student's t on the logs; each"
    assert all(head in v for v in lines), lines
    assert (
        "concurrency=10" in lines[0]
        and "met by cpus=2 (6.00 ms, 80% below the objective's 30 ms, its one-sided 95% upper" in (lines[0])
    )
    assert "cpus=1 (11.97 ms" in lines[0] and "not shown" not in lines[0], lines[0]
    # 30 ms by its estimate, with runs from 26 to 34: not shown either way.
    assert "shown met by no configuration; not shown either way: cpus=2 (29.82 ms" in lines[1], lines[1]
    assert "straddle the objective; 2 of 3 runs met it)" in lines[1] and "missed by cpus=1 (59.98 ms" in lines[1]
    # The bound is scipy's one-sided t interval on the logs.
    j = judge(ps[3], slo)
    logs = np.log([26.0, 30.0, 34.0])
    ref = st.ttest_1samp(logs, 0.0, alternative="less").confidence_interval(0.95)
    assert math.log(j.high_us / 1000) == pytest.approx(ref.high)
    # A geometric mean (12·12·40)^(1/3) that meets the objective from 2 of 3 runs says so, and is not shown.
    mixed = runs({}, [900.0, 900.0, 900.0], [12.0, 12.0, 40.0])
    (line,) = [v for v in verdicts([mixed], slo=slo) if v.startswith("p99 ≤ 30 ms")]
    assert (
        "not shown either way: the target (17.93 ms, 40% below the objective's 30 ms, its one-sided 95% bounds" in line
    )
    assert "2 of 3 runs met it" in line
    # Beyond the bound, but its latency an upper bound of the server's (the
    # generator shared its cores): not shown missed.
    from dataclasses import replace

    shared = replace(runs({}, [900.0, 900.0, 900.0], [58.0, 60.0, 62.0]), shared=True)
    (line,) = [v for v in verdicts([shared], slo=slo) if v.startswith("p99 ≤ 30 ms")]
    assert "not shown either way: the target (59.98 ms" in line and "missed by" not in line, line
    assert "but its latency is an upper bound of the server's (partly the generator's)" in line
    # Identical runs give no spread: an estimate only, never "met".
    (line,) = [v for v in verdicts([point({}, [900.0, 900.0], 20.0)], slo=slo) if v.startswith("p99")]
    assert "an estimate only (its runs' figures identical: no spread)" in line and "met by the" not in line


def test_the_cores_verdict_uses_service_demand():
    # Demand law, D = U / X: 0.9 cores busy at 900 req/s is 1 ms per request;
    # 2 CPUs at the same demand could serve 2,000 req/s, so the ceiling is 2x.
    a = point({"cpus": 1}, [900, 905, 895])
    b = point({"cpus": 2}, [1700, 1710, 1690])
    a.demand_ms, b.demand_ms = [1.0, 1.01, 0.99], [1.0, 0.99, 1.01]
    # The runs' own CPU, U = D·X: 0.90 of 1 CPU busy against 1.70 of 2.
    for p in (a, b):
        p.measured = [
            r.model_copy(update={"monitor": MonitorSummary(target_cpu=d * x / 1000)})
            for r, d, x in zip(p.measured, p.demand_ms, p.run_goodput_rps, strict=True)
        ]
    b.shared, b.generator_cpu = True, 0.2
    (line,) = [v for v in verdicts([a, b], factors={"cpus": [1, 2]}) if v.startswith("From 1 to 2 CPUs")]
    assert "CPU per request 1.000 → 1.000 ms" in line and "service demand equivalent within ±5%" in line
    assert "projected CPU ceiling of 2 CPUs is 2.00× that of 1 (95% CI 1.9" in line
    # Measured over projected is the CPU shares' ratio: 85% of 2 against 90% of 1, 0.94.
    assert "measured 1.89×, below the projection: the target kept 85% of its 2 CPUs busy against 90% of 1" in line
    assert "a ratio of 0.94 (95% CI" in line
    # The projection, 2.00× the 900 req/s at 1 CPU, is 1,800: 100 are
    # missing, and the generator's 0.2 cores on the target's cores would
    # have served 200 at 1 ms each.
    assert "Welch's t on the runs' shares); the generator's 0.20 cores" in line
    assert "about 200 req/s at this demand, of the 100 req/s missing: that accounts for 200% of it" in line
    assert "(more than all of it)" in line
    b.generator_cpu = 0.05
    (line,) = [v for v in verdicts([a, b], factors={"cpus": [1, 2]}) if v.startswith("From 1 to 2 CPUs")]
    assert "about 50 req/s at this demand, of the 100 req/s missing: that accounts for 50% of it" in line
    # Over the projection's interval (1.96–2.05×: 60–141 req/s missing), 35% to 84%.
    assert "(35% to 84% over the projection's interval, 60–141 req/s missing)" in line
    b.generator_cpu = 0.2
    assert (
        "Caveat, each named point's throughput a lower bound of the server's: cpus=2: generator on the target's cores."
        in line
    )
    b.shared = False
    (line,) = [v for v in verdicts([a, b], factors={"cpus": [1, 2]}) if v.startswith("From 1 to 2 CPUs")]
    assert line.endswith("the CPU figures do not explain it (consistent with I/O, locks, or too few clients)."), line


def test_factor_effects_say_when_no_difference_matters():
    # Throughput 0.5% apart under the two MPMs at each of three CPU levels, runs 2% apart.
    ps = [
        point({"cpus": c, "mpm": m}, [x * f for f in (0.98, 1.0, 1.02, 1.0)])
        for c, base in ((1, 900), (2, 1700), (4, 3000))
        for m, x in (("prefork", base), ("worker", base * 1.005))
    ]
    factors = {"cpus": [1, 2, 4], "mpm": ["prefork", "worker"]}
    (line,) = [v for v in verdicts(ps, factors=factors) if v.startswith("mpm=")]
    # Each comparison, held to a family of 9, is too wide alone; the three combined are within ±5%.
    assert line.startswith("mpm=worker against mpm=prefork: throughput inconclusive in 3 of 3 matched"), line
    assert "on average over these 3 comparisons (each weighted equally" in line and "Student's t on 2 df" in line
    assert "+0.5% (95% CI −2.3% to +3.4%), within ±5%" in line
    assert "each weighted equally, from +0.5% to +0.5%" in line
    assert "no significant difference" not in line
    # Two strata are not combined: their own classes stand.
    two = [p for p in ps if p.levels["cpus"] != 4]
    (line,) = [v for v in verdicts(two, factors={"cpus": [1, 2], "mpm": factors["mpm"]}) if v.startswith("mpm=")]
    assert "equivalent in 2 of 2" in line and "combined" not in line


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
    assert "Superlinear from 2 to 4 CPUs: 3.14× for an ideal 2× (beyond its interval)" in step
    assert any(v.startswith("Implausible: at 4 CPUs the target spent less CPU per request (0.690 ms)") for v in out), (
        out
    )
    assert not any("Superlinear" in v for v in out if v.startswith("From 4 to 8 CPUs"))


def test_a_closed_loop_p99_ranking_says_the_rates_differed():
    # Same connections, one configuration serving twice the rate: its p99 is
    # lower by Little's law, not at one offered rate.
    fast = runs({"cpus": 2}, [2000.0, 2020.0, 1980.0], [5.0, 5.2, 4.8])
    slow = runs({"cpus": 1}, [1000.0, 1010.0, 990.0], [10.0, 10.4, 9.6])
    (line,) = [v for v in verdicts([fast, slow]) if "lowest p99" in v]
    assert "Closed loop: each configuration's clients waited for its replies" in line, line
    assert "so they were offered different rates (1,000–2,000 req/s, shown by the throughput comparison)" in line
    # Apart by Welch's t alone (p = 0.044), not at the family's level over 3
    # pairs: they "may" differ, and the line says why it does not say more.
    middle = runs({"cpus": 3}, [1800.0, 1810.0, 1790.0], [5.5, 5.6, 5.4])
    loose = runs({"cpus": 1}, [1400.0, 1550.0, 1700.0], [10.0, 10.4, 9.6])
    (line,) = [v for v in verdicts([fast, middle, loose]) if "lowest p99" in v]
    assert (
        "so they may have been offered different rates (1,550–2,000 req/s: apart by Welch's t at α = 0.05 alone, "
        "not shown at the family's level)" in line
    ), line
    # Users thinking: their throughput is not compared (the family leaves
    # them out), so no comparison is cited for the rates.
    from dataclasses import replace

    from corebench.analysis.best import _closed_loop_note

    thinking = [replace(p, think_s=1.0) for p in (fast, slow)]
    note = _closed_loop_note(thinking, Family([], set()))
    assert "may have been offered different rates (1,000–2,000 req/s: apart by Welch's t at α = 0.05 alone, " in note
    assert "throughput not compared where think time sets it)" in note, note
    # Rates within 10%: one offered rate, no caveat.
    near = runs({"cpus": 1}, [1950.0, 1960.0, 1940.0], [6.0, 6.2, 5.8])
    (line,) = [v for v in verdicts([fast, near]) if "lowest p99" in v]
    assert "Closed loop" not in line, line
    # Rates 10% apart by their means but not told apart by their runs: no caveat.
    noisy = runs({"cpus": 1}, [1200.0, 2600.0, 1500.0], [6.0, 6.2, 5.8])
    (line,) = [v for v in verdicts([fast, noisy]) if "lowest p99" in v]
    assert "Closed loop" not in line, line


def test_a_p99_family_counts_only_the_levels_that_rank_one():
    """At concurrency=20 the runs hold 66 responses: no p99 is ranked
    there, so its pair is not in the p99 family, and the one at
    concurrency=10 is held alone, not over 2."""

    def at(c: int, cpus: int, ok: int, p99_ms: list[float]) -> PointStats:
        levels = {"concurrency": c, "cpus": cpus}
        measured = [stored_run(levels, load_result(ok, p99_us=round(x * 1000))) for x in p99_ms]
        lat = summarize([x * 1000 for x in p99_ms])
        rps = [ok * 1.0, ok * 1.01, ok * 0.99]
        return PointStats(
            levels, measured, measured, summarize(rps), lat, lat, 0, 0.0, None, None, False, None, False, rps
        )

    points = [
        at(10, 1, 1000, [10.0, 10.4, 9.6]),
        at(10, 2, 1000, [5.0, 5.2, 4.8]),
        at(20, 1, 66, [20.0, 21.0, 19.0]),
        at(20, 2, 66, [10.0, 10.5, 9.5]),
    ]
    found = best_at_matched_load(points, {"concurrency"})
    (ranked,) = [f for f in found if f.subject.startswith("best p99 at concurrency=10")]
    assert "cpus=1 higher: the best's p99 −50.0% (95% CI −" in ranked.sentence, ranked.sentence
    assert "simultaneous over" not in ranked.sentence, "one pair ranked: held alone"
    (thin,) = [f for f in found if f.subject.startswith("lowest p99 at concurrency=20")]
    assert "p99 not ranked" in thin.sentence


def test_what_the_design_could_detect_is_given_for_the_least_precise_pair_too():
    # Against the best, one pair measured tightly and one loosely: quoting
    # the tight pair's detectable change alone would overstate how much the
    # design could see of the other.
    best = point({"mpm": "event"}, [1000, 1010, 990])
    tight = point({"mpm": "worker"}, [950, 1000, 1050])
    loose = point({"mpm": "prefork"}, [700, 1300, 1000])
    (found, _) = best_at_matched_load([best, tight, loose], set())
    line = found.sentence
    family = Family([best, tight, loose], set())
    near, far = sorted(family.get(p, best).detectable for p in (tight, loose))
    assert near < far
    assert (
        f"the smallest change this design could detect: {change_size(near)} for the most precise of them, "
        f"{change_size(far)} for the least)" in line
    ), line
