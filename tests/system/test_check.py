"""`system check` says what makes a machine's numbers noisy, with the fix;
`system tune` applies the fixes and `--reset` puts every knob back as it
was found. Tuning is tested on copies of a machine's trees (the roots are
settings), never on the machine that runs the tests."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from corebench.system import check as sc
from corebench.system.topology import ROOT_ENV, read
from tests.conftest import run_cli

TREES = Path(__file__).resolve().parents[1] / "data" / "sysfs"


def snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def machine(tmp_path, monkeypatch) -> tuple[Path, Path]:
    """A 2-socket SMT Xeon's sysfs (governor powersave, turbo on, SMT on)
    and a /proc whose interrupts fire on CPUs 0-3."""
    sys = tmp_path / "sys"
    with tarfile.open(TREES / "xeon-2s-8c-smt.tar.gz") as tar:
        tar.extractall(sys, members=[m for m in tar.getmembers() if m.isfile() or m.isdir()])  # noqa: S202
    cpu = sys / "devices" / "system" / "cpu"
    (cpu / "intel_pstate").mkdir()
    (cpu / "intel_pstate" / "no_turbo").write_text("0\n")
    (cpu / "smt").mkdir()
    (cpu / "smt" / "control").write_text("on\n")
    proc = tmp_path / "proc"
    (proc / "irq").mkdir(parents=True)
    header = " ".join(f"CPU{i}" for i in range(32))
    rows = [
        f"  {irq}: " + " ".join(str(int(i == irq - 40)) for i in range(32)) + "  PCI-MSI  eth0-q"
        for irq in (40, 41, 50)
    ]
    (proc / "interrupts").write_text(f"           {header}\n" + "\n".join(rows) + "\n")
    for irq in (40, 41, 50):
        (proc / "irq" / str(irq)).mkdir()
        (proc / "irq" / str(irq) / "smp_affinity_list").write_text("0-31\n")
    (proc / "swaps").write_text("Filename\tType\tSize\tUsed\tPriority\n/swap.img\tfile\t1024\t0\t-2\n")
    (proc / "stat").write_text("cpu  100 0 50 1000 10 0 5 0 0 0\n")
    monkeypatch.setenv("COREBENCH_STATE_DIR", str(tmp_path / "state"))
    return sys, proc


def test_each_noise_is_said_with_its_fix(machine):
    sys, proc = machine
    t = read(sys)
    found = {c.name: c for c in sc.check(t, [0, 1, 2, 3], sys, proc)}
    assert found["clock governor"].ok is False and "powersave" in found["clock governor"].said
    assert found["turbo"].ok is False and "no_turbo" in found["turbo"].fix
    assert found["SMT"].ok is False and "smt/control" in found["SMT"].fix
    assert found["interrupts"].ok is False and "IRQ 40, 41" in found["interrupts"].said, found["interrupts"]
    assert "50" not in found["interrupts"].said, "IRQ 50 fired on CPU 10 only"
    assert "CPUs 0-3,16-19" in found["interrupts"].said, "the target's cores: its CPUs and their siblings"
    assert found["swap"].ok is False
    assert found["steal"].ok is None and "no CPU time passed" in found["busy"].said, (
        "a recorded /proc/stat stands still"
    )
    assert all(c.line().count("\n") == 0 for c in found.values())


def test_tune_then_reset_leaves_the_machine_as_it_was_found(machine, monkeypatch):
    sys, proc = machine
    before = snapshot(sys) | snapshot(proc)
    t = read(sys)
    done, failed = sc.tune(t, [0, 1, 2, 3], smt_off=True, sys=sys, proc=proc)
    assert any("governor powersave -> performance" in d for d in done) and "SMT off" in done and not failed
    cpu = sys / "devices" / "system" / "cpu"
    assert (cpu / "cpu7" / "cpufreq" / "scaling_governor").read_text().strip() == "performance"
    assert (cpu / "intel_pstate" / "no_turbo").read_text().strip() == "1"
    assert (proc / "irq" / "40" / "smp_affinity_list").read_text().strip() == "4-15,20-31", "off the siblings too"
    assert (proc / "irq" / "50" / "smp_affinity_list").read_text().strip() == "0-31", "not on the target's CPUs"
    # A second tune changes nothing more and keeps what the first one saved.
    assert sc.tune(t, [0, 1, 2, 3], smt_off=True, sys=sys, proc=proc) == ([], [])
    monkeypatch.setenv(ROOT_ENV, str(sys))
    restored = sc.reset(proc)
    assert len(restored) == len(done)
    smt_at = next(i for i, line in enumerate(restored) if "smt/control" in line)
    first_governor = next(i for i, line in enumerate(restored) if "scaling_governor" in line)
    assert smt_at < first_governor, "SMT back on before its siblings' governors"
    assert snapshot(sys) | snapshot(proc) == before
    assert sc.reset(proc) == [], "nothing left to restore"


def test_a_state_that_cannot_be_saved_changes_nothing(machine, monkeypatch, tmp_path):
    sys, proc = machine
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("COREBENCH_STATE_DIR", str(blocker / "under-a-file"))
    before = snapshot(sys) | snapshot(proc)
    with pytest.raises(sc.TuneError):
        sc.tune(read(sys), [0, 1], sys=sys, proc=proc)
    assert snapshot(sys) | snapshot(proc) == before


def test_a_restore_that_fails_is_kept_for_the_next_reset(machine, monkeypatch):
    sys, proc = machine
    monkeypatch.setenv(ROOT_ENV, str(sys))
    sc.tune(read(sys), [0, 1], sys=sys, proc=proc)
    gov = sys / "devices" / "system" / "cpu" / "cpu3" / "cpufreq" / "scaling_governor"
    gov.unlink()
    gov.mkdir()  # a write there fails
    said = sc.reset(proc)
    assert any("could not restore" in line and "cpu3" in line for line in said)
    assert sc.state_file().exists()
    gov.rmdir()
    assert [line for line in sc.reset(proc) if "cpu3" in line] and not sc.state_file().exists()


def test_a_machine_without_the_knobs_says_so(tmp_path, monkeypatch):
    sys = tmp_path / "sys"
    with tarfile.open(TREES / "cloud-vm-4.tar.gz") as tar:
        tar.extractall(sys, members=[m for m in tar.getmembers() if m.isfile() or m.isdir()])  # noqa: S202
    monkeypatch.setenv("COREBENCH_STATE_DIR", str(tmp_path / "state"))
    t = read(sys)
    found = {c.name: c for c in sc.check(t, [0], sys, tmp_path / "noproc")}
    assert found["clock governor"].ok is None and "no cpufreq" in found["clock governor"].said
    assert found["turbo"].ok is None and found["SMT"].ok is True and found["interrupts"].ok is None
    assert sc.tune(t, [0], sys=sys, proc=tmp_path / "noproc") == ([], []) and not (tmp_path / "state").exists()


def test_the_commands_on_a_tree(machine, monkeypatch):
    sys, proc = machine
    monkeypatch.setenv(ROOT_ENV, str(sys))
    monkeypatch.setenv(sc.PROC_ENV, str(proc))
    p = run_cli("system", "check", "--cpus", "4")
    assert p.returncode == 0, p.stderr
    assert "WARN  clock governor" in p.stdout and "Fix: corebench system tune" in p.stdout
    tuned = run_cli("system", "tune", "--cpus", "4")
    assert tuned.returncode == 0 and "turbo off" in tuned.stdout, tuned.stdout + tuned.stderr
    back = run_cli("system", "tune", "--reset")
    assert back.returncode == 0 and "no_turbo: 0" in back.stdout, back.stdout
    monkeypatch.delenv(sc.PROC_ENV)
    half = run_cli("system", "tune")
    assert half.returncode == 2 and "or neither" in half.stderr, "a copy's CPUs never tune this machine"


def test_check_on_this_machine():
    p = run_cli("system", "check")
    assert p.returncode == 0, p.stderr
    names = ("clock governor", "turbo", "SMT", "interrupts", "swap", "steal", "busy")
    assert all(f"  {n}: " in p.stdout for n in names), p.stdout


def test_the_boot_id_is_this_machines_whatever_tree_the_checks_read(tmp_path, monkeypatch):
    """Which machine this is (told to agents and target nodes) does not
    follow a recorded tree the checks are pointed at; tune's saved state,
    which reads its own root, gets "" there and stores "unknown"."""
    real = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    monkeypatch.setenv(sc.PROC_ENV, str(tmp_path))
    assert sc.boot_id() == real != ""
    assert sc.boot_id(tmp_path) == ""
    monkeypatch.setenv("COREBENCH_STATE_DIR", str(tmp_path / "state"))
    assert sc.Saved(tmp_path).boot == "unknown"
