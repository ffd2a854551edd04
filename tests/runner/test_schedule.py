"""The schedule as a pure function of the plan: interleaved rounds,
blocked runs, warm-ups after each start, and what is left to resume."""

from pathlib import Path

from corebench.plan import build
from corebench.runner.schedule import per_round, remaining, round_runs, runs


def _exp(**experiment):
    table = {
        "experiment": {"duration": "1s", **experiment},
        "factors": {"cpus": [1, 2], "concurrency": [1, 4, 16]},
        "target": {"builtin": {"model": "async"}},
        "load": {"concurrency": "{concurrency}"},
    }
    return build(Path("plan.toml"), "", table, {})


def test_interleaved_rounds_visit_every_point_once_after_a_fresh_start():
    exp = _exp(repetitions=3, warmup=1)
    rs = runs(exp)
    assert len(rs) == 3 * per_round(exp) == 3 * (6 + 2)
    assert [r.seq for r in rs] == list(range(1, 25))
    for rnd in (1, 2, 3):
        rr = [r for r in rs if r.round == rnd]
        assert [r.position for r in rr] == list(range(1, 9))
        assert sorted(r.point.key for r in rr if not r.warmup) == sorted(p.key for p in exp.points)
        assert all(r.repetition == rnd for r in rr if not r.warmup)
        starts = [i for i, r in enumerate(rr) if r.start]
        assert starts == [0, 4] and all(rr[i].warmup for i in starts), "a warm-up right after each start"
        assert rr[1].point == rr[0].point, "the warm-up runs the visit's first point"
        assert {r.point.levels["cpus"] for r in rr[:4]} != {r.point.levels["cpus"] for r in rr[4:]}
    assert round_runs(exp, 2) == [r for r in rs if r.round == 2], "a round is a pure function of its number"
    orders = {tuple(r.point.key for r in rs if r.round == n) for n in (1, 2, 3)}
    assert len(orders) > 1


def test_blocked_keeps_a_configurations_runs_in_one_start():
    exp = _exp(repetitions=2, warmup=1, schedule="blocked")
    rs = runs(exp)
    assert len(rs) == 6 * 3 and sum(r.start for r in rs) == 2
    first = rs[:3]
    assert [r.repetition for r in first] == [0, 1, 2] and first[0].warmup and first[0].point == first[2].point


def test_a_warmup_length_and_no_order():
    exp = _exp(repetitions=1, warmup="3s", randomize=False)
    assert exp.plan.experiment.warmup.runs == 1 and exp.plan.experiment.warmup.length_s == 3.0
    rs = runs(exp)
    assert [r.point.levels["concurrency"] for r in rs if not r.warmup] == [1, 4, 16, 1, 4, 16]


def test_remaining_skips_done_visits_and_warms_a_partly_done_one_again():
    exp = _exp(repetitions=2, warmup=1)
    rs = runs(exp)
    r1 = [r for r in rs if r.round == 1]
    done = {(r.point.key, r.repetition) for r in r1 if not r.warmup}  # round 1 whole
    second_visit = [r for r in rs if r.round == 2][4:]
    done |= {(second_visit[1].point.key, 2)}  # one run of round 2's second visit
    left = remaining(rs, done)
    assert all(r.round == 2 for r in left)
    assert len(left) == 4 + 3, "round 2's first visit whole; its second: a warm-up and two runs"
    assert left[4].start and left[4].warmup
    assert remaining(rs, {(r.point.key, r.repetition) for r in rs if not r.warmup}) == []
