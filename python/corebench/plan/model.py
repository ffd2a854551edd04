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
from corebench.units import parse_duration_s, parse_size_bytes

# An adaptive experiment looks at its intervals from this many rounds on: a
# standard deviation from fewer runs is too unreliable to stop on.
MIN_AUTO_REPETITIONS = 3
# The relative 95% CI half-width an adaptive experiment aims for by default.
DEFAULT_PRECISION = 0.02


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _duration(v: Any) -> float:
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    if isinstance(v, str):
        return parse_duration_s(v)
    raise ValueError('give a duration like "10s", "2m" or a number of seconds')


def _warmup(v: Any) -> Any:
    # A count of warm-up runs, or a length: one warm-up run that long.
    if isinstance(v, str):
        try:
            return {"runs": 1, "length_s": parse_duration_s(v)}
        except ValueError:
            raise ValueError('give warm-up runs as a number (warmup = 1) or a length (warmup = "10s")') from None
    if isinstance(v, int) and not isinstance(v, bool):
        return {"runs": v, "length_s": None}
    return v


class Warmup(_Section):
    runs: int = Field(0, ge=0, le=100)
    # Each warm-up run's length; None: the experiment's duration.
    length_s: float | None = Field(None, gt=0)


class Experiment(_Section):
    name: str = "experiment"
    # Measured runs per point, or "auto": rounds until every point's mean
    # throughput is known within `precision` (Chow & Robbins 1965), at least
    # MIN_AUTO_REPETITIONS and at most `max_repetitions`.
    repetitions: int | Literal["auto"] = 3
    precision: float | None = Field(None, gt=0, lt=1)
    max_repetitions: int = Field(10, ge=MIN_AUTO_REPETITIONS, le=1000)
    # Run after each start of the target (before its first measured run),
    # stored, never counted among the repetitions nor in the statistics.
    warmup: Warmup = Warmup()
    # "interleaved": each round visits every configuration once, in a fresh
    # random order, with a fresh start of the target, so drift and warm
    # state spread over configurations instead of posing as their effects;
    # "blocked": a configuration's runs back to back in one target start.
    schedule: Literal["interleaved", "blocked"] = "interleaved"
    # Measure the load generator's own ceiling before the first run.
    calibrate: bool = True
    # Before each measured run, write dirty pages and drop the page cache,
    # dentries and inodes (needs root): every run starts with a cold cache.
    drop_caches: bool = False
    duration_s: float | None = Field(None, gt=0, alias="duration")
    requests: int | None = Field(None, ge=1)
    cooldown_s: float = Field(0.0, ge=0, alias="cooldown")
    # Randomized run order (the default) keeps drift from looking like an effect.
    randomize: bool = True
    seed: int = Field(1, ge=0)

    _durations = field_validator("duration_s", "cooldown_s", mode="before")(classmethod(lambda _cls, v: _duration(v)))
    _warmups = field_validator("warmup", mode="before")(classmethod(lambda _cls, v: _warmup(v)))

    @field_validator("repetitions", mode="before")
    @classmethod
    def _repetitions(cls, v: Any) -> Any:
        if isinstance(v, int) and not isinstance(v, bool) and not 1 <= v <= 1000:
            raise ValueError('give 1 to 1000 measured runs per point, or "auto"')
        if isinstance(v, str) and v != "auto":
            raise ValueError('give a number of measured runs per point, or "auto"')
        return v

    @model_validator(mode="after")
    def _check(self) -> Experiment:
        if self.repetitions == "auto":
            if self.schedule != "interleaved":
                raise ValueError('repetitions = "auto" adds whole rounds: it needs schedule = "interleaved"')
        elif self.precision is not None:
            raise ValueError('precision belongs to repetitions = "auto"')
        return self

    @property
    def target_precision(self) -> float:
        return self.precision if self.precision is not None else DEFAULT_PRECISION

    @property
    def rounds_min(self) -> int:
        """Rounds always run: all of them, or the fewest an adaptive stop may look at."""
        return self.repetitions if isinstance(self.repetitions, int) else MIN_AUTO_REPETITIONS

    @property
    def rounds_max(self) -> int:
        return self.repetitions if isinstance(self.repetitions, int) else self.max_repetitions


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
    # HTTPS (`corebench serve --tls`): the load's URLs are then https://.
    tls: bool = False
    # More `corebench serve` flags, e.g. ["--site-from-log", "access.log"].
    args: list[str] = []

    _args = field_validator("args", mode="before")(classmethod(lambda _cls, v: _argv(v)))


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


