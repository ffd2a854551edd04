"""The engine stage: one `run(config) -> result` over the Rust extension."""

from __future__ import annotations

from collections.abc import Callable

from corebench import _engine
from corebench.config.load import LoadConfig
from corebench.config.settings import SettingError, setting_of
from corebench.errors import EngineUsageError, UsageError
from corebench.result import LoadResult


def refused(e: EngineUsageError) -> UsageError:
    """The engine's refusal as a user error, naming the setting when it says which."""
    key = getattr(e, "key", None)
    if key is None:
        return UsageError(str(e))
    return SettingError(setting_of(key), str(e).removeprefix(f"invalid setting {key}: "))


def check(config: LoadConfig) -> None:
    """Everything the engine checks before a first request: settings together,
    the target's address, a replayed log."""
    try:
        _engine.check(config.engine_json())
    except EngineUsageError as e:
        raise refused(e) from None


def run(config: LoadConfig, progress: Callable[[int], None] | None = None) -> LoadResult:
    """Runs one load and returns its result. Ctrl-C stops the load early; the
    result then has `interrupted` set and holds what was measured.
    `progress(finished)` is called a few times a second while it runs."""
    try:
        raw = _engine.run(config.engine_json(), config.body or None, progress)
    except EngineUsageError as e:
        raise refused(e) from None
    return LoadResult.model_validate_json(raw)
