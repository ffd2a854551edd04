"""Running a plan's text as an experiment into a fresh store, for tests."""

from dataclasses import dataclass
from pathlib import Path

from corebench.plan import load_plan
from corebench.runner import Outcome, preflight, run_experiment
from corebench.store import HostFacts, Store, StoredExperiment, StoredRun


@dataclass
class Ran:
    out: Outcome
    runs: list[StoredRun]
    host: HostFacts
    store: Path
    experiment: StoredExperiment


def run_plan(folder: Path, text: str) -> Ran:
    plan = folder / "plan.toml"
    plan.write_text(text)
    store = Store(folder / "store.sqlite")
    try:
        out = run_experiment(preflight.check(load_plan(plan)), store, quiet=True)
        runs = store.runs(out.experiment_id)
        exp = store.experiment(out.experiment_id)
        assert exp is not None
        host = exp.host
    finally:
        store.close()
    return Ran(out, runs, host, folder / "store.sqlite", exp)
