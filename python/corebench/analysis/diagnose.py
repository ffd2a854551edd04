"""What limited each point: the target's CPU, the generator, something
other than the CPU, or errors. Each verdict carries its evidence."""

from __future__ import annotations

from dataclasses import dataclass

from corebench.analysis.points import FAILING_SHARE, PointStats, little_fails

# A target using this share of the CPUs it was given was CPU-bound.
CPU_BOUND_SHARE = 0.85


@dataclass(frozen=True)
class Diagnosis:
    kind: str  # failing, client-bound, target CPU-bound, not CPU-bound, unknown
    evidence: str


def diagnose(p: PointStats, cpus: float | None) -> Diagnosis:
    if not p.measured:
        return Diagnosis("failing", f"no measured run succeeded ({p.failed_runs} failed)")
    if p.error_share > FAILING_SHARE or p.failed_runs:
        return Diagnosis(
            "failing",
            f"{p.error_share * 100:.1f}% of requests failed (errors, 4xx, 5xx); {p.failed_runs} runs failed",
        )
    gen = f"generator {p.generator_cpu:.2f} cores" if p.generator_cpu is not None else "generator CPU unknown"
    if p.client_bound:
        return Diagnosis("client-bound", f"{gen}: near all of its cores; the server was not the limit")
    if little_fails(p):
        return Diagnosis("client-bound", f"Little's law fails (X·R/N = {p.little:.2f}): time went outside the requests")
    if p.target_cpu is None or not cpus:
        return Diagnosis("unknown", "no target CPU figures (a server corebench did not start)")
    share = p.target_cpu / cpus
    if p.shared:
        gen += (
            "; the generator shared the target's cores, so the target had less than its CPUs "
            "(this machine has no core to spare)"
        )
    if share >= CPU_BOUND_SHARE:
        return Diagnosis(
            "target CPU-bound", f"target used {p.target_cpu:.2f} of its {cpus:g} CPUs ({share * 100:.0f}%); {gen}"
        )
    return Diagnosis(
        "not CPU-bound",
        f"target used {p.target_cpu:.2f} of its {cpus:g} CPUs ({share * 100:.0f}%): "
        "the limit is elsewhere (I/O, locks, the network, sleeps)",
    )
