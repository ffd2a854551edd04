"""Ctrl-C and SIGTERM at moments drawn at random, for the long commands:
`capacity` (its probe, a step, the settling after a missed step), `run`
(the generator's calibration, a run, a capacity search of a plan's
[search]), `load` and `replay` (any moment of their first seconds). Each must end within STOP_S with
128 + the signal, lose nothing it measured whole (every run line printed is
in the store, a search's whole steps are in its --json), leave no target,
folder or cgroup of its own, and a `--resume` must finish the experiment.

The moments are drawn from a seeded generator so a failure replays; the
draw covers each stage by its place in time (a stage's window, not a
fixed instant), which on a busy machine shifts but stays inside it."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from corebench.store import Store, StoredExperiment, StoredRun
from corebench.targets import cpus, owned
from corebench.targets.owned import OWNER_FILE
from tests.conftest import ACCESS_LOG, CLI

# "Every long command stops on SIGINT/SIGTERM within 2 s", with room for
# a busy two-core machine scheduling the interpreter.
STOP_S = 2.0
SLACK_S = 1.5
DRAW = random.Random(41)
SIGNALS = [signal.SIGINT, signal.SIGTERM]

PLAN = """
[experiment]
repetitions = 1
warmup = 0
cooldown = "0.2s"
{extra}

[factors]
work = [100, 200]

[target]
builtin = {{ model = "async", workers = 1 }}

