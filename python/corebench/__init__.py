"""corebench: how does my web server scale, and what should I run it on?"""

from __future__ import annotations

import gc
from typing import Any

# Importing the package builds its pydantic models: some 23,000 objects
# the collector tracks, all kept for the life of the process, which it
# would scan over and over as they are made (about 60 collections, 20-25 ms
# of CPU on a 2-core VM, counted in every `corebench load`'s CPU per request).
# It is paused for the import only, and left as the importer had it.
_collecting = gc.isenabled()
gc.disable()
try:
    from corebench._engine import __version__
    from corebench.config.load import LoadConfig
    from corebench.config.settings import LoadSettings, engine_config
    from corebench.errors import UsageError
    from corebench.result import LoadResult
finally:
    if _collecting:
        gc.enable()


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
    return engine_config(LoadSettings(url=url, **settings))


__all__ = ["load", "load_config", "LoadConfig", "LoadSettings", "LoadResult", "UsageError", "__version__"]
