"""Adaptive repetitions end to end: the built-in server with a stable speed
stops after few rounds; with its speed drawn anew at every start (--jitter)
it runs to the most rounds. The page sleeps 20 ms, so the stable server's
rate (concurrency over the pause) holds on a machine busy with other work:
a CI run saw 5 ms pauses give 519 to 743 req/s from one start to the next
(the timer's millisecond and the wake-ups are a larger share of a short
pause), too wide to stop.
The report states the precision reached, and the generator's calibrated
ceiling is stored with the experiment."""

import json
import sqlite3

import pytest

from corebench import _engine
from corebench.report.data import load
from corebench.targets.cpus import online_cpus
from tests.support.experiments import run_plan
from tests.support.records import as_json

PLAN = """
[experiment]
repetitions = "auto"
precision = {precision}
max_repetitions = 6
duration = "0.5s"

[factors]
cpus = [1]

[target]
builtin = {{ model = "async", workers = 1, args = {args} }}

[load]
path = "/sleep?ms=20"
concurrency = 16
"""


@pytest.mark.skipif(len(online_cpus()) < 2, reason="needs a core for the generator")
def test_stable_stops_early_noisy_runs_to_the_most_rounds(tmp_path):
    (tmp_path / "stable").mkdir()
    (tmp_path / "noisy").mkdir()
    stable = run_plan(tmp_path / "stable", PLAN.format(args="[]", precision=0.15))
    # A precision that ±60% jitter cannot reach by chance: at 0.15, three
    # starts' draws landing within a few percent of each other (a few in a
    # hundred) stopped it at round 3 in a CI run; at 0.03 they must land
    # within about 1%.
    noisy = run_plan(tmp_path / "noisy", PLAN.format(args='["--jitter", "0.6"]', precision=0.03))
    rounds = [max(r.round for r in ran.runs) for ran in (stable, noisy)]
    assert rounds[0] < 6 and rounds[1] == 6, rounds
    assert stable.out.starts == rounds[0], "a fresh start each round"
    noisy_rps = [r.throughput_rps for r in noisy.runs]
    assert max(noisy_rps) / min(noisy_rps) > 1.2, "jitter makes starts differ"
    said = load(stable.store).verdicts
    line = next(v for v in said if v.startswith("Adaptive repetitions"))
    assert f"{rounds[0]} rounds; every point's mean throughput is known within ±" in line, line
    said = load(noisy.store).verdicts
    assert any("still wider than the target (cpus=1 ±" in v for v in said), said
    # The generator's ceiling, measured before the first run, with both CPU sets.
    db = sqlite3.connect(stable.store)
    (cal,) = db.execute("SELECT calibration_json FROM experiments").fetchone()
    db.close()
    (c,) = json.loads(cal)
    layout = as_json(stable.runs[0].layout)
    assert (c["target_cpus"], c["generator_cpus"]) == (layout["target_cpus"], layout["generator_cpus"])
    assert c["error"] is None and c["ceiling_rps"] >= c["rps"] > 0
    assert layout["generator_ceiling_rps"] == round(c["ceiling_rps"])
    assert any(
        v.startswith("Generator ceiling for HTTP/1.1, keep-alive, a closed loop: about ")
        for v in load(stable.store).verdicts
    )
    # Which transport the load threads ran on, counted over the measured runs.
    io = "epoll" if _engine.io_uring_unavailable() else "io_uring"
    said = [v for v in load(stable.store).verdicts if v.startswith("Load I/O: ")]
    assert said == [
        f"Load I/O: all {rounds[0]} measured runs ran their load threads on {io} (corebench load --io; docs/load.md)."
    ]


def test_a_dead_target_stops_after_the_first_rounds(tmp_path):
    # Nothing to estimate: more rounds of failures would only take time.
    ran = run_plan(
        tmp_path,
        '[experiment]\nrepetitions = "auto"\nmax_repetitions = 8\nduration = "0.3s"\n\n'
        '[target]\nurl = "http://127.0.0.1:9/"\n',
    )
    assert [r.round for r in ran.runs] == [1, 2, 3] and all(r.status == "failed" for r in ran.runs)
    assert all("no request succeeded" in r.error for r in ran.runs)
