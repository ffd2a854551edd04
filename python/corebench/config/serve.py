"""The configuration of the built-in target server (`corebench serve`).
Field names match the engine's `ServeConfig` (Rust)."""

from __future__ import annotations

import os
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class ServeConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str = "127.0.0.1"
    port: int = Field(0, ge=0, le=65535)
    model: Literal["prefork", "threads", "async"] = "async"
    workers: int = Field(default_factory=lambda: os.cpu_count() or 1, ge=1, le=4096)
    stall_ms: int = Field(0, ge=0)
    stall_every_ms: int = Field(0, ge=0)
    access_log: str | None = None
    keep_alive_timeout_s: float = Field(15.0, gt=0)
    db_articles: int = Field(0, ge=0, le=1_000_000)
    db_cache_kb: int = Field(2000, ge=1, le=16 * 1024 * 1024)
    db_file: str | None = None
    site_from_log: str | None = None
    # /dynamic's work and /sleep's pause scaled, per start, by a factor uniform in [1 - jitter, 1 + jitter].
    jitter: float = Field(0.0, ge=0, lt=1)
    # HTTPS with a self-signed certificate made at start (ALPN: h2, http/1.1).
    tls: bool = False

    @model_validator(mode="after")
    def _stall_fits_its_period(self) -> ServeConfig:
        if (self.stall_ms == 0) != (self.stall_every_ms == 0) or self.stall_ms >= max(self.stall_every_ms, 1) > 1:
            raise ValueError("a stall must be shorter than its period, like --stall 500ms/2s")
        return self
