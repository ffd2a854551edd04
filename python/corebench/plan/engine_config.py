"""A point's load section as the engine's `LoadConfig`, through the one
translator the CLI and the Python API use too."""

from __future__ import annotations

from pathlib import Path

from corebench.config.load import LoadConfig
from corebench.config.settings import engine_config
from corebench.plan.model import Experiment, Load


def load_config(load: Load, base_url: str, exp: Experiment, plan_dir: Path) -> LoadConfig:
    """Raises SettingError naming the [load] key at fault."""
    url = load.url or base_url.rstrip("/") + "/" + load.path.lstrip("/")
    run = {"url": url, "requests": exp.requests, "duration": exp.duration_s, "seed": exp.seed}
    settings = load.model_copy(update=run)
    return engine_config(settings, base_dir=plan_dir)
