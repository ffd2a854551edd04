"""The plan stage: `plan.toml` parsed and validated (`model.py`, the
sections; `factors.py`, levels and placeholders; `experiment.py`, every
point built into an `ExperimentPlan`), errors located by file, line and key."""

from corebench.plan.experiment import BUILTIN_NAMES, ExperimentPlan, Point, build, load_plan, service_names

__all__ = ["BUILTIN_NAMES", "ExperimentPlan", "Point", "build", "load_plan", "service_names"]
