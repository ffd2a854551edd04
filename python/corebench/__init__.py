"""corebench: how does my web server scale, and what should I run it on?"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from corebench._engine import __version__
from corebench.errors import UsageError

if TYPE_CHECKING:
    from corebench.config.settings import LoadConfig, LoadSettings
    from corebench.result import LoadResult

# The typed models are imported when first asked for (PEP 562), not with the
# package: the `corebench` program imports them itself, with the collector
# paused (corebench/__main__.py).
_LAZY = {
    "LoadConfig": "corebench.config.settings",
    "LoadSettings": "corebench.config.settings",
    "LoadResult": "corebench.result",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'corebench' has no attribute {name!r}")


def load(url: str, **settings: Any) -> LoadResult:
    """Runs one load against `url` and returns its typed result.

    Settings are those of `corebench load` and a plan's [load] table, by the
    names of `LoadSettings`: concurrency, requests, duration (seconds or
    "10s"), keep_alive, rate (5000, or "100..5000" with ramp), think, urls,
    log, speed, timeout, threads, headers, body, ... Unset ones take the
    engine's defaults."""
    from corebench import engine

    return engine.run(load_config(url, **settings))


def load_config(url: str, **settings: Any) -> LoadConfig:
    """The engine configuration `load(url, **settings)` would run."""
    from corebench.config.settings import LoadSettings, engine_config

    return engine_config(LoadSettings(url=url, **settings))


__all__ = ["load", "load_config", "LoadConfig", "LoadSettings", "LoadResult", "UsageError", "__version__"]
