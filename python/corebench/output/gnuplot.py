"""ab's -g file: one line per response, tab-separated, in the columns and
formats of ab 2.3's output_results() (support/ab.c):

    starttime                 seconds     ctime  dtime  ttime  wait
    Mon Nov 23 15:34:22 2026  1795448062  0      1      1      0

`starttime` is when the request began, as APR's apr_ctime writes it (local
time, English names, the day as two digits), `seconds` the same as a Unix
time; `ctime` the connect time, `dtime` total minus connect, `ttime` the
total and `wait` the time from the request's last byte sent to the
response's first byte, each in whole milliseconds rounded as ab rounds
them. As in ab, the lines are sorted by total time, fastest first.

It needs each response's own figures, which the engine keeps only when
asked (`trace`, up to its limit; those left out are counted in the result)."""

from __future__ import annotations

import time

from corebench.config.settings import LoadConfig
from corebench.result import LoadResult

HEADER = "starttime\tseconds\tctime\tdtime\tttime\twait"
_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def apr_ctime(unix_s: int) -> str:
    """APR's apr_ctime: "Wed Jun 30 21:49:08 1993", in local time."""
    t = time.localtime(unix_s)
    return (
        f"{_DAYS[t.tm_wday]} {_MONTHS[t.tm_mon - 1]} {t.tm_mday:02d} "
        f"{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d} {t.tm_year}"
    )


def _ms(us: int) -> int:
    # ab.c: #define ap_round_ms(a) ((apr_time_t)((a) + 500)/1000)
    return (us + 500) // 1000


class Gnuplot:
    name = "gnuplot"

    def render(self, result: LoadResult, _config: LoadConfig) -> str:
        t = result.trace
        if t is None:
            raise ValueError("ab's gnuplot file needs each response's figures: run the load with trace on")
        stamps: dict[int, str] = {}
        lines = [HEADER]
        for i in sorted(range(len(t.total_us)), key=t.total_us.__getitem__):
            second = int(result.started_unix_s + t.start_us[i] / 1e6)
            stamp = stamps.get(second) or stamps.setdefault(second, apr_ctime(second))
            connect, total = t.connect_us[i], t.total_us[i]
            lines.append(
                f"{stamp}\t{second}\t{_ms(connect)}\t{_ms(total - connect)}\t{_ms(total)}\t{_ms(t.waiting_us[i])}"
            )
        return "\n".join(lines) + "\n"
