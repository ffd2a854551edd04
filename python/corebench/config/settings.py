"""The load as a person states it, and the one translator into the engine's
configuration.

`LoadSettings` is the single vocabulary of `corebench load`/`replay` flags,
a plan's `[load]` table and `corebench.load(...)`: durations as `"10s"` or
seconds, a rate as `5000` or `"100..5000"` with a ramp, think time as
`"2s"` or `"0.5s..2s"`, a URL file, a log. `engine_config()` turns it into
the engine's `LoadConfig`, whose fields, defaults and limits are generated
from the Rust types (`corebench.config.engine`): a setting left unset here
takes the engine's default, and a value out of the engine's bounds is
refused by the generated model and reported under the key given here."""

from __future__ import annotations

import base64
import math
from pathlib import Path
from typing import Annotated, Any, get_args

import pydantic
from pydantic import BaseModel, BeforeValidator, ConfigDict

from corebench.config import engine
from corebench.errors import UsageError
from corebench.units import parse_duration_s, parse_rate, parse_span_s


class LoadConfig(engine.LoadConfig):
    """The configuration of one load run as the engine reads it: the models
    generated from the Rust types (`corebench.config.engine`), plus the
    request body, which travels beside the JSON because it may be binary.
    Built by `engine_config` below, the one translator shared by the CLI,
    plans and the Python API."""

    body: bytes = b""

    def engine_json(self) -> str:
        return self.model_dump_json(exclude={"body"})


def _seconds(v: Any) -> Any:
    if isinstance(v, str):
        return parse_duration_s(v)
    if isinstance(v, float) and not math.isfinite(v):
        raise ValueError("give a finite number of seconds")
    return v


Seconds = Annotated[float, BeforeValidator(_seconds)]

#: The protocols `http` can name, as the engine's `http_version` lists them
#: (1.0, 1.1, 2): its generated type is a union of literals, 1.x and 2.
HTTP_VERSIONS: tuple[str, ...] = tuple(
    v for part in get_args(LoadConfig.model_fields["http_version"].annotation) for v in get_args(part)
)

#: An open loop opens connections as it needs them, up to this many, unless told.
OPEN_LOOP_CONNECTIONS = 1000


# The engine counts requests in an unsigned 64-bit integer.
MAX_REQUESTS = 2**64 - 1


