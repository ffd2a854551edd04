"""ab's -e file: for each percentage from 0 to 100, the time (ms) within
which that share of the requests was served, in the lines and formats of
ab 2.3's output_results() (support/ab.c):

    Percentage served,Time in ms
    0,0.093
    ...
    100,0.273

Row 0 is the fastest response and row 100 the slowest; row i is the
response at index (int)(0.5 + count · i / 100) of the sorted times, as ab
reads it. ab reads past its list there for the top rows of a run of fewer
than 50 requests; corebench takes the slowest instead. Times are the
histogram's (3 significant digits), like every figure of the report."""

from __future__ import annotations

from corebench.config.settings import LoadConfig
from corebench.output.ranks import Ranks
from corebench.result import LoadResult

HEADER = "Percentage served,Time in ms"


class AbCsv:
    name = "csv"

    def render(self, result: LoadResult, _config: LoadConfig) -> str:
        total = result.latency_us.total
        lines = [HEADER]
        n = total.count
        if n:
            ranks = Ranks(total.histogram)
            for i in range(101):
                if i == 0:
                    us = total.min_us
                elif i == 100:
                    us = total.max_us
                else:
                    us = ranks.value_at_rank(min(int(0.5 + n * i / 100.0), n - 1) + 1)
                lines.append(f"{i},{us / 1000.0:.3f}")
        return "\n".join(lines) + "\n"
