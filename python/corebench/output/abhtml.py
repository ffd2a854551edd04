"""ab's -w report: its figures as an HTML table, in the markup of ab 2.3's
output_html_results() (support/ab.c) with ab's default attributes (none on
<table> and <tr>, bgcolor=white on the cells), so pages that embed ab's
table keep working. As in ab, it has fewer rows than the text report: the
Connection Times are min, avg and max only, with ab's arithmetic (the
averages from the rounded sums, Processing as Total minus Connect). Text
from the server (its Server header) and the URL is HTML-escaped, which ab
does not do. Open loops and users say what their connections were, as the
text report does."""

from __future__ import annotations

from html import escape

from corebench import __version__
from corebench.config.settings import LoadConfig
from corebench.output.text import sends_body
from corebench.result import LatencySummary, LoadResult

_TABLE, _TR, _TD = "", "", "bgcolor=white"  # ab's -x, -y, -z defaults


def _ms(us: float) -> int:
    # ab.c: #define ap_round_ms(a) ((apr_time_t)((a) + 500)/1000)
    return int((us + 500) // 1000)


def _row(label: str, value: object) -> str:
    return f"<tr {_TR}><th colspan=2 {_TD}>{label}</th><td colspan=2 {_TD}>{value}</td></tr>"


def _more(value: str) -> str:
    return f"<tr {_TR}><td colspan=2 {_TD}>&nbsp;</td><td colspan=2 {_TD}>{value}</td></tr>"


def _concurrency(r: LoadResult) -> str:
    if r.model == "users":
        return _row("Users:", r.concurrency)
    if r.model in ("rate", "replay") and r.schedule is not None:
        return _row("Connections (at most):", f"{r.concurrency} (open loop: the schedule set the load)")
    return _row("Concurrency Level:", r.concurrency)


def _times(label: str, lo: int, avg: int, hi: int) -> str:
    cells = "".join(f"<td {_TD}>{v:5d}</td>" for v in (lo, avg, hi))
    return f"<tr {_TR}><th {_TD}>{label}</th>{cells}</tr>"


def _connection_times(connect: LatencySummary, total: LatencySummary) -> list[str]:
    done = total.count
    # ab sums the times, rounds the sums to ms, then divides (integers).
    con_sum, tot_sum = _ms(connect.mean_us * done), _ms(total.mean_us * done)
    con_min, con_max, tot_min, tot_max = (_ms(x) for x in (connect.min_us, connect.max_us, total.min_us, total.max_us))
    return [
        f"<tr {_TR}><th {_TD} colspan=4>Connection Times (ms)</th></tr>",
        f"<tr {_TR}><th {_TD}>&nbsp;</th> <th {_TD}>min</th>   <th {_TD}>avg</th>   <th {_TD}>max</th></tr>",
        _times("Connect:", con_min, con_sum // done, con_max),
        _times("Processing:", tot_min - con_min, tot_sum // done - con_sum // done, tot_max - con_max),
        _times("Total:", tot_min, tot_sum // done, tot_max),
    ]


class AbHtml:
    name = "html"

    def render(self, result: LoadResult, config: LoadConfig) -> str:
        r, e, t = result, result.errors, result.duration_s
        out = [
            "<p>",
            f" This is corebench, Version {__version__} <i>(report in the layout of ApacheBench, Version 2.3)</i><br>",
            "</p>",
            "<p>",
            "..done",
            "",
            "",
            f"<table {_TABLE}>",
            _row("Server Software:", escape((r.server_software or "").split(" ")[0])),
            _row("Server Hostname:", escape(r.host)),
            _row("Server Port:", r.port),
            _row("Document Path:", escape(r.path)),
            _row("Document Length:", "Variable" if config.variable_length else f"{r.document_length or 0} bytes"),
            _concurrency(r),
            _row("Time taken for tests:", f"{t:.3f} seconds"),
            _row("Complete requests:", r.requests),
            _row("Failed requests:", r.failed),
        ]
        if r.failed:
            # ab's HTML leaves Receive out of this line.
            out.append(
                f"<tr {_TR}><td colspan=4 {_TD} >   (Connect: {e.connect}, Length: {e.length}, "
                f"Exceptions: {e.exceptions})</td></tr>"
            )
        if r.non_2xx:
            out.append(_row("Non-2xx responses:", r.non_2xx))
        if r.keep_alive:
            out.append(_row("Keep-Alive requests:", r.keep_alive_requests))
        out.append(_row("Total transferred:", f"{r.bytes.received} bytes"))
        if sends_body(config):
            out.append(_row("Total body sent:", r.bytes.sent))
        out.append(_row("HTML transferred:", f"{r.bytes.body} bytes"))
        if t > 0:
            out += [
                _row("Requests per second:", f"{r.requests / t:.2f}"),
                *([_row("Successful per second:", f"{r.successes / t:.2f}")] if r.successes != r.requests else []),
                _row("Transfer rate:", f"{r.bytes.received / 1024 / t:.2f} kb/s received"),
            ]
            if sends_body(config):
                out += [
                    _more(f"{r.bytes.sent / 1024 / t:.2f} kb/s sent"),
                    _more(f"{(r.bytes.received + r.bytes.sent) / 1024 / t:.2f} kb/s total"),
                ]
        if r.latency_us.total.count:
            out += _connection_times(r.latency_us.connect, r.latency_us.total)
        out.append("</table>")
        return "\n".join(out) + "\n"
