"""The runs of an experiment, in the order they are made.

Interleaved (the default): round r visits every target configuration once,
in a fresh random order, with a fresh start of the target; within a visit
the configuration's load points come in random order, each measured once
(repetition r). Drift of the machine and the target's warm state are so
spread over all configurations instead of lending one of them its luck
(repetitions within one target start are pseudo-replicates: Hurlbert 1984,
Ecol. Monogr. 54(2); Jain 1991, *The Art of Computer Systems Performance
Analysis*, §16.2 on randomized run order). Warm-up runs follow each start
and are never counted.

Blocked: each configuration's runs back to back in one start (the old
order, cheaper in target starts): a point's warm-ups, then its repetitions.

Every round of an interleaved schedule is a pure function of the plan and
the round's number, so an adaptive experiment can add rounds and a resumed
one finds the same order and numbers."""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

from corebench.plan import ExperimentPlan, Point


@dataclass(frozen=True)
class Run:
    seq: int
    point: Point
    repetition: int  # 1, 2, ... for measured runs; 0 for a warm-up
    warmup: bool
    round: int
    position: int  # 1-based order within its round
    visit: int  # runs of one visit share a target start
    start: bool  # the target is (re)started before this run

    def label(self, repetitions: int | str) -> str:
        if self.warmup:
            return f"{self.point.label()} warm-up (round {self.round})"
        return f"{self.point.label()} rep {self.repetition}/{repetitions}"


def _groups(exp: ExperimentPlan, rng: random.Random) -> list[list[Point]]:
    """Points by target configuration, in random order when asked."""
    groups: dict[str, list[Point]] = {}
    for p in exp.points:
        groups.setdefault(p.target_key(exp.target_factors), []).append(p)
    order = [list(g) for g in groups.values()]
    if exp.plan.experiment.randomize:
        rng.shuffle(order)
        for g in order:
            rng.shuffle(g)
    return order


def per_round(exp: ExperimentPlan) -> int:
    """Runs in one interleaved round: every point, plus the warm-ups of each visit."""
    warm = exp.plan.experiment.warmup.runs
    return len(exp.points) + warm * len({p.target_key(exp.target_factors) for p in exp.points})


def round_runs(exp: ExperimentPlan, rnd: int) -> list[Run]:
    """Round `rnd` (1-based) of an interleaved schedule."""
    e = exp.plan.experiment
    rng = random.Random(f"{e.seed}:{rnd}")  # a string seed is hashed deterministically
    seq = (rnd - 1) * per_round(exp)
    visit0 = (rnd - 1) * len({p.target_key(exp.target_factors) for p in exp.points})
    out: list[Run] = []
    for v, group in enumerate(_groups(exp, rng)):
        visit = visit0 + v + 1
        steps = [(group[0], 0)] * e.warmup.runs + [(p, rnd) for p in group]
        for i, (point, rep) in enumerate(steps):
            seq += 1
            out.append(Run(seq, point, rep, rep == 0, rnd, len(out) + 1, visit, start=i == 0))
    return out


def _blocked(exp: ExperimentPlan) -> list[Run]:
    e = exp.plan.experiment
    assert isinstance(e.repetitions, int)  # the plan refuses "auto" with blocked
    out: list[Run] = []
    for v, group in enumerate(_groups(exp, random.Random(e.seed))):
        for position, point in enumerate(group, 1):
            steps = [0] * e.warmup.runs + list(range(1, e.repetitions + 1))
            for rep in steps:
                start = not out or out[-1].visit != v + 1
                out.append(Run(len(out) + 1, point, rep, rep == 0, max(rep, 1), position, v + 1, start))
    return out


def runs(exp: ExperimentPlan) -> list[Run]:
    """All runs planned up front: every run, or an adaptive experiment's
    first rounds (the runner adds more while intervals are too wide)."""
    e = exp.plan.experiment
    if e.schedule == "blocked":
        return _blocked(exp)
    return [r for rnd in range(1, e.rounds_min + 1) for r in round_runs(exp, rnd)]


def remaining(planned: list[Run], done: set[tuple[str, int]]) -> list[Run]:
    """The runs still to make when `done` (point key, repetition) are stored:
    a visit whose measured runs are all done is skipped with its warm-ups;
    one partly done starts its target again and warms it up again."""
    out: list[Run] = []
    visits: dict[int, list[Run]] = {}
    for r in planned:
        visits.setdefault(r.visit, []).append(r)
    for runs_ in visits.values():
        left = [r for r in runs_ if r.warmup or (r.point.key, r.repetition) not in done]
        if not any(not r.warmup for r in left):
            continue
        if len(left) < len(runs_) and not left[0].start:
            left[0] = replace(left[0], start=True)
        out += left
    return out
