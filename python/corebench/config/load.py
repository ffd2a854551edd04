"""The configuration of one load run, validated before the engine sees it.
Field names and meanings match the engine's `LoadConfig` (Rust)."""

from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, model_validator


class LoadConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str
    concurrency: int = Field(1, ge=1, le=1_000_000)
    requests: Optional[int] = Field(None, ge=1)
    duration_s: Optional[float] = Field(None, gt=0)
    keep_alive: bool = False
    http_version: Literal["1.0", "1.1"] = "1.1"
    method: str = Field("GET", min_length=1, pattern=r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
    headers: list[tuple[str, str]] = []
    body: bytes = b""
    content_type: Optional[str] = None
    timeout_s: float = Field(30.0, gt=0)
    threads: int = Field(0, ge=0, le=1024)
    variable_length: bool = False
    allow_remote: bool = False
    # See the engine's LoadConfig: keeps a worker polling after each batch, so
    # the server does not pay for waking it; only with the generator on its own cores.
    busy_poll_us: int = Field(0, ge=0, le=10_000)

    @model_validator(mode="before")
    @classmethod
    def _default_count(cls, data: Any) -> Any:
        # ab's default when neither a count nor a duration is given: one request.
        if isinstance(data, dict) and data.get("requests") is None and data.get("duration_s") is None:
            return {**data, "requests": 1}
        return data

    @model_validator(mode="after")
    def _bounded(self) -> "LoadConfig":
        if self.duration_s is None and self.requests is not None and self.concurrency > self.requests:
            raise ValueError(
                f"concurrency (-c) {self.concurrency} is greater than the {self.requests} requests (-n) "
                "to make: lower -c or raise -n"
            )
        return self

    def engine_json(self) -> str:
        return self.model_dump_json(exclude={"body"})
