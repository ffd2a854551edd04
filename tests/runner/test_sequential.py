"""Sequential steps against known truth: exact M/M/1 and D/M/1 queues
(Lindley's recursion) whose tail theory gives, a step that misses ended as
soon as its seconds show it, one that meets never ended early (the error
rate the rule states), and the whole search's answer where theory puts it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from corebench import engine
from corebench.config.load import LoadConfig
from corebench.plan.objective import SearchSettings, parse_objective
from corebench.runner import capacity
from corebench.runner.sequential import ALPHA, Second, Watch, bounds, look
from corebench.testing.queues import limit_rps, response_times, steady_backlog_s
from tests.support.queue_runner import QueueRunner

MU, BOUND_S, ALLOWANCE = 200.0, 0.1, 0.01


def test_the_simulated_queues_are_the_queues_theory_knows():
    rng = np.random.default_rng(7)
    # M/M/1 at the limit: response times exponential with rate μ − λ.
    lam = limit_rps(MU, 99, BOUND_S, "poisson")
    assert lam == pytest.approx(MU + math.log(0.01) / BOUND_S)
    _, t = response_times(lam, MU, 4000, "poisson", rng)
    assert t.mean() == pytest.approx(1 / (MU - lam), rel=0.05)
    assert (t > BOUND_S).mean() == pytest.approx(ALLOWANCE, rel=0.25)
    # D/M/1: the root σ of σ = exp(−μ(1 − σ)/λ) gives the decay μ(1 − σ).
    lam = limit_rps(MU, 99, BOUND_S, "uniform")
    sigma = 1 - math.log(100) / BOUND_S / MU
    assert sigma == pytest.approx(math.exp(-MU * (1 - sigma) / lam))
    _, t = response_times(lam, MU, 4000, "uniform", rng)
    assert (t > BOUND_S).mean() == pytest.approx(ALLOWANCE, rel=0.25)


def _step(
    rate: float, arrivals: str, rng: np.random.Generator, looks: int, bound_s: float = BOUND_S, steady: bool = False
) -> int | None:
    """The second a simulated step is settled as missing, or None. Its
    responses count in the second they end, as the engine counts them;
    `steady` starts the queue from its stationary state, not empty."""
    backlog_s = steady_backlog_s(rate, MU, arrivals, rng) if steady else 0.0  # type: ignore[arg-type]
    at, t = response_times(rate, MU, looks, arrivals, rng, backlog_s)  # type: ignore[arg-type]
    return _first_miss(np.floor(at + t).astype(int), t > bound_s, looks)


def _first_miss(sec: np.ndarray, over: np.ndarray, looks: int) -> int | None:
    n = np.bincount(sec, minlength=looks)[:looks]
    x = np.bincount(sec, weights=over, minlength=looks)[:looks].astype(int)
    seen = []
    for i in range(looks):
        seen.append(Second(int(n[i]), int(x[i])))
        if look(seen, ALLOWANCE, looks).misses:
            return i + 1
    return None


@pytest.mark.parametrize("arrivals", ["poisson", "uniform"])
def test_a_step_that_meets_is_not_ended_and_one_far_over_ends_in_seconds(arrivals):
    rng = np.random.default_rng(11 if arrivals == "poisson" else 12)
    limit = limit_rps(MU, 99, BOUND_S, arrivals)
    runs = 120
    for share in (0.5, 0.9, 0.98):
        rate = limit * share
        looks = math.ceil(min(60, 5000 / rate))
        wrong = sum(_step(rate, arrivals, rng, looks) is not None for _ in range(runs))
        # The rule states at most ALPHA; P(more than 2·ALPHA·runs | ALPHA) < 1%.
        assert wrong <= 2 * ALPHA * runs, f"{share}× the limit: {wrong}/{runs} steps said to miss"
    for share, most_s in ((1.3, 15), (2.0, 7)):
        rate = limit * share
        looks = math.ceil(min(60, 5000 / rate))
        ended = [_step(rate, arrivals, rng, looks) for _ in range(40)]
        assert all(e is not None for e in ended), f"{share}×: every step settled"
        assert float(np.median([e for e in ended if e is not None])) <= most_s, ended


@pytest.mark.parametrize(
    ("arrivals", "bound_s"), [("poisson", 0.1), ("uniform", 0.1), ("poisson", 0.5), ("uniform", 0.5)]
)
def test_a_step_exactly_at_the_limit_from_steady_state_is_rarely_ended(arrivals, bound_s):
    # At the limit the share over the bound is the allowance: the boundary
    # of the rule's stated error. p99 <= 500 ms puts the queue at ρ ≈ 0.95
    # (Poisson) and 0.98 (even), whose seconds are autocorrelated for
    # seconds on end.
    rng = np.random.default_rng(21)
    rate = limit_rps(MU, 99, bound_s, arrivals)
    looks, runs = math.ceil(min(60, 5000 / rate)), 150
    wrong = sum(_step(rate, arrivals, rng, looks, bound_s, steady=True) is not None for _ in range(runs))
    assert wrong <= 2 * ALPHA * runs, f"ρ = {rate / MU:.3f}: {wrong}/{runs} steps at the limit said to miss"


def test_a_slow_start_that_passes_does_not_end_a_step_that_meets():
    # A warm-up: 3% of responses over the bound in the first 6 s, 0.2%
    # after. Over its whole 34 s the step meets (about 0.7%); the rule,
    # testing the seconds after the first third, must not end it (without
    # leaving that third out it ended 16% of them).
    rng = np.random.default_rng(4)
    looks, wrong, meets = 34, 0, 0
    for _ in range(150):
        sec = np.repeat(np.arange(looks), rng.poisson(150, looks))
        over = rng.random(sec.size) < np.where(sec < 6, 0.03, 0.002)
        if over.sum() > ALLOWANCE * sec.size:
            continue
        meets += 1
        wrong += _first_miss(sec, over, looks) is not None
    assert meets >= 140 and wrong <= 2 * ALPHA * meets, (wrong, meets)


def test_a_look_needs_batches_and_more_than_one_burst():
    assert not look([], ALLOWANCE, 10).misses
    assert not look([Second(100, 100)] * 6, ALLOWANCE, 10).misses, "fewer than 5 seconds after the first third"
    assert look([Second(100, 100)] * 7, ALLOWANCE, 10).misses
    burst = [Second(100, 0)] * 14 + [Second(100, 100)]
    assert not look(burst, ALLOWANCE, 10).misses, "one burst is not a trend"
    steady = [Second(100, 30)] * 15
    seen = look(steady, ALLOWANCE, 10)
    assert seen.misses and seen.low > ALLOWANCE and seen.share == pytest.approx(0.3)


def _figures(second: int, completed: int, errors: int, over: tuple[int, ...]) -> engine.Figures:
    s = engine.Second(second, completed, errors, 0, 0, over)
    return engine.Figures(completed, errors, 0, second + 1.0, None, 30.0, s)


def test_the_watch_reads_each_second_once_counts_failures_as_late_and_says_why():
    parts = bounds(parse_objective("p99<=100ms,p50<=5ms"))
    assert [(b.limit_us, b.allowance) for b in parts] == [(100_000, pytest.approx(0.01)), (5000, 0.5)]
    w = Watch(parts, looks=30)
    for s in range(4):
        assert w(_figures(s, 100, 0, (0, 10))) is None
        assert w(_figures(s, 100, 0, (0, 10))) is None, "a second seen again is not counted again"
    assert [len(x) for x in w.seconds] == [4, 4]
    # Requests that failed count as over every bound.
    for s in range(4, 12):
        if w(_figures(s, 80, 20, (0, 10))) == engine.SETTLED:
            break
    assert w.settled is not None and w.settled[0].text == "p99<=100ms", w.settled
    assert w.why().startswith("p99<=100ms settled after") and "1.0% allowed" in w.why()
    assert w(_figures(99, 100, 0, (0, 0))) == engine.SETTLED, "settled stays settled"


@pytest.mark.parametrize("arrivals", ["poisson", "uniform"])
def test_the_search_over_a_simulated_queue_ends_overloaded_steps_early(arrivals):
    settings = SearchSettings(slo="p99<=100ms", arrivals=arrivals, max_steps=40)
    base = LoadConfig(url="http://127.0.0.1:1/queue", concurrency=512, keep_alive=True)
    truth = limit_rps(MU, 99, BOUND_S, arrivals)
    answers, ended = [], 0
    for seed in range(6):
        q = QueueRunner(MU, seed)
        found = capacity.search(base, settings, q)
        assert found.outcome == "found", found.sentence()
        settled = [s for s in found.steps if s.settled_s is not None]
        assert q.steps_settled == len(settled)
        ended += len(settled)
        assert all(not s.meets and "settled after" in s.why for s in settled)
        assert all(s.settled_s is not None and s.settled_s < s.duration_s for s in settled)
        answers.append(found.rate_rps)
    # The ramp's step at twice the start (1.1-1.3× the limit) ends early in most searches.
    assert ended >= 3, ended
    assert float(np.median(answers)) == pytest.approx(truth, rel=0.1), answers


def test_the_engine_counts_each_seconds_late_responses_and_ends_a_settled_run_whole():
    from corebench.config.engine import LiveBoundsU, RateConfig
    from corebench.targets.builtin import Served

    with Served("--model", "threads", "--workers", "64") as srv:
        cfg = LoadConfig(
            url=srv.url + "sleep?ms=20",
            duration_s=20,
            concurrency=64,
            rate=RateConfig(rps=100),
            live_bounds_us=[LiveBoundsU(5_000), LiveBoundsU(2_000_000)],
        )
        seen: list[engine.Second] = []

        def live(f: engine.Figures) -> object:
            if f.second is not None and (not seen or f.second.second > seen[-1].second):
                seen.append(f.second)
            return engine.SETTLED if len(seen) >= 2 else None

        r = engine.run(cfg, live=live)
    assert not r.interrupted and r.duration_s < 10, (r.interrupted, r.duration_s)
    assert r.schedule is not None and r.schedule.dropped == 0
    for s in seen:
        # Every response slept 20 ms: all over 5 ms, none over 2 s.
        assert s.over[:2] == (s.completed, 0) and s.completed > 0, s
