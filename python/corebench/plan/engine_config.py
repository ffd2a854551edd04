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


# A search plan's warm-up, when it is given as a count: its steps have no
# fixed length to copy.
SEARCH_WARMUP_S = 5.0


def warmup_config(plan: Plan, load: Load, base_url: str, plan_dir: Path) -> LoadConfig:
    """A warm-up run: the point's load (a search plan's as the closed loop
    its [load] describes), for the warm-up's length or the runs' own."""
    exp, length_s = plan.experiment, plan.experiment.warmup.length_s
    if length_s is None and plan.search is not None:
        length_s = SEARCH_WARMUP_S
    if length_s is not None:
        exp = exp.model_copy(update={"duration_s": length_s, "requests": None})
    return load_config(load, base_url, exp, plan_dir)


def run_config(plan: Plan, load: Load, base_url: str, plan_dir: Path, warmup: bool = False) -> LoadConfig:
    """What one run of a point loads: its fixed load, or a search's base."""
    if warmup:
        return warmup_config(plan, load, base_url, plan_dir)
    if plan.search is not None:
        return search_config(load, base_url, plan.experiment, plan_dir, plan.search)
    return load_config(load, base_url, plan.experiment, plan_dir)
