"""The engine stage: one `run(config) -> result` over the Rust extension."""

from __future__ import annotations

from typing import Callable, Optional

from corebench import _engine
from corebench.config.load import LoadConfig
from corebench.errors import EngineUsageError, UsageError
from corebench.result import LoadResult


def run(config: LoadConfig, progress: Optional[Callable[[int], None]] = None) -> LoadResult:
    """Runs one load and returns its result. Ctrl-C stops the load early; the
    result then has `interrupted` set and holds what was measured.
    `progress(finished)` is called a few times a second while it runs."""
    try:
        raw = _engine.run(config.engine_json(), config.body or None, progress)
    except EngineUsageError as e:
        raise UsageError(str(e)) from None
    return LoadResult.model_validate_json(raw)