# The filesystem types a target's image can have: the names a plan uses,
# each with its mkfs and mount options in targets/filesystem.py.
FsTypeName = Literal["ext4", "ext4-journal", "ext4-ordered", "ext4-writeback", "xfs", "btrfs"]


class Filesystem(_Section):
    """A fresh loop-mounted image for each start of the target, mounted on
    its folder ({dir}); every field may be a factor's placeholder."""

    type: FsTypeName
    # Access times: "atime" writes one on every read (strictatime).
    atime: Literal["atime", "relatime", "noatime"] | None = None
    # More mount options, e.g. ["nobarrier"] or ["commit=60"].
    options: list[str] = []
    # The image's size; sparse, so only what is written takes disk space.
    size_bytes: int = Field(1024**3, ge=128 * 1024**2, alias="size")

    @field_validator("size_bytes", mode="before")
    @classmethod
    def _size(cls, v: Any) -> Any:
        return parse_size_bytes(v) if isinstance(v, str) else v

    @field_validator("options")
    @classmethod
    def _options(cls, v: list[str]) -> list[str]:
        for o in v:
            if not o or any(c in o for c in ", \t\n") or o in ("loop", "remount", "bind", "move"):
                raise ValueError(f"mount option {o!r}: give one option per item, not loop, remount, bind or move")
        return v


def _signal_name(v: str) -> str:
    if not hasattr(signal, v) or not v.startswith("SIG"):
        raise ValueError(f"{v!r} is not a signal name like SIGTERM, SIGINT or SIGWINCH")
    return v


def _ip(v: Any) -> Any:
    if isinstance(v, str):
        try:
            ipaddress.ip_address(v)
        except ValueError:
            raise ValueError(
                f"{v!r} is not an IP address (e.g. 127.0.0.1, or this machine's address for remote agents)"
            ) from None
    return v


class Service(_Section):
    """A process the target needs (a database), started before it in the
    order of `after`, checked ready, stopped after it in reverse; on the
    target's CPUs, in a folder of its own ({NAME_dir}), on a port of its own
    ({NAME_port}), both filled into the target's settings, command, env and
    files."""

    # A ready service by name, its settings overriding the recipe's defaults.
    recipe: Literal["postgresql", "php-fpm"] | None = None
    settings: dict[str, Any] = {}
    # Or any command, with {port} and {dir} its own.
    command: list[str] | None = None
    env: dict[str, str] = {}
    # Rendered into its folder at each start (jinja2), with its {port}, {dir}
    # and the plan's factors.
    files: list[File] = []
    # Polled until it exits 0 (default for a command: its port accepts).
    ready_command: list[str] | None = None
    ready_timeout_s: float = Field(60.0, gt=0, alias="ready_timeout")
    stop_signal: str = "SIGTERM"
    stop_timeout_s: float = Field(30.0, gt=0, alias="stop_timeout")
    # Services started (and ready) before this one.
    after: list[str] = []
    # Cores of its own, taken after the target's (the generator gets the
    # rest); unset, it shares the target's cores and CPU quota.
    cpus: float | None = Field(None, gt=0, le=4096)

    _durations = field_validator("ready_timeout_s", "stop_timeout_s", mode="before")(
        classmethod(lambda _cls, v: _duration(v))
    )
    _argvs = field_validator("command", "ready_command", mode="before")(classmethod(lambda _cls, v: _argv(v)))

    _signal = field_validator("stop_signal")(classmethod(lambda _cls, v: _signal_name(v)))

    @model_validator(mode="after")
    def _one_kind(self) -> Service:
        if (self.recipe is None) == (self.command is None):
            raise ValueError('give a service either a recipe (recipe = "postgresql" or "php-fpm") or a command')
        if self.settings and self.recipe is None:
            raise ValueError('settings belong to a recipe (recipe = "postgresql" or "php-fpm")')
        return self


# What each service adds to the target's placeholders: {NAME_port} etc.
SERVICE_VALUES = ("port", "dir", "host")


def _services(v: dict[str, Service]) -> dict[str, Service]:
    for name, svc in v.items():
        if not name.isidentifier() or not name.islower():
            raise ValueError(f"service name {name!r}: use lower-case letters, digits and _ (e.g. db)")
        unknown = set(svc.after) - set(v)
        if unknown:
            raise ValueError(f"service {name}: after names no service {sorted(unknown)[0]!r}")
    order(v)
    return v


