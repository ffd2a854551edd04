"""The report stage: one small interface, one file per format (html.py,
md.py, json.py), over data derived from the store alone (data.py)."""

from __future__ import annotations

from typing import Protocol

from corebench.report.data import ReportData, load


class ReportFormat(Protocol):
    name: str

    def render(self, d: ReportData) -> str: ...


def formats() -> dict[str, ReportFormat]:
    """Every format, by the name `--format` takes."""
    from corebench.report.html import Html
    from corebench.report.json import Json
    from corebench.report.md import Markdown

    return {f.name: f for f in (Html(), Markdown(), Json())}


def get(name: str) -> ReportFormat:
    return formats()[name]


__all__ = ["ReportData", "load", "get", "formats"]