class LoadSettings(BaseModel):
    """One load, in the words of the CLI, plans and the Python API. `None`
    means: not said, the engine's default (or the rule given beside it)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str | None = None
    # Connections (closed loop) or the most connections (open loop); default
    # 1, or OPEN_LOOP_CONNECTIONS with a rate or a timed replay.
    concurrency: int | None = None
    # Neither requests nor duration: one request, as ab.
    requests: int | None = None
    duration: Seconds | None = None
    keep_alive: bool | None = None
    # The protocol: "1.0", "1.1" (the default) or "2" (HTTP/2: h2c with prior
    # knowledge for http://, ALPN for https://).
    http: str | None = None
    # HTTP/2: requests in flight per connection (h2load's -m); concurrency × streams in all.
    streams: int | None = None
    method: str | None = None
    headers: list[tuple[str, str]] = []
    body: bytes = b""
    content_type: str | None = None
    timeout: Seconds | None = None
    threads: int | None = None
    # Also on with a URL list or a replay: their pages differ in length.
    variable_length: bool | None = None
    allow_remote: bool | None = None
    busy_poll: Seconds | None = None
    # io_uring: when a wait may hold responses, to wake once for many: "auto"
    # (the engine's default: where a probe shows it costs the server no load),
    # "off" (or 0), "always", or a percentage of the response time to always
    # hold for (1 to 25).
    linger: int | str | None = None
    # The load threads' I/O: "auto" (io_uring where it works), "uring" or "epoll".
    io: str | None = None
    # Open loop: requests per second, or START..END with `ramp`.
    rate: float | str | None = None
    ramp: Seconds | None = None
    # How an open loop spaces its requests: "uniform" (the engine's default) or "poisson".
    arrivals: str | None = None
    # Users with think time (siege -d): "2s" is uniform in 0..2 s, or MIN..MAX.
    think: float | str | None = None
    # A file of URLs in siege's format, relative to the plan (or the current folder).
    urls: str | None = None
    random: bool | None = None
    seed: int | None = None
    # An access log replayed instead of the URL.
    log: str | None = None
    speed: float | None = None
    log_format: str | None = None
    allow_unsafe: bool | None = None
    limit: int | None = None
    loop: bool | None = None
    # ab's -X: an HTTP proxy, HOST:PORT on a loopback address, that every
    # request goes to with the URL in absolute form.
    proxy: str | None = None
    # ab's -A: USER:PASSWORD, sent as HTTP Basic authorization (RFC 7617).
    auth: str | None = None
    # ab's -C: name=value cookies, all sent in one Cookie header (RFC 6265 §5.4).
    cookies: list[str] = []
    # Keep each response's timings and status in the result (ab's -g file).
    trace: bool | None = None
    # Keep the request's and the first response's heads (ab's -v 2).
    heads: bool | None = None

    @pydantic.field_validator("http")
    @classmethod
    def _http(cls, v: str | None) -> str | None:
        # Named here, whole: the engine's model splits HTTP/2 from 1.x and
        # would name only one side of the choice.
        if v is not None and v not in HTTP_VERSIONS:
            raise ValueError(f"{v!r} is not a protocol corebench speaks: give {', '.join(HTTP_VERSIONS)}")
        return v

    @pydantic.field_validator("threads")
    @classmethod
    def _threads(cls, v: int | None) -> int | None:
        # The engine reads 0 as "one per CPU": said by leaving it out, so
        # that a 0 from a typo or a script is not silently a different run.
        if v is not None and v < 1:
            raise ValueError(f"{v} threads: give 1 or more (leave it out for one per available CPU)")
        return v

    @pydantic.field_validator("requests")
    @classmethod
    def _requests(cls, v: int | None) -> int | None:
        if v is not None and v > MAX_REQUESTS:
            raise ValueError(f"{v:,} requests is more than the engine counts (at most {MAX_REQUESTS:,}): give fewer")
        return v

    @pydantic.field_validator("headers", mode="before")
    @classmethod
    def _headers(cls, v: Any) -> Any:
        # A plan writes headers as a table; the CLI and the API as pairs.
        return list(v.items()) if isinstance(v, dict) else v

    @property
    def open_loop(self) -> bool:
        return self.rate is not None or (self.log is not None and self.speed is not None)


def _linger(v: int | str) -> dict[str, Any]:
    """`linger` as said -> the engine's `linger` and `linger_percent`."""
    modes = get_args(LoadConfig.model_fields["linger"].annotation)
    if v in modes:
        return {"linger": v}
    try:
        percent = int(v)
    except ValueError:
        raise SettingError("linger", f"{v!r} is not {', '.join(modes)} or a percentage of the response time") from None
    if percent < 0:
        raise SettingError("linger", f"{percent} is negative: give off (or 0), auto, always, or a percentage (1-25)")
    return {"linger": "off"} if percent == 0 else {"linger": "always", "linger_percent": percent}