def order(services: dict[str, Service]) -> list[str]:
    """Names in an order that starts each after the ones it names."""
    done: list[str] = []
    pending = dict(services)
    while pending:
        ready = [n for n, s in pending.items() if set(s.after) <= set(done)]
        if not ready:
            raise ValueError(f"services {', '.join(sorted(pending))} wait for each other: break the circle in after")
        for n in ready:
            done.append(n)
            del pending[n]
    return done


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
    # How the cpus are chosen (system.topology): "off", one thread of each
    # physical core; "on", the cores with their sibling threads. "one": on
    # one NUMA node while one holds them; "spread": over the nodes in turn.
    smt: Literal["off", "on"] = "off"
    numa: Literal["one", "spread"] = "one"
    filesystem: Filesystem | None = None
    # Run before each start, in the plan's folder, after the target's files
    # are in place (e.g. static files generated into {dir}/htdocs).
    prepare: list[str] | None = None
    # Processes the target needs (a database): [target.services.db].
    services: dict[str, Service] = {}
    # "config": restart when a factor of the target changes; "point": for every point.
    restart: Literal["config", "point"] = "config"
    # A running server's host, measured through Prometheus node_exporter
    # (its /metrics URL) during each run: per-core CPU, disk, network
    # (`monitor.exporter`). Only with url: a target corebench starts has
    # the local monitor.
    monitor: str | None = None
    # The Ray node (its IP address) that starts, pins and measures the
    # target, on CPUs of that host (`targets.remote`); the load comes from
    # this machine or the [cluster]'s agents. `ray`: the cluster's address,
    # by default [cluster] address.
    node: str | None = None
    ray: str | None = None

    _durations = field_validator("ready_timeout_s", "stop_timeout_s", mode="before")(
        classmethod(lambda _cls, v: _duration(v))
    )
    _argvs = field_validator("command", "version_command", "prepare", mode="before")(
        classmethod(lambda _cls, v: _argv(v))
    )
    _address = field_validator("address", "node", mode="before")(classmethod(lambda _cls, v: _ip(v)))
    _check_services = field_validator("services")(classmethod(lambda _cls, v: _services(v)))

    _signal = field_validator("stop_signal")(classmethod(lambda _cls, v: _signal_name(v)))

    @model_validator(mode="after")
    def _chosen_cpus(self) -> Target:
        if (self.smt, self.numa) != ("off", "one") and self.cpus is None:
            raise ValueError("smt and numa choose the CPUs of cpus = N: give cpus")
        if self.smt == "on" and self.cpus is not None and self.cpus != int(self.cpus):
            raise ValueError('smt = "on" takes whole cores with their siblings: give whole cpus')
        return self

    @model_validator(mode="after")
    def _on_a_node(self) -> Target:
        if self.node is not None and self.url is not None:
            raise ValueError("node starts a target on a Ray node; a running server (url) is not started by corebench")
        if self.ray is not None and self.node is None:
            raise ValueError("ray is the cluster of the target's node: give node (the Ray node's IP address) too")
        return self

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
        if self.monitor is not None and self.url is None:
            raise ValueError("monitor (a node_exporter URL) measures a running server's host: give it with url")
        if self.monitor is not None and not self.monitor.startswith(("http://", "https://")):
            raise ValueError(f"monitor {self.monitor!r}: give node_exporter's URL, e.g. http://HOST:9100/metrics")
        if self.url is not None and self.cpus is not None:
            raise ValueError("cpus limits a target corebench starts; a running server (url) is not started here")
        if self.url is not None and self.services:
            raise ValueError("services are started with a target corebench starts; a running server (url) is not")
        if self.url is not None and self.filesystem is not None:
            raise ValueError("a filesystem is made for a target corebench starts; a running server (url) is not")
        own = [n for n, s in self.services.items() if s.cpus is not None]
        if own and self.cpus is None:
            raise ValueError(
                f"service {own[0]} has cpus of its own, taken after the target's: give the target cpus too "
                "(cpus in [target] or a cpus factor)"
            )
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


class Hackbench(_Section):
    """hackbench (Debian's rt-tests): groups of senders and receivers passing
    messages over sockets (or pipes): CPU-bound and scheduler-heavy, the
    third field report's calibration of what the cores can do."""

    groups: int = Field(10, ge=1, le=1000)
    loops: int = Field(1000, ge=1, le=1_000_000)
    # Threads instead of processes (-T), pipes instead of sockets (-p).
    threads: bool = False
    pipe: bool = False
    # Runs at each cpus level, interleaved over the levels; the median counts.
    repetitions: int = Field(3, ge=1, le=100)


class Baseline(_Section):
    """A CPU baseline measured at each cpus level before the first run, so
    the report shows the server's speedup beside a CPU-bound program's."""

    hackbench: Hackbench


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
    baseline: Baseline | None = None
