"""The runner stage: for each run of the plan, the target on its CPUs, the
load on the other cores, the monitor beside it, and the run committed to
the store the moment it ends. A failing target or engine fails that run,
never the experiment; Ctrl-C or SIGTERM discards the run in progress, stops
the target and keeps everything committed (`--resume` goes on from there).

`experiment.py` runs it (`ExperimentRun`); `preflight.py` checks a plan
first, `schedule.py` orders its runs, `backend.py` says where the load
comes from, `calibrate.py` measures the generator's ceiling, `capacity.py`
searches for the highest rate within an objective."""

from corebench.runner.experiment import ExperimentRun, Interrupted, Outcome, ran_line, run_experiment

__all__ = ["ExperimentRun", "Interrupted", "Outcome", "ran_line", "run_experiment"]
