"""The configuration of one load run as the engine reads it: the models
generated from the Rust types (`corebench.config.engine`), plus the request
body, which travels beside the JSON because it may be binary. Build one
from `LoadSettings` (`corebench.config.settings.engine_config`), the one
translator shared by the CLI, plans and the Python API."""

from __future__ import annotations

from corebench.config import engine
from corebench.config.engine import AgentShare, RateConfig, ReplayConfig, UrlSpec


class LoadConfig(engine.LoadConfig):
    body: bytes = b""

    def engine_json(self) -> str:
        return self.model_dump_json(exclude={"body"})


__all__ = ["AgentShare", "LoadConfig", "RateConfig", "ReplayConfig", "UrlSpec"]
