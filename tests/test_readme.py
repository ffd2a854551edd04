"""The README's demo figures come from a recorded run: this reruns the
quick plan (`make demo`'s first experiment: 2-second runs, concurrency 25
and 150) and checks that what the README quotes still holds here, by class
and roughly by size (a rerun is another session: its figure may differ by
more than the quoted interval, which covers one session's noise only)."""

import re
import tomllib
from pathlib import Path

import pytest

from corebench.targets.cpus import online_cpus
from tests.conftest import run_cli

ROOT = Path(__file__).resolve().parents[1]
STEP = re.compile(
    r"From 1 to 2 CPUs at concurrency=(\d+): throughput (higher|lower|equivalent|inconclusive)[^+−-]*([+−-][\d.]+)%"
)


def _quoted() -> list[tuple[str, str, float]]:
    text = (ROOT / "README.md").read_text()
    block = text[text.index("`make demo` runs") :]
    found = [(c, v, float(x.replace("−", "-"))) for c, v, x in STEP.findall(block)]
    assert found, "the README quotes the demo's CPU steps"
    return found


@pytest.mark.skipif(len(online_cpus()) < 2, reason="the demo's cpus = 2 needs 2 CPUs")
def test_the_readme_demo_figures_hold_on_a_rerun(tmp_path):
    plan = tmp_path / "plan.toml"
    text = (ROOT / "examples/cores-worth-it/plan.toml").read_text()
    text = text.replace('duration = "5s"', 'duration = "2s"').replace(
        "concurrency = [25, 75, 150]", "concurrency = [25, 150]"
    )
    plan.write_text(text)
    assert tomllib.loads(text)["factors"]["concurrency"] == [25, 150]
    store = tmp_path / "s.sqlite"
    p = run_cli("run", str(plan), "--store", str(store), "-q", timeout=300)
    assert p.returncode == 0, p.stderr
    p = run_cli("report", str(store), "--format", "md")
    assert p.returncode == 0, p.stderr
    now = {c: (v, float(x.replace("−", "-"))) for c, v, x in STEP.findall(p.stdout)}
    for concurrency, verdict, change in _quoted():
        assert concurrency in now, (concurrency, p.stdout)
        again, change_now = now[concurrency]
        assert again == verdict, f"concurrency={concurrency}: the README says {verdict}, a rerun {again}"
        assert abs(change_now - change) <= 25, f"concurrency={concurrency}: README {change:+}%, rerun {change_now:+}%"
