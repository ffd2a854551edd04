"""What the runner needs of a run's monitor, wherever it samples: this
machine's `Monitor`, or one on the target's Ray node (runner.remote)."""

from __future__ import annotations

from typing import Protocol, Self

from corebench.monitor.sampler import Sample
from corebench.store import MonitorSummary


class RunMonitor(Protocol):
    """Entered for the run's span; its samples are stored, its summary is the run's."""

    samples: list[Sample]

    def __enter__(self) -> Self: ...

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None: ...

    def summary(self, busy_poll: bool = False) -> MonitorSummary: ...
