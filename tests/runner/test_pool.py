"""A rate whose step --max-step cut short of the responses its percentile
needs is measured again and judged on its steps' responses together
(runner.pool): the pooled verdict is the share of all their responses
over the bound, checked against the response times themselves; the other
parts stay each step's; the curtailment of a pool's step counts the
whole pool; over an exact M/M/1 queue the search so decides the rates it
would have called undecided, near theory's limit."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from corebench import engine
from corebench.config.settings import LoadConfig
from corebench.plan.objective import SearchSettings, parse_objective
from corebench.result import LoadResult
from corebench.runner import capacity, pool
from corebench.runner.capacity import Live
from corebench.runner.sequential import Watch, bounds
from corebench.store import Capacity, Step
from corebench.testing.queues import limit_rps
from tests.support.queue_runner import QueueRunner

MU, BOUND_S = 200.0, 0.1
SAMPLES = 5000  # a p99's: 50 beyond it
BASE = LoadConfig(url="http://127.0.0.1:1/queue", concurrency=512, keep_alive=True)
# 10-s steps: about 1,500 responses near the limit, under a third of what a p99 needs.
THIN = SearchSettings(slo="p99<=100ms", max_step="10s", max_steps=100)


def _step(counted: int, over: int, *, errors_ok: bool = True, sent: int = 1000, scheduled: int = 1000) -> Step:
    judged = [("p99<=100ms", "90 ms", True), ("errors<=1%", "0.000%" if errors_ok else "2.000%", errors_ok)]
    return Step(
        rate_rps=100.0,
        duration_s=10.0,
        meets=True,
        goodput_rps=100.0,
        sent=sent,
        scheduled=scheduled,
        late=0,
        p50_us=1000,
        judged=judged,
        measured={},
        few_samples=True,
        counted=counted,
        over=[over],
    )


def test_a_pooled_verdict_is_the_share_of_all_the_steps_responses_over_the_bound():
    parts = bounds(parse_objective("p99<=100ms"))
    # 30 + 20 of 5,000 is the allowance exactly: met, and no longer thin.
    step = _step(2500, 20)
    pool.judge(step, [_step(2500, 30)], parts, SAMPLES)
    assert (step.meets, step.pooled, step.few_samples, step.why) == (True, 1, False, "")
    # One more over the bound misses, and says on how many responses.
    step = _step(2500, 21)
    pool.judge(step, [_step(2500, 30)], parts, SAMPLES)
    assert not step.meets and step.why == (
        "p99<=100ms: 51 of the 5,000 responses of 2 steps at this rate over the bound (1.02%), more than 1.0%"
    )
    # Still short of the samples: thin, and said so.
    step = _step(1000, 0)
    pool.judge(step, [_step(1000, 0)], parts, SAMPLES)
    assert step.meets and step.few_samples


def test_the_parts_no_count_pools_and_the_offered_rate_stay_each_steps_own():
    parts = bounds(parse_objective("p99<=100ms"))
    step = _step(2500, 0)
    pool.judge(step, [_step(2500, 0, errors_ok=False)], parts, SAMPLES)
    assert not step.meets and step.why == "errors<=1% (2.000%)"
    step = _step(2500, 0, sent=980, scheduled=1000)
    pool.judge(step, [_step(2500, 0)], parts, SAMPLES)
    assert not step.meets and step.why == "20 of 1,000 requests not sent: every connection was busy"
    assert pool.own_misses(step, parts) == [step.why]


def test_a_pool_ends_at_its_samples_or_its_steps():
    # Before its last step a pool had fewer than its samples; and it has at most POOL_STEPS steps.
    assert pool.most_requests(0, 0, 1500, SAMPLES) == 4 * 1500
    assert pool.most_requests(0, 0, 4000, SAMPLES) == SAMPLES - 1 + 4000
    assert pool.most_requests(3000, 2, 1500, SAMPLES) == 3000 + 2 * 1500
    assert pool.most_requests(4500, 3, 1500, SAMPLES) == 4500 + 1500


def test_a_pool_whose_miss_is_already_decided_is_not_measured_again():
    parts = bounds(parse_objective("p99<=100ms"))
    first = _step(2058, 321)
    first.meets, first.why = False, "p99<=100ms (138.623 ms)"
    pool.curtail([first], parts, 2000, SAMPLES)
    # At most 2,058 + 3 × 2,000 = 8,058, and below 4,999 + 2,000 before its last step: 69 allowed.
    assert (first.meets, first.few_samples) == (False, False)
    assert first.why == (
        "p99<=100ms: 321 of 2,058 responses over the bound, more than the 69 (1.0%) the most requests its rate's "
        "pooled steps could have (6,999) allow"
    )
    open_ = _step(2000, 60)
    pool.curtail([open_], parts, 2000, SAMPLES)
    assert open_.meets and open_.few_samples, "60 of at most 6,999 may still meet"
    # A pool of POOL_STEPS steps was judged whole: short of its samples it stays thin (undecided), met or not.
    full = [_step(1000, 0) for _ in range(pool.POOL_STEPS - 1)] + [_step(1000, 100)]
    full[-1].meets = False
    pool.curtail(full, parts, 1000, SAMPLES)
    assert full[-1].few_samples


def test_the_allowance_of_a_percentile_is_its_exact_share():
    parts = bounds(parse_objective("p90<=10ms,p99.9<=50ms"))
    assert [p.allowance for p in parts] == [0.1, 0.001]
    step = _step(100_000, 10_000)
    pool.judge(step, [], parts[:1], SAMPLES)
    assert step.meets, "10,000 of 100,000 over is a p90 at its bound, met"


def test_a_thin_steps_curtailment_counts_its_pool():
    parts = bounds(parse_objective("p99<=100ms"))
    # 2,000 responses before (25 over), this step's 1,000, 2,000 more to come: 50 allowed in all.
    w = Watch(parts, looks=10, planned=1000, before=(2000, [25]), later=2000)
    for second, over in enumerate((10, 10, 5)):
        assert w(_figures(second, 100, over)) is None
    assert w(_figures(3, 100, 1)) == engine.SETTLED
    assert w.why() == (
        "p99<=100ms settled after 4 s: 26 of 400 responses over the bound and 25 of 2,000 in the steps before it at "
        "this rate, more than the 50 (1.0%) its rate's pooled steps' 5,000 requests allow"
    )


def _figures(second: int, completed: int, over: int) -> engine.Figures:
    s = engine.Second(second, completed, 0, 0, 0, (over,))
    return engine.Figures(completed, 0, 0, second + 1.0, None, 10.0, s)


def test_a_step_whose_planned_requests_round_to_the_samples_is_not_thin():
    # 154.24... req/s for 5,000/154.24... s plans 4,999.999999999999 requests.
    rate = 154.24283914468344
    settings = SearchSettings(slo="p99<=100ms")
    assert rate * settings.step_s(rate) < SAMPLES
    step, _ = capacity._measure(BASE, settings.objective, settings, rate, QueueRunner(MU, 1), None)
    assert not step.few_samples


def _pools(found: Capacity) -> list[list[int]]:
    """The indexes of the steps of each pool (a step alone: a pool of one)."""
    out: list[list[int]] = []
    for i, s in enumerate(found.steps):
        if s.pooled:
            assert out and out[-1][-1] == i - 1 and found.steps[i - 1].rate_rps == s.rate_rps
            assert s.pooled == len(out[-1])
            out[-1].append(i)
        else:
            out.append([i])
    return out


def test_a_search_cut_short_by_max_step_pools_its_steps_and_decides(monkeypatch):
    truth = limit_rps(MU, 99, BOUND_S, "poisson")
    answers, undecided_alone, pooled, settled = [], 0, 0, 0
    for seed in range(6):
        monkeypatch.setattr(pool, "POOL_STEPS", 1)
        undecided_alone += "Undecided" in capacity.search(BASE, THIN, QueueRunner(MU, seed)).sentence()
        monkeypatch.undo()
        q = QueueRunner(MU, seed)
        found = capacity.search(BASE, THIN, q)
        assert found.outcome == "found" and "Undecided" not in found.sentence(), found.sentence()
        assert len(q.times_s) == len(found.steps)
        for members in _pools(found):
            assert len(members) <= pool.POOL_STEPS
            last = found.steps[members[-1]]
            times = np.concatenate([q.times_s[i] for i in members])
            over = int((times > BOUND_S).sum())
            if last.settled_s is not None:
                # Curtailed: more over the bound than the most responses the pool could have had allow.
                counted = sum(found.steps[i].counted for i in members[:-1])
                most = pool.most_requests(counted, len(members) - 1, last.rate_rps * last.duration_s, SAMPLES)
                assert not last.meets and over > 0.01 * most, (over, most)
            else:
                planned = last.rate_rps * last.duration_s
                if len(members) > 1:
                    # The pool's verdict is its responses' share over the bound, read from the times themselves.
                    assert last.meets == (over <= 0.01 * len(times)), (over, len(times))
                    pooled += 1
                if round(planned) < SAMPLES and not last.few_samples and len(times) < SAMPLES:
                    # Decided short of its samples: more over than the most the pool could have had allow.
                    most = pool.most_requests(len(times), len(members), planned, SAMPLES)
                    assert not last.meets and over > 0.01 * most, (over, most)
                    settled += 1
                elif len(members) > 1:
                    assert last.few_samples == (len(times) < SAMPLES)
        verdicts = found.verdicts()
        assert [found.steps[m[-1]] for m in _pools(found)] == verdicts
        assert all(not v.few_samples for v in verdicts if v.rate_rps in found.bracket)
        answers.append(found.rate_rps)
    assert undecided_alone >= 5, "judged alone, the 10-s steps leave the answer undecided"
    assert pooled >= 6, "rates near the limit were measured again and judged together"
    assert settled >= 1, "a pool whose miss was decided was not measured on"
    assert float(np.median(answers)) == pytest.approx(truth, rel=0.1), answers


@dataclass
class _Dies:
    """The simulated queue, which stops answering at its `at`-th step."""

    queue: QueueRunner
    at: int
    steps: int = 0

    def __call__(self, config: LoadConfig, *, live: Live | None = None) -> LoadResult:
        r = self.queue(config, live=live)
        if config.rate is not None:
            self.steps += 1
            if self.steps >= self.at:
                return r.model_copy(update={"status_counts": {503: r.responses}})
        return r


def test_a_pool_cut_by_a_dead_server_or_the_steps_allowed_ends_the_search_there():
    seen: list[Step] = []
    dead = capacity.search(
        BASE, THIN.model_copy(update={"start_rps": 120.0}), _Dies(QueueRunner(MU, 3), 2), seen.append
    )
    assert dead.outcome == "dead" and len(dead.steps) == 2 and dead.steps[1].pooled == 1
    assert seen == dead.steps, "every step shown once"
    cut = capacity.search(BASE, THIN.model_copy(update={"start_rps": 120.0, "max_steps": 2}), QueueRunner(MU, 3))
    assert cut.outcome == "unfinished" and len(cut.steps) == 2 and cut.steps[1].pooled == 1
