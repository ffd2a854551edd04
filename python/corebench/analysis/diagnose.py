"""What limited each point: the target's CPU, the generator, something
other than the CPU, or errors. Each verdict carries its evidence."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from corebench.analysis.points import CPU_BOUND_SHARE as CPU_BOUND_SHARE  # re-exported: the diagnosis's rule
from corebench.analysis.points import FAILING_SHARE, PointStats, each_run, little_fails

# The machine's cores this busy (target, generator and others together) left
# nothing to grow into: CPU-bound, whichever process had the CPU.
MACHINE_FULL = 0.95
# Runs whose target CPU shares all lie this close to CPU_BOUND_SHARE differ
# in class by the cut, not by their limit: they straddle it, and are not
# called "mixed" (a statistician's review: 84% and 86% of a core).
STRADDLE = 0.05


@dataclass(frozen=True)
class Diagnosis:
    # failing, generator-limited, load not held, interference, CPU-bound, machine CPU-bound, load-limited, waiting,
    # capacity search, unknown
    kind: str
    evidence: str


def diagnose(p: PointStats, cpus: float | None, host_cpus: int | None = None) -> Diagnosis:
    """The point's class of limit (`classify`), read from each measured
    run as well: where the runs' own classes differ (one run's target used
    0.98 of its core, another's 0.64), the point is "mixed", and the
    evidence counts the runs of each class with their CPU shares before the
    reading of the runs' means, which alone would name one class for
    runs of two."""
    whole = classify(p, cpus, host_cpus)
    if len(p.measured) < 2 or whole.kind in ("failing", "capacity search"):
        return whole
    runs = each_run(p)
    kinds = [classify(r, cpus, host_cpus).kind for r in runs]
    if len(set(kinds)) == 1:
        return whole
    _, given = _allowed(p, cpus, host_cpus)
    shares = [r.target_cpu / given if r.target_cpu is not None and given else None for r in runs]
    if all(s is not None and abs(s - CPU_BOUND_SHARE) <= STRADDLE for s in shares):
        said = ", ".join(f"{s:.0%}" for s in shares if s is not None)
        return Diagnosis(
            whole.kind, f"{whole.evidence}; its runs straddle the {CPU_BOUND_SHARE:.0%} cut (target CPU {said})"
        )
    parts = []
    for kind in dict.fromkeys(kinds):
        mine = [s for s, k in zip(shares, kinds, strict=True) if k == kind]
        known = [f"{s:.0%}" for s in mine if s is not None]
        used = f" (target CPU {', '.join(known)} of {given:g})" if known else ""
        parts.append(f"{kind} in {len(mine)} of {len(runs)} runs{used}")
    return Diagnosis("mixed", f"the runs differ: {'; '.join(parts)}. Over their means: {whole.kind}, {whole.evidence}")


def classify(p: PointStats, cpus: float | None, host_cpus: int | None = None) -> Diagnosis:
    """The class of limit, in order: failing (errors), generator-limited
    (its CPU measured near all its cores), load not held (Little's law
    fails: time lost outside the requests, cause not measured),
    interference (others took the target's cores, which were full),
    CPU-bound (the target's allowed cores busy), machine CPU-bound (the
    target below that, but every core of the machine busy with the target,
    the generator and others), load-limited (a closed loop with too
    few clients to keep the CPUs busy: by Little's law N clients at R s each
    carry at most N/R requests per second), or waiting on something other
    than the CPU (I/O, locks, sleeps)."""
    first = _before_load(p)
    if first is not None:
        return first
    gen = f"generator {p.generator_cpu:.2f} cores" if p.generator_cpu is not None else "generator CPU unknown"
    # A full CPU (the target's, or the whole machine's) is read first: the
    # rules below infer a limit elsewhere, which a measured one overrides.
    full_cpu = p.cpu_saturated or (p.machine_busy is not None and p.machine_busy >= MACHINE_FULL)
    if p.client_bound_runs * 2 > len(p.measured) and not full_cpu:
        return Diagnosis(
            "generator-limited",
            f"{gen}: near all of its cores in {p.client_bound_runs} of {len(p.measured)} runs; the server was not "
            "the limit",
        )
    if little_fails(p) and not full_cpu:
        return _not_held(p, gen)
    if (offered := p.users_offer_rps) is not None:
        used = f"; target used {p.target_cpu:.2f} cores" if p.target_cpu is not None else ""
        return Diagnosis(
            "load-limited",
            f"{p.clients} users thinking {p.think_s:g} s on average between requests offer at most "
            f"N/(Z+R) = {offered:,.1f} req/s in a steady state (the interactive response time law){used}: the "
            "load, not the server, set the rate",
        )
    if p.target_cpu is None:
        return _no_cpu(p)
    allowed, cpus = _allowed(p, cpus, host_cpus)
    if not cpus:
        return Diagnosis("unknown", f"target used {p.target_cpu:.2f} cores; how many it could use is unknown")
    share = p.target_cpu / cpus
    used = f"target used {p.target_cpu:.2f} of {allowed} ({share * 100:.0f}%)"
    if p.client_bound:
        gen += (
            f"; CPU-bound in {p.client_bound_runs} of {len(p.measured)} runs, so it may have set the figure as well "
            "(the server did at least this much)"
        )
    full = _cpu_full(p, cpus, used, gen)
    if full is not None:
        if little_fails(p):
            # Said, not ranked first: a measured full CPU outranks a limit inferred elsewhere.
            full = Diagnosis(
                full.kind,
                f"{full.evidence}; Little's law fails too (X·R/N = {p.little:.2f}): the clients were not all in "
                "a request all the time, which with the CPUs full is consistent with the CPU, not the time outside "
                "requests, setting the rate (not measured)",
            )
        return full
    cpu_time_s = _cpu_response_s(p, share)
    if p.clients is not None and p.response_s and cpu_time_s is not None and p.response_s > 1.5 * cpu_time_s:
        return Diagnosis(
            "waiting",
            f"{used}; a response took {p.response_s * 1000:.2f} ms where the CPU accounts for at most "
            f"{cpu_time_s * 1000:.2f} ms: the requests wait on something else (I/O, locks, the network, sleeps)",
        )
    needed = _clients_needed(p, cpus)
    if needed is not None and p.clients is not None and p.response_s and p.clients < needed:
        return Diagnosis(
            "load-limited",
            f"{used}: {p.clients} clients at {p.response_s * 1000:.2f} ms each carry at most "
            f"{p.clients / p.response_s:,.0f} req/s (Little's law), and its CPUs could serve about "
            f"{cpus / (statistics.fmean(p.demand_ms) / 1000):,.0f}: about {needed:.0f} clients would keep them busy",
        )
    return Diagnosis("waiting", f"{used}: consistent with a limit other than the CPU (I/O, locks, the network, sleeps)")


def _before_load(p: PointStats) -> Diagnosis | None:
    """Failing points and capacity searches, named before any limit of
    the load or the server is read."""
    if not p.measured:
        why = f": {p.failure}" if p.failure else ""
        return Diagnosis(
            "failing",
            f"no measured run succeeded ({p.failed_runs} failed{why}); {p.error_share * 100:.1f}% of requests failed",
        )
    if p.error_share > FAILING_SHARE or p.failed_runs:
        return Diagnosis(
            "failing",
            f"{p.error_share * 100:.1f}% of requests failed (errors, 4xx, 5xx); {p.failed_runs} runs failed",
        )
    if p.searched:
        return Diagnosis(
            "capacity search",
            "each run searched for the highest rate meeting the objective (see Capacity within the objective); "
            "the monitor's CPU figures span every step of a search, so no one rate's CPU is shown",
        )
    return None


def _not_held(p: PointStats, gen: str) -> Diagnosis:
    """Little's law fails: the clients were not all in a request all the
    time. Its cause is not measured, so none is stated as fact; a response
    that took most of its run points at connections left waiting (a server
    with fewer workers than connections), said as consistent with it."""
    evidence = (
        f"Little's law fails (X·R/N = {p.little:.2f}): the {p.clients or 'N'} clients were not all in a request all "
        f"the time, so the figures are not the server's at this concurrency; {gen}. The cause is not measured (the "
        "generator between requests, connection set-up, or requests left waiting)"
    )
    if (stalled := p.stalled()) is not None:
        evidence += (
            f"; the longest response took {stalled[0]:.2f} s of a {stalled[1]:.2f} s run: consistent with "
            "connections waiting for a worker (a server with fewer workers or threads than connections)"
        )
    return Diagnosis("load not held", evidence)


def _no_cpu(p: PointStats) -> Diagnosis:
    if p.exporter_error:
        return Diagnosis("unknown", f"no CPU figures from the target's host: node_exporter {p.exporter_error}")
    return Diagnosis("unknown", "no target CPU figures (a server corebench did not start)")


def _allowed(p: PointStats, cpus: float | None, host_cpus: int | None) -> tuple[str, float | None]:
    """The CPUs the target could use, in words and in number."""
    if (remote := p.exporter_cores) is not None:
        # node_exporter's figures: the whole host's CPU, the target's and everything else's.
        return f"the {remote} CPUs of its host (node_exporter: all it ran)", float(remote)
    allowed = f"the {cpus:g} CPUs it was given" if cpus else f"all {host_cpus} of this machine's CPUs"
    return allowed, cpus or (float(host_cpus) if host_cpus else None)


def _cpu_full(p: PointStats, cpus: float, used: str, gen: str) -> Diagnosis | None:
    """Interference, CPU-bound or machine CPU-bound: the target's cores,
    or the machine's, were full, whoever used them."""
    share = (p.target_cpu or 0.0) / cpus
    if p.shared:
        gen += (
            "; the generator shared the target's cores, so the target had less than its CPUs "
            "(this machine has no core to spare)"
        )
    if p.interference_runs:
        others = (
            f"{used}; in {p.interference_runs} of {len(p.measured)} runs others (neither the target nor the "
            f"generator) took up to {p.interference_max:.0%} of its cores"
        )
        # Where the generator shared the cores, its part filled them too.
        generator = p.generator_cpu / cpus if p.shared and p.generator_cpu is not None else 0.0
        if share + generator + p.interference_max >= CPU_BOUND_SHARE:
            return Diagnosis("interference", f"{others}, which were full: the target had less than it was given")
        gen += f"; others took up to {p.interference_max:.0%} of the target's cores"
    if share >= CPU_BOUND_SHARE:
        return Diagnosis("CPU-bound", f"{used}; {gen}")
    # The target itself below its CPUs' limit, the machine's full: the limit
    # is the machine's CPU, which the target shared, not the target's own.
    if p.shared and p.generator_cpu is not None and share + p.generator_cpu / cpus >= MACHINE_FULL:
        return Diagnosis(
            "machine CPU-bound",
            f"{used}; {gen}: the target and the generator together filled its cores, so the machine's CPU, "
            "not the target's alone, was the limit",
        )
    if p.machine_busy is not None and p.machine_busy >= MACHINE_FULL:
        return Diagnosis(
            "machine CPU-bound",
            f"{used}; {gen}; every core of the machine was busy ({p.machine_busy:.0%} on average: the target, the "
            "generator and others together), so the machine's CPU, not the target's alone, was the limit",
        )
    return None


def _cpu_response_s(p: PointStats, utilization: float) -> float | None:
    """The most time the CPU can account for in a response: the demand D
    stretched by queueing for a CPU busy a share ρ of the time, D / (1 − ρ)
    (the M/M/1 response time, Kleinrock 1975; with more CPUs the queueing is
    less, so this bounds it from above)."""
    if not p.demand_ms or utilization >= 1:
        return None
    return statistics.fmean(p.demand_ms) / 1000 / (1 - utilization)


def _clients_needed(p: PointStats, cpus: float) -> float | None:
    """Little's law, N = X·R, at the CPU ceiling X = C/D: the fewest clients
    that could keep the target's CPUs busy at this response time."""
    if p.clients is None or not p.response_s or not p.demand_ms:
        return None
    demand_s = statistics.fmean(p.demand_ms) / 1000
    return cpus / demand_s * p.response_s if demand_s > 0 else None
