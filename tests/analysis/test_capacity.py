"""How many cores for a traffic, from capacity searches of known outcome:
levels read first, a fitted law only between measured levels or up to
twice the largest, shared-core levels never fitted."""

from corebench.analysis.capacity import capacities, cores_needed
from corebench.analysis.points import PointStats
from corebench.analysis.stats import summarize
from corebench.store import Capacity
from tests.support.records import load_result, stored_run


def amdahl(n: float, lam: float = 1000.0, sigma: float = 0.05) -> float:
    return lam * n / (1 + sigma * (n - 1))


def point(cpus: int, rates: list[float], shared: bool = False) -> PointStats:
    runs = [
        stored_run(
            {"cpus": cpus},
            load_result(p99_us=10_000),
            search=Capacity(
                rate_rps=r,
                bracket=(r, r * 1.04),
                outcome="found",
                objective="p99<=20ms, errors<=1%",
                arrivals="poisson",
                precision=0.02,
                steps=[],
            ),
        )
        for r in rates
    ]
    s = summarize(rates)
    return PointStats({"cpus": cpus}, runs, runs, s, s, s, 0, 0.0, None, None, False, None, shared, rates)


def measured(levels=(1, 2, 4), spread=0.002):
    # Three searches per level, ±0.2% around Amdahl's law (σ = 0.05).
    return capacities([point(n, [amdahl(n) * (1 + d) for d in (-spread, 0, spread)]) for n in levels])


def test_the_fewest_measured_cores_that_sustain_the_traffic():
    [said] = cores_needed(measured(), 1500)
    assert said.startswith("To serve 1,500 req/s within p99<=20ms, errors<=1% you need 2 cores: measured 1,905")
    assert "1 core sustains 1,000" in said


def test_between_measured_levels_the_law_speaks_only_inside_the_range():
    # 4 cores needed by measurement; Amdahl says 3 give 2,727 req/s.
    [yes] = cores_needed(measured(), 2600)
    assert "you need 4 cores" in yes and "predicts 3 cores would do (2,727 req/s, not measured)" in yes
    [no] = cores_needed(measured(), 3000)
    assert "you need 4 cores" in no and "predicts no level in between would do" in no


def test_beyond_the_largest_level_a_prediction_is_said_to_be_one():
    # Amdahl: 6 cores 4,800, 7 cores 5,385 req/s; predictions stop at 2 × 4 = 8.
    [said] = cores_needed(measured(), 5000)
    assert "no measured level is enough; the most, 4 cores, sustains 3,478" in said
    assert "predicts 7 cores would sustain 5,385 req/s" in said and "a prediction beyond what was measured" in said
    [far] = cores_needed(measured(), 20_000)
    assert "does not reach it within 8 cpus" in far


def test_no_law_from_two_levels_or_from_shared_cores():
    [two] = cores_needed(measured(levels=(1, 2)), 5000)
    assert "No scaling law to extrapolate with: it needs 3 or more cpus levels" in two
    caps = capacities([point(1, [1000.0]), point(2, [1900.0]), point(4, [3400.0], shared=True)])
    [shared] = cores_needed(caps, 5000)
    assert "a lower bound" in shared and "this experiment has 2" in shared, shared


def test_a_noisy_level_counts_by_the_low_end_of_its_interval():
    # cpus=2 averages 1,905 but its 95% interval reaches down to ~1,500.
    caps = capacities([point(1, [1000.0, 1000.0, 1000.0]), point(2, [1700.0, 1905.0, 2110.0]), point(4, [3478.0] * 3)])
    [said] = cores_needed(caps, 1800)
    assert "you need 4 cores" in said, said


def test_the_crossing_of_an_exact_queue_is_its_limit():
    # M/M/1, μ = 1000/s: p99 = ln(100)/(μ − λ), so 1/p99 is exactly linear
    # in λ and the 20 ms bound is crossed at μ − ln(100)/0.02 = 769.74.
    import math

    from corebench.analysis.capacity import crossing

    pts = [(lam, math.log(100) / (1000 - lam) * 1e6) for lam in (600, 700, 750, 780, 800, 850)]
    c = crossing(pts, 20_000)
    assert c is not None and abs(c.rate_rps - 769.74) < 0.01 and c.ci[0] <= c.rate_rps <= c.ci[1]
    assert c.steps == 6, "all within a factor 3 of the bound"


def test_the_crossing_interval_matches_a_reference_regression():
    # Noisy points: the 95% interval is the set of rates whose fitted line's
    # confidence band (statsmodels OLS) contains 1/bound.
    import numpy as np
    import statsmodels.api as sm

    from corebench.analysis.capacity import crossing

    rng = np.random.default_rng(4)
    rates = np.array([500.0, 600, 650, 700, 720, 750, 780, 800])
    inv = (1000 - rates) / np.log(100) * (1 + rng.normal(0, 0.08, rates.size))
    pts = [(float(r), float(1e6 / q)) for r, q in zip(rates, inv, strict=True)]
    c = crossing(pts, 20_000)
    assert c is not None
    fit = sm.OLS(inv, sm.add_constant(rates)).fit()
    grid = np.linspace(600, 950, 35_001)
    band = fit.get_prediction(sm.add_constant(grid)).conf_int(alpha=0.05)
    inside = grid[(band[:, 0] <= 50) & (band[:, 1] >= 50)]
    assert abs(c.ci[0] - inside.min()) < 0.05 and abs(c.ci[1] - inside.max()) < 0.05
    assert abs(c.rate_rps - (50 - fit.params[0]) / fit.params[1]) < 1e-6


def test_no_crossing_from_too_few_steps_near_the_bound():
    from corebench.analysis.capacity import crossing

    assert crossing([(100.0, 1000.0), (200.0, 2000.0), (400.0, 200_000.0)], 20_000) is None
    # Three noisy points whose line crosses the bound far beyond them: not read.
    assert crossing([(100.0, 8000.0), (110.0, 7000.0), (120.0, 9000.0)], 20_000) is None
    # Latency falling with the rate: no crossing to read.
    assert crossing([(100.0, 15000.0), (110.0, 12000.0), (120.0, 9000.0)], 20_000) is None


def test_a_crossing_just_past_the_top_step_is_read_and_one_further_is_not():
    import math

    from corebench.analysis.capacity import CROSSING_REACH, crossing

    # A capacity search's steps (CI, uniform arrivals, M/D/1 limit 880 req/s):
    # the line crosses 20 ms at 890.97 req/s, 0.02% past the top step.
    pts = [(485.7, 5927.0), (971.4, 97791.0), (686.9, 7767.0), (816.9, 12807.0), (890.8, 20927.0)]
    pts += [(853.1, 12943.0), (871.7, 19583.0), (871.7, 17663.0), (890.8, 20175.0)]
    c = crossing(pts, 20_000)
    assert c is not None and 890.8 < c.rate_rps < 891.0 and c.steps == 7
    # M/M/1, mu = 1000/s: the 20 ms bound is crossed at 769.74 req/s.
    p99_us = {lam: math.log(100) / (1000 - lam) * 1e6 for lam in (600, 650, 700, 720, 760)}
    c = crossing(list(p99_us.items()), 20_000)
    assert CROSSING_REACH > 769.74 / 760 - 1 and c is not None and abs(c.rate_rps - 769.74) < 0.01
    del p99_us[760]
    assert CROSSING_REACH < 769.74 / 720 - 1 and crossing(list(p99_us.items()), 20_000) is None
