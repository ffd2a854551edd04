"""The engine stage: one `run(config) -> result` over the Rust extension."""

from __future__ import annotations

import contextlib
import os
import resource
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from corebench import _engine
from corebench.config.settings import LoadConfig, SettingError, setting_of
from corebench.errors import EngineUsageError, UsageError
from corebench.result import LoadResult


def refused(e: EngineUsageError) -> UsageError:
    """The engine's refusal as a user error, naming the setting when it says which."""
    key = getattr(e, "key", None)
    if key is None:
        return UsageError(str(e))
    return SettingError(setting_of(key), str(e).removeprefix(f"invalid setting {key}: "))


# Descriptors besides the connections: the interpreter, the engine's epoll
# (or io_uring) and its two timers per thread, the log and body files.
_FD_BASE = 16
_FD_PER_THREAD = 3


def descriptors(config: LoadConfig) -> None:
    """Raises the soft open-file limit to the hard one; a load whose
    connections would still not fit is refused before any request, in one
    line, rather than left to fail (or spin) on EMFILE."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and (hard == resource.RLIM_INFINITY or soft < hard):
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
    threads = config.threads or os.cpu_count() or 1
    need = config.concurrency + _FD_BASE + _FD_PER_THREAD * threads
    if soft != resource.RLIM_INFINITY and need > soft:
        raise SettingError(
            "concurrency",
            f"{config.concurrency:,} connections need about {need:,} file descriptors; this process may open "
            f"{soft:,} (ulimit -n): raise the limit, or use fewer connections",
        )


def check(config: LoadConfig, *, local: bool = True) -> None:
    """Everything the engine checks before a first request: settings together,
    the target's address, a replayed log; and, when the connections open from
    this process (not a cluster's agents), the descriptors they need."""
    if local:
        descriptors(config)
    try:
        _engine.check(config.engine_json())
    except EngineUsageError as e:
        raise refused(e) from None


@dataclass(frozen=True)
class Second:
    """One whole second of a run, all its threads together."""

    second: int  # its index from the start of the run (0: the first)
    completed: int
    errors: int
    p50_us: int  # total latency percentiles of its responses (0: none)
    p99_us: int
    # Responses slower than each of the load's live_bounds_us, in order.
    over: tuple[int, ...] = ()


@dataclass(frozen=True)
class Figures:
    """A run's figures so far, for a live display."""

    finished: int  # requests ended, with a response or an error
    failed: int  # of those, the failed requests
    unsuccessful: int  # and the responses whose status is not 2xx or 3xx
    elapsed_s: float | None  # since the first request could go; None before
    requests: int | None  # the requests the run is to make, when a count bounds it
    length_s: float | None  # how long it is to last, when known (-t, a schedule's last due time)
    second: Second | None  # the last whole second; None before the first is over

    @classmethod
    def of(cls, d: dict[str, Any]) -> Figures:
        s = d.get("second")
        return cls(
            finished=d["finished"],
            failed=d["failed"],
            unsuccessful=d.get("unsuccessful", 0),
            elapsed_s=d.get("elapsed_s"),
            requests=d.get("requests"),
            length_s=d.get("length_s"),
            second=Second(**(s | {"over": tuple(s.get("over", ()))})) if s is not None else None,
        )


SETTLED = "settled"


def run(
    config: LoadConfig,
    progress: Callable[[int], None] | None = None,
    live: Callable[[Figures], object] | None = None,
) -> LoadResult:
    """Runs one load and returns its result. Ctrl-C stops the load early; the
    result then has `interrupted` set and holds what was measured.
    `progress(finished)` and `live(figures)` are called a few times a second
    (about four) while it runs; either returning False stops it (the result
    says `interrupted`); `live` returning SETTLED ends it as a whole run of
    the length it had (a capacity step whose verdict is settled)."""
    descriptors(config)
    on_live = None if live is None else (lambda d: live(Figures.of(d)))
    try:
        raw = _engine.run(config.engine_json(), config.body or None, progress, on_live)
    except EngineUsageError as e:
        raise refused(e) from None
    return LoadResult.model_validate_json(raw)
