"""The plan's sections, validated with pydantic. `target` and `load` are
checked once per point, after its factor levels are put in."""

from __future__ import annotations

import ipaddress
import signal
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from corebench.config.cluster import ClusterConfig
from corebench.config.settings import LoadSettings
from corebench.plan.objective import SearchSettings
from corebench.units import parse_duration_s


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _duration(v: Any) -> float:
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    if isinstance(v, str):
        return parse_duration_s(v)
    raise ValueError('give a duration like "10s", "2m" or a number of seconds')


class Experiment(_Section):
    name: str = "experiment"
    # Runs per point, the first `warmup` of them stored but left out of the statistics.
    repetitions: int = Field(3, ge=1, le=1000)
    warmup: int = Field(0, ge=0)
    duration_s: float | None = Field(None, gt=0, alias="duration")
    requests: int | None = Field(None, ge=1)
    cooldown_s: float = Field(0.0, ge=0, alias="cooldown")
    # Randomized run order (the default) keeps drift from looking like an effect.
    randomize: bool = True
    seed: int = Field(1, ge=0)

    _durations = field_validator("duration_s", "cooldown_s", mode="before")(classmethod(lambda cls, v: _duration(v)))

    @model_validator(mode="after")
    def _check(self) -> Experiment:
        if self.warmup >= self.repetitions:
            raise ValueError(f"warmup ({self.warmup}) must be fewer than repetitions ({self.repetitions})")
        return self


class Machine(_Section):
    """Facts the analysis uses: the clock, and the price per hour of each
    level of a factor (e.g. `price_per_hour = { cpus = { "1" = 0.04, "2" = 0.08 } }`)."""

    clock_ghz: float | None = Field(None, gt=0)
    price_per_hour: dict[str, dict[str, float]] = {}


