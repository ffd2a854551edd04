"""One measurement per machine (corebench.machine): a second is refused in
one line naming the first, or, with --force, measures beside it and both
mark what overlapped."""

import signal
import subprocess
import time

import pytest

from corebench.machine import Claim, MachineBusy
from corebench.store import Store, StoreError
from tests.conftest import CLI, run_cli


def test_a_second_claim_is_refused_or_forced_and_both_see_each_other(tmp_path):
    with Claim("corebench run a.toml", False, tmp_path) as first:
        assert first.held and first.others() == []
        with pytest.raises(MachineBusy, match=r"the machine is busy: corebench run a.toml \(pid \d+, since"):
            Claim("corebench load", False, tmp_path)
        with Claim("corebench load", True, tmp_path) as beside:
            assert not beside.held
            assert [s.split(" (pid")[0] for s in beside.others()] == ["corebench run a.toml"]
            assert [s.split(" (pid")[0] for s in first.others()] == ["corebench load"]
            began = time.time()
        assert first.others() == [], "a forced claim that ended measures no more"
        assert [s.split(" (pid")[0] for s in first.others(began)] == ["corebench load"], "but overlapped"
        assert first.others(time.time() + 1) == []
    with Claim("corebench capacity", False, tmp_path) as again:
        assert again.held, "the kernel dropped the first lock with it"


PLAN = """
[experiment]
calibrate = false
repetitions = 2
warmup = 0
duration = "2s"
cooldown = "0.2s"

[target]
builtin = { model = "async", workers = 1 }

[load]
path = "/dynamic?work_us=100"
concurrency = 2
"""


def test_a_load_during_an_experiment_is_refused_unless_forced_and_the_runs_are_marked(tmp_path):
    plan, store = tmp_path / "plan.toml", tmp_path / "s.sqlite"
    plan.write_text(PLAN)
    exp = subprocess.Popen([*CLI, "run", str(plan), "--store", str(store), "-q"], stdout=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        # The experiment holds the machine from its start: once its store
        # has the experiment, the claim is made.
        while not (store.exists() and _runs(store) is not None) and time.monotonic() < deadline:
            time.sleep(0.1)
        with subprocess.Popen([*CLI, "serve", "--port", "0"], stderr=subprocess.PIPE, text=True) as server:
            assert server.stderr is not None
            url = "http://" + server.stderr.readline().split("http://", 1)[1].split(" ", 1)[0]
            refused = run_cli("load", url, "-n", "100")
            assert refused.returncode == 2 and refused.stdout == "", refused
            (line,) = refused.stderr.splitlines()
            assert line.startswith("corebench: error: the machine is busy: corebench run plan.toml (pid "), line
            assert "--force" in line
            forced = run_cli("load", url, "-t", "1s", "--force")
            assert forced.returncode == 0, forced.stderr
            assert "measured while another corebench measured on this machine (corebench run plan.toml" in forced.stderr
            server.send_signal(signal.SIGTERM)
        out, _ = exp.communicate(timeout=60)
    finally:
        if exp.poll() is None:
            exp.kill()
    assert exp.returncode == 0, out
    marked = [r for r in Store(store, read_only=True).runs(1) if r.layout is not None and r.layout.sharing]
    assert marked and all(m.layout.sharing[0].startswith("corebench load (pid ") for m in marked)
    assert all("another corebench measured on this machine meanwhile" in (m.lower_bound or "") for m in marked)
    report = run_cli("report", str(store), "--format", "md")
    assert "another corebench measured on this machine during" in report.stdout


def _runs(store):
    """The experiment's runs; None while the store has no experiment yet."""
    try:
        s = Store(store, read_only=True)
    except StoreError:
        return None  # its schema is being written
    try:
        return s.runs(1) if s.experiment(1) else None
    finally:
        s.close()
