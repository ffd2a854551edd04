"""A capacity search's answer read against the target host's CPU, measured
through node_exporter during each step (`corebench capacity --monitor`).

The host's busy CPUs are everything on it (the server, its services, the
exporter, and the generator where that host also ran the load), so the CPU
per request read from them, D = U / X (the service demand law, Denning &
Buzen 1978), is an upper bound of the server's own. What the figures can
say of the limit: where the objective was first missed, either the host's
CPUs were full (the share a diagnosis calls CPU-bound, or one CPU nearly
always busy: a single thread's limit), or they were not, and the objective
was missed before the CPU filled: queueing at a CPU that is only partly
busy (waits grow as 1/(1 − ρ), Kingman 1961) or another limit, which these
figures cannot tell apart, so no cause is named; errors alone are not read
as a CPU limit at all."""

from __future__ import annotations

import statistics

from corebench.analysis.diagnose import CPU_BOUND_SHARE, MACHINE_FULL
from corebench.store import Capacity, Step

# Below this share of its busiest CPU, queueing for a CPU at most doubles a
# response (M/M/1's 1/(1 − ρ), Kleinrock 1975): not what misses an objective.
QUEUEING_SHARE = 0.5


def _at(c: Capacity, rate_rps: float | None) -> list[Step]:
    return [s for s in c.steps if rate_rps is not None and s.rate_rps == rate_rps and s.host_cpu is not None]


def _busy(steps: list[Step]) -> tuple[float, int, float]:
    """Mean busy CPUs, the CPU count, and the mean busiest CPU's share."""
    cpu = statistics.fmean(s.host_cpu or 0.0 for s in steps)
    busiest = statistics.fmean(s.host_busiest or 0.0 for s in steps)
    return cpu, steps[0].host_cpus or 0, busiest


def _figures(steps: list[Step]) -> str:
    cpu, n, busiest = _busy(steps)
    share = cpu / n if n else 0.0
    goodput = statistics.fmean(s.goodput_rps for s in steps)
    per = f", {cpu / goodput * 1000:.3f} ms of CPU per successful request" if goodput > 0 else ""
    return f"{cpu:.2f} of its {n} CPUs busy ({share:.0%}; the busiest CPU {busiest:.0%}){per}"


def host_lines(c: Capacity, generator_there: bool) -> list[str]:
    """The sentences on the host's CPU at the sustained rate and at the
    lowest rate that missed; [] where no step was watched."""
    watched = [s for s in c.steps if s.host_cpu is not None or s.host_error]
    if not watched:
        return []
    if all(s.host_cpu is None for s in watched):
        why = next((s.host_error for s in watched if s.host_error), "fewer than two good scrapes")
        return [f"Target host CPU: unknown: node_exporter gave no figures ({why})."]
    scope = "node_exporter; the whole host's CPU, an upper bound of the server's"
    if generator_there:
        scope += ", and that host ran this load too: its CPU holds the generator's"
    lo, hi = c.bracket
    parts = []
    if sustained := _at(c, lo):
        parts.append(f"at {lo:,.0f} req/s, the highest rate that met the objective, {_figures(sustained)}")
    missed = [s for s in _at(c, hi) if not s.meets]
    if missed:
        parts.append(f"at {hi:,.0f} req/s, the lowest that missed, {_figures(missed)}")
    if not parts:
        return [f"Target host CPU ({scope}): no figures at the rates that bracket the limit."]
    lines = [f"Target host CPU ({scope}): " + "; ".join(parts) + "."]
    if missed:
        lines.append(_reading(missed, generator_there))
    return lines


def _reading(missed: list[Step], generator_there: bool) -> str:
    """What the host's CPU says of the limit where the objective was missed."""
    cpu, n, busiest = _busy(missed)
    share = cpu / n if n else 0.0
    if not any(not met and not text.startswith("errors") for s in missed for text, _, met in s.judged):
        return (
            "Where the objective was missed it was on errors, not on latency: the host's CPU "
            f"({share:.0%} busy) does not say why requests failed."
        )
    if share >= CPU_BOUND_SHARE:
        who = "the server's and the generator's together" if generator_there else "the server's and its host's"
        return (
            f"Where the objective was missed the host's CPUs were {share:.0%} busy ({who}): CPU-bound, as a "
            f"diagnosis calls {CPU_BOUND_SHARE:.0%} or more."
        )
    if busiest >= MACHINE_FULL:
        return (
            f"Where the objective was missed one CPU was {busiest:.0%} busy while the host's were {share:.0%}: "
            "consistent with a single thread (or one core's interrupts) as the limit, not the host's CPUs."
        )
    idle = f"Where the objective was missed {1 - share:.0%} of the host's CPU was idle and no CPU was full"
    if busiest < QUEUEING_SHARE:
        return (
            f"{idle}: queueing for a CPU this idle stretches a response by about 1/(1 − ρ) = ×{1 / (1 - busiest):.2f} "
            "(M/M/1, ρ of the busiest CPU), so the objective was missed for another reason (locks, I/O, the "
            "network, the server's own limits: which, these figures do not say)."
        )
    return (
        f"{idle}: the objective was missed before the CPU filled. Queueing for a CPU this busy (waits grow as "
        "1/(1 − ρ)) or another limit (locks, I/O, the network, the server's own limits) may be the cause: which, "
        "these figures do not say."
    )
