"""How many cores for a traffic, from capacity searches of known outcome:
levels read first, a fitted law only between measured levels or up to
twice the largest, shared-core levels never fitted."""

import json

from corebench.analysis.capacity import capacities, cores_needed
from corebench.analysis.points import PointStats
from corebench.analysis.stats import summarize


def amdahl(n: float, lam: float = 1000.0, sigma: float = 0.05) -> float:
    return lam * n / (1 + sigma * (n - 1))


def point(cpus: int, rates: list[float], shared: bool = False) -> PointStats:
    runs = [
        {
            "search_json": json.dumps(
                {
                    "rate_rps": r,
                    "bracket": [r, r * 1.04],
                    "outcome": "found",
                    "objective": "p99<=20ms, errors<=1%",
                    "arrivals": "poisson",
                }
            ),
            "p99_us": 10_000,
        }
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
