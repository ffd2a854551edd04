"""The configuration of one load run, validated before the engine sees it.
Field names and meanings match the engine's `LoadConfig` (Rust)."""

from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, model_validator


class _Config(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RateConfig(_Config):
    """Open loop: `rps` requests per second, or a linear ramp from `rps` to
    `end_rps` over `ramp_s` seconds, then `end_rps`."""

    rps: float = Field(ge=0, le=10_000_000)
    end_rps: Optional[float] = Field(None, gt=0, le=10_000_000)
    ramp_s: Optional[float] = Field(None, gt=0)

    @model_validator(mode="after")
    def _ramp(self) -> "RateConfig":
        if (self.end_rps is None) != (self.ramp_s is None):
            raise ValueError("a ramp needs both a rate range START..END and a ramp duration")
        if self.end_rps is None and self.rps <= 0:
            raise ValueError("the rate must be more than 0 requests per second")
        return self


class UrlSpec(_Config):
    url: str
    method: str = "GET"
    body_base64: str = ""


class ReplayConfig(_Config):
    """An access log replayed in its order: as fast as `concurrency` allows,
    or at the log's own pace `speed` times faster."""

    path: str
    log_format: Optional[str] = None
    allow_unsafe: bool = False
    limit: Optional[int] = Field(None, ge=1)
    looped: bool = False
    speed: Optional[float] = Field(None, gt=0, le=1e9)


class LoadConfig(_Config):
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
    # The load model (see the engine's LoadConfig): an open-loop rate, users
    # with think time (seconds, MIN..MAX), URL lists, a replayed log.
    rate: Optional[RateConfig] = None
    think_s: Optional[tuple[float, float]] = None
    urls: list[UrlSpec] = []
    random_order: bool = False
    seed: int = Field(1, ge=0, lt=2**64)
    replay: Optional[ReplayConfig] = None

    @model_validator(mode="before")
    @classmethod
    def _default_count(cls, data: Any) -> Any:
        # ab's default when neither a count nor a duration is given: one request.
        if isinstance(data, dict) and data.get("requests") is None and data.get("duration_s") is None:
            if data.get("rate") is not None or data.get("think_s") is not None:
                raise ValueError("an open-loop rate or users with think time need a duration or a request count")
            if data.get("replay") is None:
                return {**data, "requests": 1}
        return data

    @model_validator(mode="after")
    def _bounded(self) -> "LoadConfig":
        if self.replay is not None and self.replay.looped and self.requests is None and self.duration_s is None:
            raise ValueError("a looped replay needs a duration or a request count")
        if self.think_s is not None:
            lo, hi = self.think_s
            if not 0 <= lo <= hi <= 3600:
                raise ValueError(f"think time {lo}..{hi} s is not a range MIN..MAX within an hour")
        closed = self.rate is None and self.replay is None
        if closed and self.duration_s is None and self.requests is not None and self.concurrency > self.requests:
            raise ValueError(
                f"concurrency (-c) {self.concurrency} is greater than the {self.requests} requests (-n) "
                "to make: lower -c or raise -n"
            )
        return self

    def engine_json(self) -> str:
        return self.model_dump_json(exclude={"body"})
