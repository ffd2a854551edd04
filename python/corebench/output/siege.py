"""siege's end-of-run summary: the labels, tabs and printf formats of siege 4.x
(JoeDog/siege src/main.c, the block after "Lifting the server siege..."), so
scripts that parse siege keep working.

The figures follow siege's src/data.c:
  data_get_response_time   = total / count          (sum of response times / hits)
  data_get_transaction_rate = count / elapsed
  data_get_throughput      = bytes / (elapsed * 1024 * 1024)
  data_get_concurrency     = total / elapsed
  data_get_megabytes       = bytes / (1024 * 1024)
and each returns 0 when its divisor is 0. main.c prints availability as
count / (count + my.failed) * 100, or 0 when count is 0.

Where corebench counts differently from siege: siege leaves 408 and 5xx
responses out of its hits and adds them to my.failed with socket errors; here
every response is a transaction, 4xx and 5xx count as failed transactions, and
availability is responses over attempts (responses plus requests that got none),
the same denominator siege ends up with."""

from __future__ import annotations

from corebench.config.settings import LoadConfig
from corebench.result import LoadResult

_MB = 1024.0 * 1024.0


def _lines(r: LoadResult) -> list[str]:
    total = r.latency_us.total
    count = r.responses
    elapsed = r.duration_s
    # Requests that got no response (connect, receive, timeout...). Not r.failed:
    # that also holds ab's Length rule, which fails responses siege would accept.
    no_response = max(r.requests - r.responses, 0)
    good = sum(n for code, n in r.status_counts.items() if code < 400)
    failed = count - good + no_response
    mb = r.bytes.body / _MB
    sum_s = total.mean_us * total.count / 1e6  # siege's data->total
    has = total.count > 0

    def per_s(x: float) -> float:
        return x / elapsed if elapsed > 0 else 0.0

    return [
        f"Transactions:\t\t{count:12d} hits",
        f"Availability:\t\t{count / (count + no_response) * 100 if count else 0.0:12.2f} %",
        f"Elapsed time:\t\t{elapsed:12.2f} secs",
        f"Data transferred:\t{mb:12.2f} MB",
        f"Response time:\t\t{total.mean_us / 1e6 if has else 0.0:12.2f} secs",
        f"Transaction rate:\t{per_s(count):12.2f} trans/sec",
        f"Throughput:\t\t{per_s(mb):12.2f} MB/sec",
        f"Concurrency:\t\t{per_s(sum_s):12.2f}",
        f"Successful transactions:{good:12d}",
        f"Failed transactions:\t{failed:12d}",
        f"Longest transaction:\t{total.max_us / 1e6 if has else 0.0:12.2f}",
        f"Shortest transaction:\t{total.min_us / 1e6 if has else 0.0:12.2f}",
    ]


class SiegeText:
    name = "siege"

    def render(self, result: LoadResult, _config: LoadConfig) -> str:
        return "\n".join(_lines(result)) + "\n"
