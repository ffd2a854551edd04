"""A point's load section as the engine's `LoadConfig`, through the one
translator the CLI and the Python API use too."""

from __future__ import annotations

from pathlib import Path

from corebench.config.load import LoadConfig
from corebench.config.settings import engine_config
from corebench.plan.model import Experiment, Load, Plan
from corebench.plan.objective import SearchSettings


def load_config(load: Load, base_url: str, exp: Experiment, plan_dir: Path) -> LoadConfig:
    """Raises SettingError naming the [load] key at fault."""
    url = load.url or base_url.rstrip("/") + "/" + load.path.lstrip("/")
    run = {"url": url, "requests": exp.requests, "duration": exp.duration_s, "seed": exp.seed}
    settings = load.model_copy(update=run)
    return engine_config(settings, base_dir=plan_dir)


def search_config(load: Load, base_url: str, exp: Experiment, plan_dir: Path, search: SearchSettings) -> LoadConfig:
    """A capacity search's base: the point's load as the open loop each step
    is (the search sets each step's rate and length)."""
    url = load.url or base_url.rstrip("/") + "/" + load.path.lstrip("/")
    run = {
        "url": url,
        "seed": exp.seed,
        "rate": search.min_rps,
        "arrivals": search.arrivals,
        "duration": 1.0,
        "timeout": load.timeout if load.timeout is not None else search.timeout_s(),
    }
    return engine_config(load.model_copy(update=run), base_dir=plan_dir)


def run_config(plan: Plan, load: Load, base_url: str, plan_dir: Path) -> LoadConfig:
    """What one run of a point loads: its fixed load, or a search's base."""
    if plan.search is not None:
        return search_config(load, base_url, plan.experiment, plan_dir, plan.search)
    return load_config(load, base_url, plan.experiment, plan_dir)
