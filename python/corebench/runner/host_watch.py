"""A capacity search whose target's host is watched through node_exporter
(`corebench capacity --monitor URL`): each step's load runs while the
exporter is scraped, and the step is marked with the host's CPU over it.
The probe and the settling requests between steps are not steps: they run
unwatched."""

from __future__ import annotations

from dataclasses import dataclass

from corebench.config import LoadConfig
from corebench.monitor.exporter import Exporter
from corebench.result import LoadResult
from corebench.runner.capacity import Live, Runner
from corebench.store import MonitorSummary, Step


@dataclass
class HostWatch:
    """A Runner (runner.capacity's shape) around `run`; `mark(step)` gives
    a step the figures of the last step's load."""

    run: Runner
    url: str
    last: MonitorSummary | None = None
    local: bool = False  # the exporter reported this machine's name: the host ran the load too

    def __call__(self, config: LoadConfig, *, live: Live | None = None) -> LoadResult:
        if config.rate is None:
            return self.run(config, live=live)
        with Exporter(self.url) as exporter:
            result = self.run(config, live=live)
        self.last = exporter.summary(MonitorSummary())
        self.local = self.local or bool(self.last.exporter_local)
        return result

    def mark(self, step: Step) -> None:
        s, self.last = self.last, None
        if s is None:
            return
        if not s.cores or s.host_cpu is None:
            step.host_error = s.scrape_error or "fewer than two good scrapes"
            return
        step.host_cpu = s.host_cpu
        step.host_cpus = len(s.cores)
        step.host_busiest = max(c.busy for c in s.cores)
