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
the same intervals). Where the target shares its cores with the generator
(or was not placed at all), the same over those cores (or the machine's)
less the generator's CPU too: prefork-vs-worker's unplaced Apache on 2
cores lost up to 57% of them to others in some runs, which then gave
about two thirds of their point's other runs' rate. Not where the target
ran on another host or the load came from agents: this machine's
generator is then not on the target's cores.

Leaving softirq out makes the figure nearly a lower bound of others' CPU:
the kernel charges some of its network work to whichever process it
interrupted (the target's or the generator's time), and none of what it
leaves out is others' user or system time. What it keeps beyond user
and system is hardware-interrupt time (/proc/stat's irq, not stored
apart), small beside softirq on loopback; so a run is flagged for
interference it did not have only by that."""

from __future__ import annotations

from corebench.store import CoreTimes, StoredRun

# A run whose target cores lost this share of their time to others is
# flagged; the monitor's process and core readings differ by a few percent
# at their interval edges, which this stays above.
NOTABLE_SHARE = 0.10


def other_cpu(run: StoredRun) -> float | None:
    """Cores' worth used on the target's cores by neither the target nor
    its services (nor the generator, where it shared them), over the run;
    None where it cannot be told."""
    measured = _measured(run)
    return measured[0] if measured is not None else None


def share(run: StoredRun) -> float | None:
    """`other_cpu` as a share of the time of the cores it was measured on."""
    measured = _measured(run)
    return measured[0] / measured[1] if measured is not None else None


def _measured(run: StoredRun) -> tuple[float, int] | None:
    """(others' cores' worth, over how many cores)."""
    layout, monitor = run.layout, run.monitor
    if monitor is None or monitor.target_cpu is None or monitor.source != "local" or not monitor.cores:
        return None
    placed = layout if layout is not None and layout.controlled else None
    mine: set[int] = set(placed.target_cpus) if placed is not None else set()
    theirs: set[int] = set(placed.generator_cpus) if placed is not None else set()
    if placed is not None and mine and not mine & theirs:
        if max(mine) >= len(monitor.cores):
            return None
        services = sum(
            (monitor.services[name].cpu or 0.0)
            for name, sub in placed.services.items()
            if name in monitor.services and set(sub.target_cpus) <= mine
        )
        return max(0.0, sum(_busy(monitor.cores[c]) for c in mine) - monitor.target_cpu - services), len(mine)
    # Shared with the generator, or not placed: those cores, or the machine's, less the generator's CPU too.
    elsewhere = layout is not None and (layout.target_host is not None or layout.generator is not None)
    if monitor.generator_cpu is None or elsewhere:
        return None
    cores = sorted(mine | theirs) if mine else list(range(len(monitor.cores)))
    if max(cores) >= len(monitor.cores):
        return None
    services = sum((s.cpu or 0.0) for s in monitor.services.values())
    ours = monitor.target_cpu + monitor.generator_cpu + services
    return max(0.0, sum(_busy(monitor.cores[c]) for c in cores) - ours), len(cores)


def _busy(core: CoreTimes) -> float:
    """User, nice and system time, and hardware interrupts (the share not
    idle, waiting on I/O, stolen or in softirq)."""
    return max(0.0, core.busy - core.steal - core.softirq)
