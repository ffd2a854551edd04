"""ab's text report: the labels, layout and rounding of ApacheBench 2.3's
output_results() (support/ab.c), so scripts that parse ab keep working.
corebench's own figures follow ab's block, on lines ab never prints."""

from __future__ import annotations

from collections import Counter

from corebench import __version__
from corebench._engine import LINGER_MIN_IN_FLIGHT
from corebench.config.settings import LoadConfig
from corebench.output import sections
from corebench.output.options import ReportOptions
from corebench.output.verbose import AbVerbose
from corebench.output.wrk import WrkLatency
from corebench.result import LatencySummary, LoadResult

# ab.c's CONF_FMT_STRING: "%5" " %4" " %5.1f" " %6" " %7"
_ROW = "{:5d} {:4d} {:5.1f} {:6d} {:7d}"
# With -S (no confidence estimators): "%5" " %5" "%5", min avg max.
_ROW_S = "{:5d} {:5d}{:5d}"
_AB_PERCENTS = (50, 66, 75, 80, 90, 95, 98, 99)


def _round_ms(us: float) -> int:
    # ab.c: #define ap_round_ms(a) ((apr_time_t)((a) + 500)/1000)
    return int((us + 500) // 1000)


def _sane(what: str, mean: int, median: int, sd_ms: float) -> list[str]:
    # ab.c's SANE(): the mean and median (in rounded ms) compared with the deviation.
    d = abs(mean - median)
    if d > 2 * sd_ms:
        return [
            f"ERROR: The median and mean for {what} are more than twice the standard",
            "       deviation apart. These results are NOT reliable.",
        ]
    if d > sd_ms:
        return [
            f"WARNING: The median and mean for {what} are not within a normal deviation",
            "        These results are probably not that reliable.",
        ]
    return []


def _row(label: str, h: LatencySummary) -> tuple[str, tuple[int, int, float]]:
    mean, median, sd = _round_ms(h.mean_us), _round_ms(h.median_us), h.stdev_us / 1000.0
    line = f"{label:<12}" + _ROW.format(_round_ms(h.min_us), mean, sd, median, _round_ms(h.max_us))
    return line, (mean, median, sd)


def _connection_times(r: LoadResult, confidence: bool = True) -> list[str]:
    lat = r.latency_us
    header = "              min  mean[+/-sd] median   max" if confidence else "              min   avg   max"
    out = ["", "Connection Times (ms)", header]
    warnings: list[str] = []
    for label, what, h in (
        ("Connect:", "the initial connection time", lat.connect),
        ("Processing:", "the processing time", lat.processing),
        ("Waiting:", "the waiting time", lat.waiting),
        ("Total:", "the total time", lat.total),
    ):
        if not confidence:
            out.append(f"{label:<12}" + _ROW_S.format(_round_ms(h.min_us), _round_ms(h.mean_us), _round_ms(h.max_us)))
            continue
        line, (mean, median, sd) = _row(label, h)
        out.append(line)
        warnings += _sane(what, mean, median, sd)
    return out + warnings


def _percentages(r: LoadResult) -> list[str]:
    total = r.latency_us.total
    out = ["", "Percentage of the requests served within a certain time (ms)"]
    out += [f"  {p}%  {_round_ms(total.at(float(p))):5d}" for p in _AB_PERCENTS]
    out.append(f" 100%  {_round_ms(total.max_us):5d} (longest request)")
    return out


def _concurrency_line(r: LoadResult) -> str:
    """ab's Concurrency Level is the closed loop's fixed number of requests
    in flight. An open loop's connections are only an upper bound (the rate
    sets the load), and users think between requests: said as such."""
    if r.model == "users":
        think = ""
        if r.think_s is not None:
            lo, hi = r.think_s
            think = f" (think time {lo:g}–{hi:g} s after each response, uniform)" if hi > 0 else " (no think time)"
        return f"Users:                  {r.concurrency}{think}"
    if r.model in ("rate", "replay") and r.schedule is not None:
        return f"Connections (at most):  {r.concurrency} (open loop: the schedule set the load)"
    if r.streams > 1:
        return (
            f"Concurrency Level:      {r.concurrency * r.streams} ({r.concurrency} connections × {r.streams} streams)"
        )
    return f"Concurrency Level:      {r.concurrency}"


def _time_per_request(r: LoadResult, t: float) -> str:
    # ab derives it as concurrency × time / requests, true only when every
    # connection always has a request in flight: a closed loop.
    if r.model == "closed":
        in_flight = r.concurrency * r.streams
        return f"Time per request:       {in_flight * t * 1000 / r.requests:.3f} [ms] (mean)"
    return f"Time per request:       {r.latency_us.total.mean_us / 1000:.3f} [ms] (mean response time)"


def sends_body(c: LoadConfig) -> bool:
    """ab's send_body: a body file was given (-p or -u), even an empty one,
    whose Content-Type is then set; ab then reports what was sent."""
    return bool(c.body) or c.content_type is not None


def _ab_block(r: LoadResult, c: LoadConfig, o: ReportOptions) -> list[str]:
    t = r.duration_s
    # ab prints its -v lines while it runs, between "(be patient)..." and "..done".
    verbose = AbVerbose(o.verbosity).render(r, c)
    out = [
        f"This is corebench, Version {__version__} (report in the layout of ApacheBench, Version 2.3)",
        "",
        f"Benchmarking {r.host} (be patient)...{verbose}..done",
        "",
        "",
        # ab keeps the first word of the Server header.
        f"Server Software:        {(r.server_software or '').split(' ')[0]}",
        f"Server Hostname:        {r.host}",
        f"Server Port:            {r.port}",
        "",
        f"Document Path:          {r.path}",
        "Document Length:        Variable"
        if c.variable_length
        else f"Document Length:        {r.document_length or 0} bytes",
        "",
        _concurrency_line(r),
        f"Time taken for tests:   {t:.3f} seconds",
        f"Complete requests:      {r.requests}",
        f"Failed requests:        {r.failed}",
    ]
    e = r.errors
    if r.failed:
        out.append(f"   (Connect: {e.connect}, Receive: {e.receive}, Length: {e.length}, Exceptions: {e.exceptions})")
    if e.timeout:
        out.append(f"Timed out requests:     {e.timeout}")
    if r.non_2xx:
        out.append(f"Non-2xx responses:      {r.non_2xx}")
    if r.keep_alive:
        out.append(f"Keep-Alive requests:    {r.keep_alive_requests}")
    out.append(f"Total transferred:      {r.bytes.received} bytes")
    if sends_body(c):
        # As in ab, whole requests: headers and body.
        out.append(f"Total body sent:        {r.bytes.sent}")
    out.append(f"HTML transferred:       {r.bytes.body} bytes")
    if t > 0 and r.requests:
        out += [
            f"Requests per second:    {r.requests / t:.2f} [#/sec] (mean)",
            *_successful(r, t),
            _time_per_request(r, t),
            f"Time per request:       {t * 1000 / r.requests:.3f} [ms] (mean, across all concurrent requests)",
            f"Transfer rate:          {r.bytes.received / 1024 / t:.2f} [Kbytes/sec] received",
        ]
        if sends_body(c):
            out += [
                f"                        {r.bytes.sent / 1024 / t:.2f} kb/s sent",
                f"                        {(r.bytes.received + r.bytes.sent) / 1024 / t:.2f} kb/s total",
            ]
    if r.responses:
        out += _connection_times(r, o.confidence)
    if r.responses > 1 and o.percentiles:
        out += _percentages(r)
    return out


def _successful(r: LoadResult, t: float) -> list[str]:
    """ab's rate counts every request that ended, failures too; where some
    failed, the rate of successes (the throughput of docs/architecture.md#terms) beside it."""
    if r.successes == r.requests:
        return []
    return [f"Successful per second:  {r.successes / t:.2f} [#/sec] (mean; failures are not throughput)"]


def _holding(r: LoadResult) -> str:
    """When the waits held responses (`linger`), for the Generator CPU line."""
    if not r.linger_percent:
        return ""
    if r.linger != "auto" and r.held_waits == 0:
        # Set to hold, but no wait did: saying it held would be untrue.
        if not r.responses:
            return ""
        # Name every condition a wait holds on, not a guess at which failed.
        why = f"a wait holds only with {LINGER_MIN_IN_FLIGHT} or more requests in flight on its thread"
        why += ", none on a connection it is opening" + (", and not while it busy-polls" if r.busy_poll_us else "")
        return f", holding no responses: {why}"
    if r.linger != "auto":
        return f", holding responses up to {r.linger_percent}% of their time"
    p = r.linger_probes
    if not p.probes:
        # A run too short or too slow for a probe to decide (its phases
        # of holding, if any, were under half a second).
        return ""
    held = f"up to {r.linger_percent}% of their time" if p.held else "only to probe"
    return f", holding responses {held}: {p.held} of {p.probes} probes showed it cost the server no load"


def _corebench_block(r: LoadResult, c: LoadConfig) -> list[str]:
    cores = r.generator_cpu_s / r.duration_s if r.duration_s > 0 else 0.0
    total = r.latency_us.total
    out = [
        "",
        f"Generator CPU:          {r.cpu.user_s:.2f} s user, {r.cpu.system_s:.2f} s system "
        f"({cores:.2f} of a core over the run, {r.threads} thread{'s' if r.threads != 1 else ''} on {r.io}"
        + (f", busy-polling {r.busy_poll_us} us: the CPU figure is no sign of saturation" if r.busy_poll_us else "")
        + _holding(r)
        + ")",
    ]
    if r.http2 is not None:
        out.append(_http2_line(r))
    if r.responses:
        tail = ", ".join(f"p{p:g} {total.at(p) / 1000:.3f}" for p in (99.9, 99.99))
        out.append(f"Latency tail (ms):      {tail}, max {total.max_us / 1000:.3f}")
    if sends_body(c) and not c.urls:
        # ab's "Total body sent" counts headers too, so it differs from ab's
        # whenever the headers do; the body itself is the file's bytes.
        out.append(
            f"Request body:           {len(c.body)} bytes per request (Total body sent counts whole requests, "
            "headers too, as ab's does)"
        )
    # The engine keeps the first few errors' messages; a dead port gives the
    # same one each time: printed once, with how many of the samples it was.
    for sample, n in Counter(r.error_samples).items():
        times = f" ({n} of the first {len(r.error_samples)} errors)" if n > 1 else ""
        out.append(f"Error sample:           {sample}{times}")
    if r.interrupted:
        out.append(f"Interrupted:            stopped early; the figures cover the {r.duration_s:.3f} s measured")
    return out


def _http2_line(r: LoadResult) -> str:
    h = r.http2
    assert h is not None
    parts = [
        f"{r.streams} streams per connection asked, at most {h.peak_streams} in flight on one",
        f"{h.connections} connections opened ({h.requests_per_connection_mean:.0f} requests each on average)",
    ]
    if h.server_max_streams is not None and h.server_max_streams < r.streams:
        parts.append(
            f"the server allows {h.server_max_streams} concurrent streams, so the rest waited in the client "
            "(inside their latency)"
        )
    if h.goaways:
        parts.append(f"{h.goaways} GOAWAY")
    if h.resets:
        parts.append(f"{h.resets} streams reset by the server")
    if h.flow_control_stalls:
        parts.append(f"{h.flow_control_stalls} request bodies waited for the server's flow-control window")
    return "HTTP/2:                 " + "; ".join(parts)


def _wrk_block(r: LoadResult, c: LoadConfig, o: ReportOptions) -> list[str]:
    if not o.latency:
        return []
    return [""] + WrkLatency().render(r, c).rstrip("\n").split("\n")


class AbText:
    name = "text"

    def __init__(self, options: ReportOptions | None = None) -> None:
        self.options = options or ReportOptions()

    def render(self, result: LoadResult, config: LoadConfig) -> str:
        o = self.options
        blocks = (
            _ab_block(result, config, o)
            + _wrk_block(result, config, o)
            + _corebench_block(result, config)
            + sections.model_sections(result)
        )
        return "\n".join(blocks) + "\n"
