"""Interference: CPU time on the target's cores that neither the target nor
the generator used (a neighbour: another process, a cron job, the monitor
of another tool). Like steal time, it takes CPU the target was given, so
the run understates the server and its comparison with others is void
(ANSWERS.md §3).

Per run, from what the monitor already stores: over the target's own
cores, the time busy in user, nice or system mode (/proc/stat; iowait is idle
time, steal the hypervisor's, softirq largely the network's work for the
requests themselves, so none of them counts) less the target's CPU and that
of services placed on the same cores (their process trees, measured over
the same intervals). Measured only where corebench placed the target on
cores the generator did not use: where they share, the generator's part of
each core is not known."""

from __future__ import annotations

from corebench.store import CoreTimes, StoredRun

# A run whose target cores lost this share of their time to others is
# flagged; the monitor's process and core readings differ by a few percent
# at their interval edges, which this stays above.
NOTABLE_SHARE = 0.10


def other_cpu(run: StoredRun) -> float | None:
    """Cores' worth used on the target's cores by neither the target nor
    its services, over the run; None where it cannot be told."""
    layout, monitor = run.layout, run.monitor
    if layout is None or monitor is None or not layout.controlled or monitor.target_cpu is None:
        return None
    mine = set(layout.target_cpus)
    if not mine or mine & set(layout.generator_cpus) or max(mine) >= len(monitor.cores):
        return None
    busy = sum(_busy(monitor.cores[c]) for c in mine)
    services = sum(
        (monitor.services[name].cpu or 0.0)
        for name, sub in layout.services.items()
        if name in monitor.services and set(sub.target_cpus) <= mine
    )
    return max(0.0, busy - monitor.target_cpu - services)


def share(run: StoredRun) -> float | None:
    """`other_cpu` as a share of the target's cores' time."""
    other = other_cpu(run)
    if other is None or run.layout is None:
        return None
    return other / len(run.layout.target_cpus)


def _busy(core: CoreTimes) -> float:
    """User, nice and system time (the share not idle, waiting on I/O,
    stolen or in softirq)."""
    return max(0.0, core.busy - core.steal - core.softirq)