def _argv(v: Any) -> Any:
    # A factor's level put into an argument list is an argument: text.
    if isinstance(v, list):
        return [str(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else x for x in v]
    return v


class Builtin(_Section):
    model: Literal["prefork", "threads", "async"] = "async"
    workers: int | None = Field(None, ge=1, le=4096)
    # More `corebench serve` flags, e.g. ["--site-from-log", "access.log"].
    args: list[str] = []

    _args = field_validator("args", mode="before")(classmethod(lambda cls, v: _argv(v)))


class File(_Section):
    """A configuration file rendered for each start of the target (jinja2),
    from `template` (a file, relative to the plan) or inline `content`."""

    path: str
    template: str | None = None
    content: str | None = None

    @model_validator(mode="after")
    def _one_source(self) -> File:
        if (self.template is None) == (self.content is None):
            raise ValueError("give a file either a template or a content")
        # Rendered into the target's own folder, never elsewhere (corebench may run as root).
        if self.path.startswith("/") or ".." in self.path.replace("\\", "/").split("/"):
            raise ValueError(f"path {self.path!r} must stay inside the target's folder: a relative path without '..'")
        return self


def _ip(v: Any) -> Any:
    if isinstance(v, str):
        try:
            ipaddress.ip_address(v)
        except ValueError:
            raise ValueError(
                f"{v!r} is not an IP address (e.g. 127.0.0.1, or this machine's address for remote agents)"
            ) from None
    return v


class Target(_Section):
    # Exactly one of: the built-in server, a command, or a server already running.
    builtin: Builtin | None = None
    command: list[str] | None = None
    url: str | None = None
    # A ready target by name (apache: prefork/worker/event MPMs; nginx), its
    # configuration rendered per start; `settings` override its defaults.
    recipe: Literal["apache", "nginx"] | None = None
    settings: dict[str, Any] = {}
    # Static pages written to {dir}/htdocs as SIZE.html, for static servers.
    pages: list[int] = Field([], max_length=100)
    env: dict[str, str] = {}
    cwd: str | None = None
    files: list[File] = []
    # The address a started target listens on, and the load is sent to:
    # loopback unless agents on other machines must reach it (then with
    # allow_remote = true in [load]). Filled in as {address}.
    address: str = "127.0.0.1"
    # What is polled until it answers; default: the load's URL.
    ready_url: str | None = None
    ready_timeout_s: float = Field(30.0, gt=0, alias="ready_timeout")
    stop_signal: str = "SIGTERM"
    stop_timeout_s: float = Field(10.0, gt=0, alias="stop_timeout")
    # Prints the server's version, stored with the host facts.
    version_command: list[str] | None = None
    cpus: float | None = Field(None, gt=0, le=4096)
    # "config": restart when a factor of the target changes; "point": for every point.
    restart: Literal["config", "point"] = "config"

    _durations = field_validator("ready_timeout_s", "stop_timeout_s", mode="before")(
        classmethod(lambda cls, v: _duration(v))
    )
    _argvs = field_validator("command", "version_command", mode="before")(classmethod(lambda cls, v: _argv(v)))
    _address = field_validator("address", mode="before")(classmethod(lambda cls, v: _ip(v)))

    @field_validator("stop_signal")
    @classmethod
    def _signal(cls, v: str) -> str:
        if not hasattr(signal, v) or not v.startswith("SIG"):
            raise ValueError(f"{v!r} is not a signal name like SIGTERM or SIGWINCH")
        return v

    @model_validator(mode="after")
    def _one_kind(self) -> Target:
        kinds = [k for k in ("builtin", "command", "url", "recipe") if getattr(self, k) is not None]
        if len(kinds) != 1:
            raise ValueError(
                "give exactly one of builtin, recipe (apache, nginx), command (an argument list) "
                "or url (a running server)"
            )
        if self.settings and self.recipe is None:
            raise ValueError('settings belong to a recipe (recipe = "apache" or "nginx")')
        if any(not 0 <= p <= 100 * 1024 * 1024 for p in self.pages):
            raise ValueError("page sizes are bytes from 0 to 100 MiB")
        if self.command is not None and not self.command:
            raise ValueError("command is an empty argument list")
        if self.url is not None and self.cpus is not None:
            raise ValueError("cpus limits a target corebench starts; a running server (url) is not started here")
        return self


class Load(LoadSettings):
    """A plan's [load] table: LoadSettings, the vocabulary of the CLI and the
    Python API, plus `path` on the target's base URL and a `model` that
    states which load the table describes. The run's length and seed come
    from [experiment]."""

    model: Literal["closed", "rate", "users", "replay"] = "closed"
    # Appended to the target's base URL (builtin, command); or a whole `url`.
    path: str = "/"
    # Experiments measure servers in their steady state: connections are kept.
    keep_alive: bool | None = True

    @model_validator(mode="after")
    def _model_settings(self) -> Load:
        for key in ("requests", "duration", "seed", "body"):
            if getattr(self, key) not in (None, b""):
                raise ValueError(f"{key} belongs in [experiment], for every run of the plan")
        need = {"rate": "rate", "users": "think", "replay": "log"}
        if self.model in need and getattr(self, need[self.model]) is None:
            raise ValueError(f"the {self.model} model needs {need[self.model]}")
        for key, model in (("rate", "rate"), ("think", "users"), ("log", "replay")):
            if getattr(self, key) is not None and self.model != model:
                raise ValueError(f"{key} belongs to the {model} model, not {self.model}")
        return self


class Plan(_Section):
    experiment: Experiment = Experiment()
    machine: Machine = Machine()
    # Every run's load spread over agents on a Ray cluster.
    cluster: ClusterConfig | None = None
    factors: dict[str, Any] = {}
    # Validated per point (placeholders filled in) as Target and Load.
    target: dict[str, Any]
    load: dict[str, Any] = {}
    # Pass/fail per point for CI: metric -> condition, e.g. p99 = "<20ms".
    thresholds: dict[str, str] = {}
    # Each run a capacity search (the highest rate within `slo`) instead of a fixed load.
    search: SearchSettings | None = None
