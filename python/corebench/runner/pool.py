"""A rate's verdict from several steps at it. A step that --max-step cuts
short of the responses its percentile needs (a p99 needs 5,000:
plan.objective.TAIL_SAMPLES beyond it) rests on a thin tail; the search
measures the rate again, up to POOL_STEPS steps, and judges them together
(runner.capacity._rate).

A percentile part is judged on all their responses: "p99 <= L" holds
where at most 1% of them were over L. Each step's count over L comes from
its whole latency histogram, read as its percentiles are (the engine's
`over_bounds`), so one step's count agrees with its own p99 and the counts
of several add up. The other parts (the error share, a mean) and whether
each step offered its rate are each step's own: every step must meet
them, and one that misses them decides the pool."""

from __future__ import annotations

from corebench.runner.sequential import Bound, decided
from corebench.store import Step

# A step that could not send this share of its schedule (every connection
# busy) did not offer its rate: it misses, whatever its latencies.
UNSENT_SHARE = 0.01
# At most this many steps judged together: a rate whose steps still fall
# short is said to be undecided (store.Capacity._thin).
POOL_STEPS = 4


def unsent(sent: int, scheduled: int) -> list[str]:
    """A step that did not offer its rate, in words ([] where it did)."""
    if scheduled and scheduled - sent > UNSENT_SHARE * scheduled:
        return [f"{scheduled - sent:,} of {scheduled:,} requests not sent: every connection was busy"]
    return []


def own_misses(step: Step, pooled: list[Bound]) -> list[str]:
    """What the step misses by itself that no pool can undo: the parts not
    among `pooled`, and its rate not offered."""
    texts = {p.text for p in pooled}
    return [f"{t} ({v})" for t, v, ok in step.judged if not ok and t not in texts] + unsent(step.sent, step.scheduled)


def judge(step: Step, before: list[Step], parts: list[Bound], samples: int) -> None:
    """Judges `step` together with the steps `before` it at its rate (module
    docstring), setting its verdict, why, `pooled` and `few_samples`."""
    step.pooled = len(before)
    if step.settled_s is not None:
        # Curtailed counting the whole pool (runner.sequential.Watch's `before` and `later`): it misses, decided.
        step.meets, step.few_samples = False, False
        return
    steps = [*before, step]
    counted = sum(s.counted for s in steps)
    missed = []
    for i, part in enumerate(parts):
        over = sum(s.over[i] for s in steps)
        if decided(over, counted, part.allowance):
            missed.append(
                f"{part.text}: {over:,} of the {counted:,} responses of {len(steps)} steps at this rate over the "
                f"bound ({over / counted:.2%}), more than {part.allowance:.1%}"
            )
    for s in steps:
        missed += [m for m in own_misses(s, parts) if m not in missed]
    step.meets, step.why, step.few_samples = not missed, "; ".join(missed), counted < samples


def curtail(group: list[Step], parts: list[Bound], planned: float, samples: int) -> None:
    """Where the pool so far already has more responses over a bound than
    the most requests it could end with allow, it misses whatever more
    steps bring: its last step says so, and is not thin (deterministic
    curtailment, as runner.sequential's)."""
    if len(group) >= POOL_STEPS:
        return  # judged whole already: a pool that ends short of its samples is undecided, said so
    last = group[-1]
    counted = sum(s.counted for s in group)
    most = most_requests(counted, len(group), planned, samples)
    for i, part in enumerate(parts):
        over = sum(s.over[i] for s in group)
        if decided(over, most, part.allowance):
            why = (
                f"{part.text}: {over:,} of {counted:,} responses over the bound, more than the "
                f"{int(part.allowance * most):,} ({part.allowance:.1%}) the most requests its rate's pooled steps "
                f"could have ({most:,.0f}) allow"
            )
            last.meets, last.few_samples = False, False
            last.why = "; ".join([why, *own_misses(last, parts)])
            return


def most_requests(counted_before: int, steps_before: int, planned: float, samples: int) -> float:
    """The most requests a pool can end with, counting a step of `planned`
    requests after `steps_before` steps that answered `counted_before`:
    it stops at POOL_STEPS steps, or once it has `samples` (so before its
    last step it had fewer); no step sends more than it planned
    (SearchSettings.step_requests)."""
    return min(counted_before + planned * (POOL_STEPS - steps_before), samples - 1 + planned)
