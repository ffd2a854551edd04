"""The runs of an experiment, in the order they are made. Target
configurations come in random order (seeded), and within each the load
points; a point's runs are consecutive, its warm-ups first. The target is
restarted only when a factor of the target changes."""

from __future__ import annotations

import random
from dataclasses import dataclass

from corebench.plan import Experiment, Point


@dataclass(frozen=True)
class Run:
    seq: int
    point: Point
    repetition: int
    warmup: bool

    def label(self, repetitions: int) -> str:
        tag = " (warm-up)" if self.warmup else ""
        return f"{self.point.label()} rep {self.repetition + 1}/{repetitions}{tag}"


def runs(exp: Experiment) -> list[Run]:
    e = exp.plan.experiment
    rng = random.Random(e.seed)
    groups: dict[str, list[Point]] = {}
    for p in exp.points:
        groups.setdefault(p.target_key(exp.target_factors), []).append(p)
    order = list(groups.values())
    if e.randomize:
        rng.shuffle(order)
        for g in order:
            rng.shuffle(g)
    out: list[Run] = []
    for group in order:
        for point in group:
            for rep in range(e.repetitions):
                out.append(Run(len(out) + 1, point, rep, rep < e.warmup))
    return out
