"""Output formats: one small interface, one file per format."""

from __future__ import annotations

from typing import Protocol

from corebench.config.settings import LoadConfig
from corebench.output.options import ReportOptions
from corebench.result import LoadResult


class Format(Protocol):
    """Renders one load result as text."""

    name: str

    def render(self, result: LoadResult, config: LoadConfig) -> str: ...


def get(name: str, options: ReportOptions | None = None) -> Format:
    """The format called `name`; `options` lay out the text report (ab's -S,
    -d, -v, wrk's --latency) and set the level of ab's -v lines."""
    from corebench.output import abcsv, abhtml, gnuplot, hgrm, json, siege, text, verbose, wrk

    o = options or ReportOptions()
    formats: tuple[Format, ...] = (
        text.AbText(o),
        json.Json(),
        hgrm.Hgrm(),
        siege.SiegeText(),
        abcsv.AbCsv(),
        gnuplot.Gnuplot(),
        abhtml.AbHtml(),
        wrk.WrkLatency(),
        verbose.AbVerbose(o.verbosity),
    )
    return {f.name: f for f in formats}[name]


__all__ = ["Format", "ReportOptions", "get"]
