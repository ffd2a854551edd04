"""The versioned machine-readable result: every figure the engine measured."""

from __future__ import annotations

from corebench.config.settings import LoadConfig
from corebench.result import LoadResult


class Json:
    name = "json"

    def render(self, result: LoadResult, _config: LoadConfig) -> str:
        return result.model_dump_json(by_alias=True, indent=2) + "\n"