[load]
path = "/dynamic?work_us={{work}}"
concurrency = 4
"""
SEARCH = """
[search]
slo = "p99<=20ms"
step = "1s"
max_step = "1s"
precision = 0.2  # a few steps: the signal, not the answer, is tested
"""


def _ours_left(pid: int, since: float, keep: set[int]) -> list[str]:
    """What a corebench (pid) started after `since` and left: servers,
    experiment folders, cgroups."""
    left = []
    for p in psutil.process_iter(["pid", "cmdline", "create_time"]):
        cmd = " ".join(p.info["cmdline"] or [])
        if p.info["pid"] not in keep and p.info["create_time"] >= since and "corebench" in cmd and " serve" in cmd:
            left.append(f"process {p.info['pid']}: {cmd}")
    for d in Path(tempfile.gettempdir()).glob(f"{owned.WORK_PREFIX}*"):
        try:
            if int((d / OWNER_FILE).read_text()) == pid:
                left.append(f"folder {d}")
        except (OSError, ValueError):
            continue
    left += [f"cgroup {g}" for g in cpus.leftover_groups() if g.name.startswith(f"corebench-{pid}-")]
    return left


def _signalled(
    argv: list[str], at_s: float, sig: int, ready: Callable[[subprocess.Popen[str]], bool]
) -> tuple[int, str, float, float, int]:
    """Runs `argv`, sends `sig` `at_s` after `ready` says so; (status,
    stdout, seconds from the signal to the end, start, pid)."""
    since = time.time() - 1
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 60
    while not ready(proc) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(at_s)
    assert proc.poll() is None, f"ended before the signal:\n{proc.communicate()[0]}"
    proc.send_signal(sig)
    sent = time.monotonic()
    try:
        out, _ = proc.communicate(timeout=STOP_S + SLACK_S + 30)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail(f"{' '.join(argv)} still ran 30 s after {signal.Signals(sig).name}:\n{proc.communicate()[0]}")
    return proc.returncode, out, time.monotonic() - sent, since, proc.pid


@pytest.fixture(scope="module")
def server():
    """A built-in server of the test's own, for `capacity`."""
    proc = subprocess.Popen(
        [*CLI, "serve", "--port", "0", "--workers", "1"],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stderr is not None
    line = proc.stderr.readline()  # "corebench serve: listening on http://127.0.0.1:PORT/ (...)"
    port = int(line.split("127.0.0.1:", 1)[1].split("/")[0])
    yield proc.pid, f"http://127.0.0.1:{port}/dynamic?work_us=300"
    proc.terminate()
    proc.wait(timeout=10)


# The probe lasts 2 s; steps 1 s each after it, with settling after a miss.
CAPACITY_MOMENTS = [("probe", 0.3, 1.5), ("steps", 2.5, 6.0)]


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
@pytest.mark.parametrize("stage, lo, hi", CAPACITY_MOMENTS, ids=[m[0] for m in CAPACITY_MOMENTS])
def test_capacity_stops_on_a_signal_and_keeps_its_whole_steps(tmp_path, server, stage, lo, hi, sig):
    own, url = server
    out_json = tmp_path / "search.json"
    argv = [*CLI, "capacity", url, "--slo", "p99<=20ms", "--step", "1s", "--max-step", "1s", "--json", str(out_json)]
    rc, out, took_s, since, pid = _signalled(argv, DRAW.uniform(lo, hi), sig, _loading)
    assert rc == 128 + sig, out
    assert took_s <= STOP_S + SLACK_S, f"{took_s:.2f} s after the signal\n{out}"
    doc = json.loads(out_json.read_text())
    assert doc["outcome"] == "interrupted" and doc["rate_rps"] is None, doc
    printed = [line for line in out.splitlines() if " req/s for " in line]
    assert len(doc["steps"]) >= len(printed), "every step printed is in the JSON"
    assert "Search interrupted after" in out and "the step under way was not judged" in out
    assert not _ours_left(pid, since, {own})


# Calibration starts when the experiment's folder does and lasts about a
# second; the two 1-second runs follow.
RUN_MOMENTS = [("calibration", 0.05, 0.8), ("runs", 2.0, 3.5)]


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
@pytest.mark.parametrize("stage, lo, hi", RUN_MOMENTS, ids=[m[0] for m in RUN_MOMENTS])
def test_run_stops_on_a_signal_loses_nothing_and_resumes(tmp_path, stage, lo, hi, sig):
    exp = _run_case(tmp_path, PLAN.format(extra='duration = "1s"'), DRAW.uniform(lo, hi), sig)
    if stage == "calibration" and exp is not None and exp.calibration:
        # Stored only whole: then it was printed, before the signal.
        assert all(c.ceiling_rps > 0 for c in exp.calibration)


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_a_plans_capacity_search_stops_on_a_signal(tmp_path, sig):
    _run_case(tmp_path, PLAN.format(extra="calibrate = false") + SEARCH, DRAW.uniform(2.0, 5.0), sig)


def _run_case(tmp_path: Path, text: str, at_s: float, sig: int) -> StoredExperiment | None:
    """`corebench run` signalled `at_s` after its experiment folder appears:
    checked as the module says; returns the experiment as stored."""
    plan, store = tmp_path / "plan.toml", tmp_path / "s.sqlite"
    plan.write_text(text)
    before = set(Path(tempfile.gettempdir()).glob(f"{owned.WORK_PREFIX}*"))
    argv = [*CLI, "run", str(plan), "--store", str(store)]
    rc, out, took_s, since, pid = _signalled(argv, at_s, sig, _NewFolder(before))
    assert rc == 128 + sig, out
    assert took_s <= STOP_S + SLACK_S, f"{took_s:.2f} s after the signal\n{out}"
    printed = [line for line in out.splitlines() if line.startswith("[") and " rep " in line and ": " in line]
    exp, stored = _stored(store)
    assert len(stored) == len(printed), f"every run printed is stored, and no run cut short:\n{out}"
    if exp is not None and exp.calibration:
        assert "generator ceiling for" in out, "a ceiling stored was printed whole"
    assert not set(Path(tempfile.gettempdir()).glob(f"{owned.WORK_PREFIX}*")) - before
    assert not _ours_left(pid, since, set())
    resume = ["--resume"] if exp is not None else []
    again = subprocess.run(
        [*CLI, "run", str(plan), "--store", str(store), "-q", *resume], capture_output=True, text=True, timeout=120
    )
    assert again.returncode == 0, again.stdout + again.stderr
    _, stored = _stored(store)
    assert sorted(r.point_key for r in stored if r.status == "ok") == sorted(
        json.dumps({"work": w}, sort_keys=True) for w in (100, 200)
    ), "the resumed experiment has each run once"
    return exp


def _stored(store: Path) -> tuple[StoredExperiment | None, list[StoredRun]]:
    if not store.exists():
        return None, []
    s = Store(store, read_only=True)
    try:
        exp = s.experiment(1)
        return exp, s.runs(1) if exp is not None else []
    finally:
        s.close()


class _NewFolder:
    """True once a new experiment folder exists: the signal's clock starts there."""

    def __init__(self, before: set[Path]) -> None:
        self.before = before

    def __call__(self, _proc: subprocess.Popen[str]) -> bool:
        return bool(set(Path(tempfile.gettempdir()).glob(f"{owned.WORK_PREFIX}*")) - self.before)


def _loading(proc: subprocess.Popen[str]) -> bool:
    """The load has begun: the process holds a socket. Read from its file
    descriptors, not from /proc/net/tcp: after loads without keep-alive the
    machine holds tens of thousands of TIME_WAIT sockets, and parsing them
    took seconds a call, so a search ended before it was seen loading."""
    try:
        fds = os.listdir(f"/proc/{proc.pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{proc.pid}/fd/{fd}").startswith("socket:"):
                return True
        except OSError:
            continue
    return False


# A load and a replay signalled at any moment of their first seconds.
LOAD_MOMENTS = (0.1, 3.0)


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
@pytest.mark.parametrize("command", ["load", "replay"])
def test_load_and_replay_stop_on_a_signal_and_keep_what_they_measured(tmp_path, server, command, sig):
    own, url = server
    out_json = tmp_path / "result.json"
    if command == "load":
        argv = [*CLI, "load", "-c", "4", "-k", "-t", "60s", "--json", str(out_json), url]
    else:
        # The shipped log spans 83 hours: about 83 s at 3600 times its pace.
        base = url.split("/dynamic", 1)[0]
        argv = [*CLI, "replay", str(ACCESS_LOG), "--target", base, "--speed", "3600", "--json", str(out_json)]
    rc, out, took_s, since, pid = _signalled(argv, DRAW.uniform(*LOAD_MOMENTS), sig, _loading)
    assert rc in (130, 128 + sig), out
    assert took_s <= STOP_S + SLACK_S, f"{took_s:.2f} s after the signal\n{out}"
    doc = json.loads(out_json.read_text())
    assert doc["interrupted"] is True and doc["requests"] > 0, "what was measured before the signal is kept"
    assert not _ours_left(pid, since, {own})
