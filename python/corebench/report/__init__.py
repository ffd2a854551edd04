"""The report stage: one small interface, one file per format (html.py,
md.py), over data derived from the store alone (data.py)."""

from __future__ import annotations

from typing import Protocol

from corebench.report.data import ReportData, load


class ReportFormat(Protocol):
    name: str

    def render(self, d: ReportData) -> str: ...


def get(name: str) -> ReportFormat:
    from corebench.report.html import Html
    from corebench.report.md import Markdown

    formats = {f.name: f for f in (Html(), Markdown())}
    return formats[name]


__all__ = ["ReportData", "load", "get"]