class SettingError(UsageError):
    """A setting the engine refuses: `key` is the LoadSettings field at fault."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


# Engine field -> the setting that fills it, for naming a refused value in the
# user's words. Fields not here have the setting's own name.
ENGINE_TO_SETTING = {
    "http_version": "http",
    "duration_s": "duration",
    "timeout_s": "timeout",
    "busy_poll_us": "busy_poll",
    "linger_percent": "linger",
    "think_s": "think",
    "random_order": "random",
    "rate.rps": "rate",
    "rate.end_rps": "rate",
    "rate.ramp_s": "ramp",
    "rate.arrivals": "arrivals",
    "replay.path": "log",
    "replay.speed": "speed",
    "replay.limit": "limit",
    "replay.looped": "loop",
    "replay.log_format": "log_format",
    "replay.allow_unsafe": "allow_unsafe",
    "replay": "log",
    "urls": "urls",
    "capture_heads": "heads",
}
# Engine fields no entry point sets, and why.
INTERNAL = {
    "agent": "set by corebench for each agent of a distributed load",
    "start_at_unix_s": "set by corebench so a distributed load's agents start together",
    "user_agent": "corebench names itself and its version in every request",
    "live_bounds_us": "set by a capacity search for each step's objective (runner.sequential)",
}


def setting_of(engine_field: str) -> str:
    return ENGINE_TO_SETTING.get(engine_field, ENGINE_TO_SETTING.get(engine_field.split(".")[0], engine_field))


def engine_config(s: LoadSettings, *, base_dir: Path = Path(".")) -> LoadConfig:
    """The one translator: settings as stated -> the engine's LoadConfig.
    `base_dir` is where relative file names (URL files, logs) are read from.
    Raises SettingError naming the setting at fault."""
    if s.url is None:
        raise SettingError("url", "give the URL to load")
    out: dict[str, Any] = {"url": s.url, "headers": s.headers + _auth(s) + _cookies(s)}
    passthrough = {
        "proxy": s.proxy,
        "trace": s.trace,
        "capture_heads": s.heads,
        "keep_alive": s.keep_alive,
        "http_version": s.http,
        "streams": s.streams,
        "method": s.method,
        "content_type": s.content_type,
        "threads": s.threads,
        "allow_remote": s.allow_remote,
        "seed": s.seed,
        "random_order": s.random,
        "duration_s": s.duration,
        "timeout_s": s.timeout,
        "requests": s.requests,
        "io": s.io,
    }
    out.update({k: v for k, v in passthrough.items() if v is not None})
    if s.busy_poll is not None:
        out["busy_poll_us"] = round(s.busy_poll * 1e6)
    if s.linger is not None:
        out.update(_linger(s.linger))
    out["concurrency"] = s.concurrency if s.concurrency is not None else (OPEN_LOOP_CONNECTIONS if s.open_loop else 1)
    out.update(_pacing(s))
    out.update(_workload(s, base_dir))
    for key, value in out.items():
        _utf8(key, value)
    listed = s.urls is not None or s.log is not None
    if s.variable_length or listed:
        out["variable_length"] = True
    try:
        return LoadConfig(**out, body=s.body)
    except pydantic.ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(p) for p in err["loc"] if not isinstance(p, int))
        raise SettingError(setting_of(field), err["msg"].removeprefix("Value error, ")) from None


def _utf8(key: str, value: object) -> None:
    """Text that goes onto the wire or into a file name is UTF-8: a command
    line's bytes that are not arrive as lone surrogates, refused here with
    the setting they came in."""
    if isinstance(value, str):
        try:
            value.encode()
        except UnicodeEncodeError:
            shown = value.encode(errors="surrogateescape").decode(errors="backslashreplace")
            raise SettingError(setting_of(key), f"'{shown}' holds bytes that are not UTF-8 text") from None
    elif isinstance(value, (list, tuple)):
        for v in value:
            _utf8(key, v)
    elif isinstance(value, dict):
        for v in value.values():
            _utf8(key, v)


def _pacing(s: LoadSettings) -> dict[str, Any]:
    """How requests are spaced: a request count or a length, an open
    loop's rate, users' think time."""
    out: dict[str, Any] = {}
    if s.requests is None and s.duration is None and s.log is None:
        if s.rate is not None or s.think is not None:
            raise SettingError(
                "duration", "an open-loop rate or users with think time need a duration or a request count"
            )
        out["requests"] = 1  # ab's default
    if s.rate is not None:
        out["rate"] = _rate(s.rate, s.ramp)
        if s.arrivals is not None:
            out["rate"]["arrivals"] = s.arrivals
    elif s.ramp is not None:
        raise SettingError("ramp", "a ramp needs a rate range START..END")
    elif s.arrivals is not None:
        raise SettingError("arrivals", "arrivals space an open loop's requests: give a rate")
    if s.think is not None:
        out["think_s"] = _span(s.think)
    return out


def _workload(s: LoadSettings, base_dir: Path) -> dict[str, Any]:
    """What is requested beyond the URL: a URL list or a replayed log."""
    out: dict[str, Any] = {}
    if s.urls is not None:
        out["urls"] = _url_file(base_dir / s.urls, s.url or "")
    if s.log is not None:
        out["replay"] = {
            "path": str(base_dir / s.log),
            "log_format": s.log_format,
            "allow_unsafe": bool(s.allow_unsafe),
            "limit": s.limit,
            "looped": bool(s.loop),
            "speed": s.speed,
        }
    else:
        for key in ("speed", "log_format", "allow_unsafe", "limit", "loop"):
            if getattr(s, key) not in (None, False):
                raise SettingError(key, f"{key} belongs to a replayed log: give the log")
    return out


def _given(s: LoadSettings, name: str) -> bool:
    return any(n.strip().lower() == name.lower() for n, _ in s.headers)


def _auth(s: LoadSettings) -> list[tuple[str, str]]:
    """ab's -A: the credentials, leading spaces dropped, base64 as given."""
    if s.auth is None:
        return []
    creds = s.auth.lstrip()
    if ":" not in creds:
        raise SettingError("auth", f"{s.auth!r}: give USER:PASSWORD, the two separated by a colon")
    if _given(s, "Authorization"):
        raise SettingError("auth", "an Authorization header is given too (-H): give the credentials once")
    return [("Authorization", "Basic " + base64.b64encode(creds.encode()).decode())]


