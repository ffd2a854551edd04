"""`corebench run` and `corebench sweep` from the command line: bad plans,
--dry-run, SIGINT then --resume, the sweep's table."""

import json
import os
import signal
import sqlite3
import subprocess
import time

import pytest

from tests.conftest import CLI, run_cli

PLAN = """\
[experiment]
repetitions = 2
warmup = 1
duration = "1s"
calibrate = false  # the generator's ceiling is tested in test_adaptive_run

[factors]
concurrency = [1, 2, 4]

[target]
builtin = { model = "async", workers = 1 }

[load]
concurrency = "{concurrency}"
"""


def runs_in(store):
    db = sqlite3.connect(store)
    try:
        if not db.execute("SELECT 1 FROM sqlite_master WHERE name = 'runs'").fetchone():
            return []  # the store is being created
        return db.execute(
            "SELECT id, experiment_id, point_key, repetition, warmup, status FROM runs ORDER BY seq, id"
        ).fetchall()
    finally:
        db.close()


@pytest.mark.parametrize(
    "change, fragment",
    [
        (("repetitions = 2", "repetitons = 2"), "plan.toml:2: experiment.repetitons: unknown key"),
        (('duration = "1s"', "duration = true"), "plan.toml:4: experiment.duration"),
        (
            ('concurrency = "{concurrency}"', 'concurrency = "{conc}"'),
            "plan.toml:14: load.concurrency: {conc} is not a factor",
        ),
        (("workers = 1 }", "workers = 1 }\ncpus = 64"), "target.cpus: cpus = 64 is more than the"),
    ],
)
def test_bad_plans_fail_before_any_run(tmp_path, change, fragment):
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN.replace(*change))
    p = run_cli("run", str(plan), "--store", str(tmp_path / "s.sqlite"))
    assert p.returncode == 2, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and fragment in p.stderr, p.stderr
    assert not (tmp_path / "s.sqlite").exists(), "nothing is created for a plan that cannot run"


def test_dry_run_lists_the_runs(tmp_path):
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN)
    p = run_cli("run", str(plan), "--dry-run", "--store", str(tmp_path / "s.sqlite"))
    assert p.returncode == 0, p.stderr
    lines = p.stdout.strip().splitlines()
    # Interleaved: each of the 2 rounds starts the target, warms it up once
    # and measures the 3 points in a fresh order.
    assert lines[-1] == "8 runs" and sum("warm-up" in line for line in lines) == 2
    assert sum(" start " in line for line in lines) == 2
    assert [line.split()[2] for line in lines[:-1]] == ["1"] * 4 + ["2"] * 4
    assert not (tmp_path / "s.sqlite").exists()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_mid_run_then_resume(tmp_path, sig):
    """Started with an override (-t), interrupted, resumed without it: the
    same experiment goes on with the stored override."""
    plan, store = tmp_path / "plan.toml", tmp_path / "s.sqlite"
    plan.write_text(PLAN)
    before = _servers()
    proc = subprocess.Popen(
        CLI + ["run", str(plan), "--store", str(store), "-q", "-t", "0.8s"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not store.exists() or len(runs_in(store)) < 3):
        time.sleep(0.1)
    time.sleep(0.3)  # into the fourth run
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig, (out, err)
    assert "--resume" in out
    first = runs_in(store)
    measured = [r for r in first if not r[4]]
    assert 2 <= len(measured) < 6 and all(r[5] == "ok" for r in first), first
    p = run_cli("run", str(plan), "--store", str(store), "--resume", "-q", timeout=120)
    assert p.returncode == 0, p.stderr
    assert f"{len(measured)} already there" in p.stdout
    after = runs_in(store)
    assert set(first) <= set(after), "nothing committed is lost"
    done = [(k, r) for _, _, k, r, w, _ in after if not w]
    assert len(done) == 6 and len(set(done)) == 6 and {r for _, r in done} == {1, 2}
    assert {e for _, e, *_ in after} == {1}, "the same experiment goes on"
    db = sqlite3.connect(store)
    durations = [d for (d,) in db.execute("SELECT duration_s FROM runs WHERE NOT warmup")]
    db.close()
    assert all(0.7 < d < 0.95 for d in durations), f"the resumed runs keep -t 0.8s: {durations}"
    # No server is left behind (servers of other programs on this machine aside).
    assert _servers() <= before
    p = run_cli("run", str(plan), "--store", str(store), "--resume", "-q", "-t", "2s")
    assert p.returncode == 2 and "was started with --duration 0.8s" in p.stderr, p.stderr


def _servers() -> set[int]:
    ps = subprocess.run(["ps", "-eo", "pid=,args="], capture_output=True, text=True).stdout
    return {int(line.split()[0]) for line in ps.splitlines() if "corebench serve" in line}


def test_a_second_session_runs_everything_again_and_is_compared(tmp_path):
    plan, store = tmp_path / "plan.toml", tmp_path / "s.sqlite"
    plan.write_text(PLAN.replace("concurrency = [1, 2, 4]", "concurrency = [1, 4]"))
    for extra in ([], ["--session"]):
        p = run_cli("run", str(plan), "--store", str(store), "-q", "-t", "0.5s", *extra, timeout=120)
        assert p.returncode == 0, p.stderr
    db = sqlite3.connect(store)
    rows = db.execute("SELECT experiment_id, session, seq, round, repetition, warmup FROM runs ORDER BY id").fetchall()
    db.close()
    assert {e for e, *_ in rows} == {1}, "the same experiment"
    first = [r for r in rows if r[1] == 1]
    second = [r for r in rows if r[1] == 2]
    assert len(first) == len(second) == 6
    assert min(r[2] for r in second) > max(r[2] for r in first), "seq goes on"
    assert min(r[3] for r in second) == 3, "rounds go on"
    assert sorted(r[4] for r in second if not r[5]) == [3, 3, 4, 4], "repetitions go on per point"
    p = run_cli("report", str(store), "--format", "md")
    assert p.returncode == 0, p.stderr
    assert "Sessions: this store holds 2 sessions" in p.stdout
    p = run_cli("run", str(plan), "--store", str(store), "--session", "--resume")
    assert p.returncode == 2 and "--resume and --session: give one" in p.stderr
    p = run_cli("run", str(plan), "--store", str(store), "--session", "-t", "1s")
    assert p.returncode == 2 and "--session: experiment 1 in" in p.stderr and "-t 1s" not in p.stderr
    p = run_cli("run", str(plan), "--store", str(tmp_path / "new.sqlite"), "--session", "-r", "auto")
    assert p.returncode == 2 and '--session with repetitions = "auto"' in p.stderr


def test_resume_without_an_experiment_is_an_error(tmp_path):
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN)
    p = run_cli("run", str(plan), "--store", str(tmp_path / "s.sqlite"), "--resume")
    assert p.returncode == 2 and "no experiment of" in p.stderr


