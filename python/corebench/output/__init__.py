"""Output formats: one small interface, one file per format."""

from __future__ import annotations

from typing import Protocol

from corebench.config.load import LoadConfig
from corebench.result import LoadResult


class Format(Protocol):
    """Renders one load result as text."""

    name: str

    def render(self, result: LoadResult, config: LoadConfig) -> str: ...


def get(name: str) -> Format:
    from corebench.output import hgrm, json, siege, text

    formats = {f.name: f for f in (text.AbText(), json.Json(), hgrm.Hgrm(), siege.SiegeText())}
    return formats[name]
