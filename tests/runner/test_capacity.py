"""The capacity search's decisions, on curves whose limit is known: a sharp
limit, a noisy one (each step's verdict a coin weighted by how far the rate
is from the limit), and limits outside the rates it may try."""

import math
import random

import pytest

from corebench.runner.capacity import SEEDED_GROWTH, Bracket, SearchSettings, seeded


def drive(bracket: Bracket, meets, max_steps: int = 60) -> list[float]:
    rates = []
    while len(rates) < max_steps and (rate := bracket.next_rate()) is not None:
        bracket.record(rate, meets(rate))
        rates.append(rate)
    return rates


def test_a_sharp_limit_is_bracketed_within_the_precision():
    b = Bracket(SearchSettings(slo="p99<=20ms", precision=0.02), start_rps=100)
    rates = drive(b, lambda r: r <= 1234)
    assert rates[:5] == [100, 200, 400, 800, 1600], "a doubling ramp brackets it"
    assert b.lo is not None and b.hi is not None
    assert b.lo <= 1234 < b.hi and b.hi / b.lo <= 1.02 / 0.98
    assert len(b.runs[b.lo]) == 2 and len(b.runs[b.hi]) == 2, "both ends measured twice"
    assert b.next_rate() is None


def test_a_start_above_the_limit_ramps_down():
    b = Bracket(
        SearchSettings(
            slo="p99<=20ms",
        ),
        start_rps=10_000,
    )
    rates = drive(b, lambda r: r <= 700)
    assert rates[:5] == [10_000, 5_000, 2_500, 1_250, 625]
    assert b.lo is not None and b.hi is not None and b.lo <= 700 < b.hi


def test_nothing_meets_or_everything_meets():
    s = SearchSettings(slo="p99<=20ms", min_rate=10, max_rate=5000)
    none = Bracket(s, start_rps=100)
    drive(none, lambda r: False)
    assert none.lo is None and none.hi == 10 and none.next_rate() is None, "down to --min-rate"
    deep = Bracket(SearchSettings(slo="p99<=20ms"), start_rps=6400)
    assert drive(deep, lambda r: False)[-1] == 100, "or 6 halvings below the start"
    above = Bracket(s, start_rps=100)
    assert drive(above, lambda r: True)[-1] == 5000
    assert above.hi is None and above.lo == 5000 and above.next_rate() is None


def test_a_tie_is_measured_once_more():
    b = Bracket(
        SearchSettings(
            slo="p99<=20ms",
        ),
        start_rps=100,
    )
    b.record(100, True)
    b.record(100, False)
    assert b.verdict(100) is None and b.next_rate() == 100
    b.record(100, True)
    assert b.verdict(100) is True


@pytest.mark.parametrize("spread", [0.01, 0.03])
def test_a_noisy_limit_is_found_without_drifting_down(spread):
    # Near the limit a step's verdict is a coin: P(meets) = Φ((λ* − λ)/(spread·λ*)),
    # as a p99 measured with a few percent of noise gives. Majority verdicts
    # keep the bracket's midpoint around the truth rather than below it.
    limit = 1000.0
    mids, misses = [], 0
    for seed in range(200):
        rng = random.Random(seed)

        def meets(r: float, rng: random.Random = rng) -> bool:
            z = (limit - r) / (spread * limit)
            return rng.random() < 0.5 * (1 + math.erf(z / math.sqrt(2)))

        b = Bracket(SearchSettings(slo="p99<=20ms", precision=0.02), start_rps=300)
        drive(b, meets)
        assert b.lo is not None and b.hi is not None
        mid = (b.lo + b.hi) / 2
        mids.append(mid)
        misses += abs(mid / limit - 1) > 0.05
    mean = sum(mids) / len(mids)
    assert abs(mean / limit - 1) < 0.01 + spread / 3, f"biased: mean midpoint {mean:.1f}"
    assert misses <= (1 if spread == 0.01 else 5), f"{misses} of 200 searches off by more than 5%"


def test_a_later_round_starts_below_the_earlier_answer_on_a_random_grid():
    s = SearchSettings(slo="p99<=20ms")
    starts = [seeded(s, 1000.0, random.Random(i)).start_rps for i in range(200)]
    assert all(850 <= x <= 1000 for x in starts) and len(set(starts)) == 200, "drawn, not one grid"
    assert seeded(s, 1000.0, random.Random(0)).growth == SEEDED_GROWTH
    fixed = SearchSettings(slo="p99<=20ms", start_rate=300)
    assert seeded(fixed, 1000.0, random.Random(0)) is fixed, "a plan's own start is kept"
    # Started at 900 with a limit of 1,234: a bracket of 1.25, then bisection.
    b = Bracket(seeded(s, 1000.0, random.Random(1)), start_rps=900)
    rates = drive(b, lambda r: r <= 1234)
    assert rates[:3] == [900, 1125, pytest.approx(1406.25)]
    assert b.lo is not None and b.hi is not None and b.lo <= 1234 < b.hi and b.hi / b.lo <= 1.02 / 0.98
    # An answer the server no longer sustains: ramped down by halves, as far
    # as an unseeded search goes (six halvings below the start), and a
    # limit below the start is bracketed as a first search would.
    gone = Bracket(seeded(s, 1000.0, random.Random(1)), start_rps=900)
    assert drive(gone, lambda r: False) == pytest.approx([900 / 2**k for k in range(7)])
    slower = Bracket(seeded(s, 1000.0, random.Random(1)), start_rps=900)
    rates = drive(slower, lambda r: r <= 300)
    assert rates[:3] == [900, 450, 225] and rates[3] == pytest.approx(math.sqrt(225 * 450)), "then bisection"
    assert slower.lo is not None and slower.hi is not None and slower.lo <= 300 < slower.hi


def test_a_probed_search_ramps_finely_near_the_probe_and_doubles_past_it():
    from corebench.runner.capacity import FINE_GROWTH, PROBED_START

    s = SearchSettings(slo="p99<=20ms", precision=0.02)
    # The limit at 0.77 of the probe's rate (M/M/1, mu = 200/s, p99 <= 100 ms):
    # one meeting step, one miss, and a first bracket of 1.25, not 2.
    b = Bracket(s, start_rps=200 * PROBED_START, near_rps=200)
    rates = drive(b, lambda r: r <= 154)
    assert rates[:2] == [150, 150 * FINE_GROWTH]
    assert b.lo is not None and b.hi is not None and b.lo <= 154 < b.hi and b.hi / b.lo <= 1.02 / 0.98
    # A probe far below the server (8 connections on a latency-bound one):
    # finely to a FINE_GROWTH past the probe's rate, then doubling.
    fast = Bracket(s, start_rps=75, near_rps=100)
    up = drive(fast, lambda r: r <= 5_000)
    assert up[:6] == pytest.approx([75, 93.75, 117.1875, 146.484375, 292.96875, 585.9375])
    # A limit below the start: down finely to half the probe's rate, then by halves.
    slow = Bracket(s, start_rps=75, near_rps=100)
    down = drive(slow, lambda r: r <= 10)
    assert down[:5] == pytest.approx([75, 60, 48, 24, 12])