def test_sweep_against_a_running_server(nginx, tmp_path):
    store = tmp_path / "sweep.sqlite"
    p = run_cli("sweep", nginx.url, "-c", "1,4", "-t", "0.5s", "-r", "2", "--warmup", "1", "--store", str(store), "-q")
    assert p.returncode == 0, p.stderr
    table = p.stdout.strip().splitlines()[-3:]
    assert table[0].split()[:2] == ["concurrency", "runs"]
    assert [row.split()[:2] for row in table[1:]] == [["1", "2"], ["4", "2"]], "2 measured, the warm-up aside"
    rows = runs_in(store)
    assert len(rows) == 6 and all(s == "ok" for *_, s in rows)
    assert sum(w for *_, w, _ in rows) == 2, "a warm-up at the start of each round"
    layouts = sqlite3.connect(store).execute("SELECT layout_json FROM runs").fetchall()
    assert all(json.loads(layout)["method"] == "none" for (layout,) in layouts), "a running server is not moved"


def test_sweep_bad_levels():
    p = run_cli("sweep", "http://127.0.0.1:9/", "-c", "1,x")
    assert p.returncode == 2 and "-c '1,x'" in p.stderr
    # An empty level was skipped silently; a level given twice was refused
    # naming sweep's internal plan file (issue 41, item 10).
    p = run_cli("sweep", "http://127.0.0.1:9/", "-c", "1,,", "--dry-run")
    assert p.returncode == 2 and "-c '1,,': give concurrency levels as numbers" in p.stderr, p.stderr
    p = run_cli("sweep", "http://127.0.0.1:9/", "-c", "5,1,5", "--dry-run")
    assert p.returncode == 2 and "-c '5,1,5': level 5 is given twice" in p.stderr and "sweep.toml" not in p.stderr


def test_a_plans_thresholds_gate_the_experiment(tmp_path):
    base = PLAN.replace('duration = "1s"', 'duration = "0.5s"').replace("[1, 2, 4]", "[1, 2]")
    plan = tmp_path / "plan.toml"
    plan.write_text(base + '\n[thresholds]\nerrors = "<1%"\np99 = "<10s"\n')
    p = run_cli("run", str(plan), "--store", str(tmp_path / "a.sqlite"), "-q", timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "corebench: threshold errors<1%: 2 of 2 points pass" in p.stdout
    plan.write_text(base + '\n[thresholds]\nrps = ">100000000"\n')
    p = run_cli("run", str(plan), "--store", str(tmp_path / "b.sqlite"), "-q", timeout=120)
    assert p.returncode == 99, p.stdout + p.stderr
    assert "corebench: threshold rps>100000000: 0 of 2 points pass; FAILED at concurrency=1 (" in p.stdout
    report = run_cli("report", str(tmp_path / "b.sqlite"), "--format", "md").stdout
    assert "threshold rps>100000000: 0 of 2 points pass" in report
    plan.write_text(base + '\n[thresholds]\np99 = "<20"\n')
    p = run_cli("run", str(plan), "--store", str(tmp_path / "c.sqlite"))
    assert (
        p.returncode == 2
        and "plan.toml:" in p.stderr
        and "thresholds.p99" in p.stderr
        and "a latency needs a unit" in p.stderr
    )


@pytest.mark.skipif(os.geteuid() != 0, reason="mounts a tmpfs")
def test_a_store_whose_disk_fills_stops_the_experiment_in_one_line_keeping_every_run(tmp_path):
    full = tmp_path / "full"
    full.mkdir()
    plan = tmp_path / "plan.toml"
    plan.write_text(
        '[experiment]\nrepetitions = 60\nwarmup = 0\nduration = "0.2s"\ncooldown = "0s"\ncalibrate = false\n'
        '[target]\nbuiltin = { model = "async", workers = 1 }\n[load]\npath = "/static/64"\nconcurrency = 2\n'
    )
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=300k", "tmpfs", str(full)], check=True)
    try:
        p = run_cli("run", str(plan), "--store", str(full / "s.sqlite"), "-q", timeout=120)
        assert p.returncode == 1, p.stdout + p.stderr
        (line,) = [x for x in p.stderr.splitlines() if x.startswith("corebench: error:")]
        assert "cannot store the run (database or disk is full); the experiment stopped there" in line, line
        assert "Traceback" not in p.stderr and "--resume" in line
        stored = int(p.stdout.split(" runs stored (")[0].rsplit(" ", 1)[1])
        assert 0 < stored < 60 and len(runs_in(full / "s.sqlite")) == stored, "every run said stored is there"
    finally:
        subprocess.run(["umount", str(full)], check=False)