def _cookies(s: LoadSettings) -> list[tuple[str, str]]:
    """ab's -C, repeatable: every name=value pair in one Cookie header."""
    if not s.cookies:
        return []
    pairs = []
    for c in s.cookies:
        _utf8("cookies", c)
        parts = [p.strip() for p in c.split(";") if p.strip()]
        for pair in parts or [c]:
            name, eq, _ = pair.partition("=")
            if not eq or not name.strip() or any(ch in pair for ch in "\r\n"):
                raise SettingError("cookies", f"{c!r}: give a cookie as name=value (repeat the flag for more)")
        if any(ch < " " and ch != "\t" or ch == "\x7f" for ch in c):
            raise SettingError("cookies", f"{c!r} holds a control character: a cookie is visible text")
        pairs += parts
    if _given(s, "Cookie"):
        raise SettingError("cookies", "a Cookie header is given too (-H): give the cookies one way")
    return [("Cookie", "; ".join(pairs))]


def _rate(text: float | str, ramp_s: float | None) -> dict[str, Any]:
    try:
        start, end = parse_rate(str(text))
    except ValueError as e:
        raise SettingError("rate", str(e)) from None
    if end is None:
        if ramp_s is not None:
            raise SettingError("ramp", "give the rate as a range START..END, like 100..5000")
        return {"rps": start}
    if ramp_s is None:
        raise SettingError("ramp", f"the rate range {text} needs a ramp duration, like 60s")
    return {"rps": start, "end_rps": end, "ramp_s": ramp_s}


def _span(v: float | str) -> tuple[float, float]:
    try:
        return parse_span_s(str(v))
    except ValueError as e:
        raise SettingError("think", str(e)) from None


def _url_file(path: Path, base: str) -> list[dict[str, str]]:
    from corebench.config.urls import read_url_file

    entries = read_url_file(path, base=base)
    return [{"url": e.url, "method": e.method, "body_base64": base64.b64encode(e.body).decode()} for e in entries]
