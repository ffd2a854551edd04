"""corebench: how does my web server scale, and what should I run it on?"""

from __future__ import annotations

from typing import Any

from corebench._engine import __version__
from corebench.config.load import LoadConfig
from corebench.errors import UsageError
from corebench.result import LoadResult


def load(url: str, **settings: Any) -> LoadResult:
    """Runs one load against `url` and returns its typed result.

    Settings are the fields of `LoadConfig`: concurrency, requests,
    duration_s, keep_alive, http_version, method, headers, body,
    content_type, timeout_s, threads, variable_length, allow_remote.
    """
    from corebench import engine

    return engine.run(LoadConfig(url=url, **settings))


__all__ = ["load", "LoadConfig", "LoadResult", "UsageError", "__version__"]
