"""`corebench capacity` against a server whose answer queueing theory knows:
the built-in server's `/queue` is an exact M/M/1 queue (Lindley's
recursion, exponential service), so the highest rate meeting a p99 bound
has a closed form, for Poisson arrivals (M/M/1) and for even spacing
(D/M/1). Each search takes two to three minutes, the two side by side:
they are the slow part of this file, and run the queue at 1,000 req/s so
that a busy 2-core machine's wake-up latency (a few hundred µs) is small
against the 20 ms bound."""

import json
import math
import subprocess
from pathlib import Path

import pytest

from corebench.targets.builtin import Served
from corebench.testing import free_port
from tests.conftest import CLI, run_cli
from tests.support.records import as_json
from tests.support.wakeups import WakeUps

SERVICE_US = 1000  # μ = 1000/s
SLO_S = 0.020


def mm1_limit(mu: float, slo_s: float) -> float:
    """M/M/1: the sojourn time is exponential with rate μ − λ (Kleinrock
    1975, §3.2), so p99 = ln(100)/(μ − λ) and p99 ≤ SLO ⇔ λ ≤ μ − ln(100)/SLO."""
    return mu - math.log(100) / slo_s


def dm1_limit(mu: float, slo_s: float) -> float:
    """D/M/1: the sojourn time is exponential with rate μ(1 − σ), where σ is
    the root in (0, 1) of σ = exp(−μ(1 − σ)/λ) (Kleinrock 1975, §6.4 for
    G/M/1). p99 ≤ SLO fixes μ(1 − σ) = ln(100)/SLO, so σ is known and
    λ = μ(1 − σ)/(−ln σ)."""
    rate = math.log(100) / slo_s
    sigma = 1 - rate / mu
    return rate / -math.log(sigma)


def test_the_closed_forms():
    # D/M/1's σ equation holds at the λ found, and even spacing sustains more.
    lam = dm1_limit(1000, 0.02)
    sigma = 1 - math.log(100) / 0.02 / 1000
    assert sigma == pytest.approx(math.exp(-1000 * (1 - sigma) / lam))
    assert mm1_limit(1000, 0.02) == pytest.approx(769.74, abs=0.01)
    assert lam == pytest.approx(879.85, abs=0.01) and lam > mm1_limit(1000, 0.02)


def _queue() -> Served:
    # Threads, not async: a sleeping thread wakes within tens of µs, an
    # event loop's timer within a millisecond. Enough threads that no
    # request waits for one.
    return Served("--model", "threads", "--workers", "256")


# A machine that wakes threads this late (its 99th percentile) adds to
# the responses near the 20 ms bound enough to move the limit (5% of the
# bound moves it about 2%, more where the delays clump): the search is
# then right about this machine, and theory is not a truth to test it on.
NOISY_WAKE_US = 1000


def test_capacity_finds_the_queueing_theory_limit(tmp_path):
    """Both arrival processes at once, each against a queue of its own: the
    searches mostly wait (1,000 req/s of sleeping service), so side by side
    they take the time of the longer one and leave each other's timing be
    (so they share the machine on purpose: --force, and each says so).
    Tried once. The machine's own wake-up delay is measured meanwhile: a
    search off theory on a machine whose p99 wake-up is over NOISY_WAKE_US
    is skipped with those figures (one CI run on the 2-core VM found the
    Poisson limit 11% under theory, where the same build had passed);
    on a quieter machine it fails."""
    with WakeUps() as machine:
        said = _search_both(tmp_path)
    for arrivals, (found, _, stdout, html) in said.items():
        _check_search(arrivals, found, stdout, html)
    try:
        for arrivals, (found, truth, stdout, html) in said.items():
            _check_theory(arrivals, found, truth, stdout, html)
    except AssertionError as e:
        if machine.p99_us() > NOISY_WAKE_US:
            pytest.skip(f"too noisy to test a 20 ms bound against theory: {machine}; the search said: {e}")
        raise AssertionError(f"{e}\n({machine})") from e


def _search_both(tmp_path: Path) -> dict[str, tuple[dict, float, str, Path]]:
    """Each search's JSON, the limit theory gives, its stdout and its page."""
    cases = {"poisson": mm1_limit, "uniform": dm1_limit}
    with _queue() as a, _queue() as b:
        running = {}
        for (arrivals, _), srv in zip(cases.items(), (a, b), strict=True):
            out, html = tmp_path / f"{arrivals}.json", tmp_path / f"{arrivals}.html"
            # 12 s steps (about 9,000 requests near the limit, twice what a
            # p99 needs): a p99 from a queue at 77-88% utilisation is
            # autocorrelated, and with 5,000 requests a step's p99 varies by
            # ±25%. Simulated with Lindley's recursion, 12 s steps put the
            # interpolated limit within +0.9% ± 1.3% (Poisson) and +0.7% ±
            # 0.9% (even) of theory.
            argv = CLI + [
                "capacity", srv.url + f"queue?service_us={SERVICE_US}", "--slo", f"p99<={SLO_S * 1000:g}ms",
                "--arrivals", arrivals, "-k", "--step", "12s", "--json", str(out), "-o", str(html), "--force",
            ]  # fmt: skip
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            running[arrivals] = (proc, out, html)
        try:
            said = {k: proc.communicate(timeout=600) for k, (proc, _, _) in running.items()}
        finally:
            for proc, _, _ in running.values():
                proc.kill()
    found = {}
    for arrivals, limit in cases.items():
        proc, out, html = running[arrivals]
        stdout, stderr = said[arrivals]
        assert proc.returncode == 0, stdout + stderr
        assert "searched while another corebench measured on this machine (corebench capacity" in stderr
        found[arrivals] = (json.loads(out.read_text()), limit(1e6 / SERVICE_US, SLO_S), stdout, html)
    return found


def _check_search(arrivals: str, found: dict, stdout: str, html: Path) -> None:
    """What holds on any machine: the search's shape, its lines and its page."""
    lo, hi = found["bracket"]
    assert found["outcome"] == "found" and found["arrivals"] == arrivals
    assert hi / lo <= 1.02 / 0.98 + 1e-9, "bracketed within the default ±2%"
    assert f"Sustains {lo:,.0f} req/s within p99<=20ms" in stdout
    assert all(s["duration_s"] >= 12 for s in found["steps"])
    page = html.read_text()
    assert (
        "Latency vs offered rate" in page
        and "Target: <code>http://127.0.0.1:" in page
        and "<svg" in page
        and f"Sustains {lo:,.0f}" in page
    )


def _check_theory(arrivals: str, found: dict, truth: float, stdout: str, html: Path) -> None:
    """What holds where the machine adds little to the queue's latency."""
    lo, hi = found["bracket"]
    assert (lo + hi) / 2 == pytest.approx(truth, rel=0.1), f"{arrivals}: verdicts changed at {lo:.0f}–{hi:.0f}"
    estimate = found["estimate"]
    if estimate is None:
        # A line crossing its bound beyond the steps' rates is not read: 3-4.5% of simulated Poisson
        # searches at this queue and step (docs/capacity.md), from curtailed steps' early percentiles;
        # none of even arrivals'.
        assert arrivals == "poisson", f"{arrivals}: no interpolated limit\n{stdout}"
        assert "Interpolated limit" not in stdout and "Interpolated limit" not in html.read_text()
        return
    # Within 10%: simulated, the estimate lies +0.9% ± 1.3% from theory,
    # but one CI run on a quiet 2-core VM (wake-ups p99 100 µs) put the
    # Poisson one at 711 req/s against 770 (−7.6%, its own interval
    # 651–759) where the same build had passed twice: two searches and
    # their servers share two cores here. The ±5% accuracy is measured by
    # bench/capacity_search.py --real and stated in docs/capacity.md.
    assert estimate["rate_rps"] == pytest.approx(truth, rel=0.10), f"{arrivals}: {estimate}, theory {truth:.0f}"
    assert estimate["ci"][0] < estimate["rate_rps"] < estimate["ci"][1]
    assert "Interpolated limit:" in stdout and "Interpolated limit" in html.read_text()


@pytest.mark.parametrize(
    "slo, said",
    [
        ("p99>=20ms", "bounds from above"),
        ("p99<=20", "needs a unit"),
        ("rps<=100", "the search finds the rate"),
        ("errors<=1%", "give a latency bound too"),
        ("p42<=1ms", "unknown metric"),
    ],
)
def test_a_bad_objective_is_one_line_and_exit_2(slo, said):
    r = run_cli("capacity", "http://127.0.0.1:9/", "--slo", slo)
    assert r.returncode == 2 and said in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_a_dead_server_is_said_and_exits_1(tmp_path):
    r = run_cli("capacity", f"http://127.0.0.1:{free_port()}/", "--slo", "p99<=20ms", timeout=60)
    assert r.returncode == 1 and "No request succeeded" in r.stdout, r.stdout + r.stderr
    # Without a probe, the first step that gets no answer ends the search:
    # a dead server is not searched down to ever lower rates.
    out = tmp_path / "dead.json"
    r = run_cli(
        "capacity", f"http://127.0.0.1:{free_port()}/", "--slo", "p99<=20ms", "--start-rate", "5000",
        "--json", str(out), timeout=60,
    )  # fmt: skip
    found = json.loads(out.read_text())
    assert r.returncode == 1 and found["outcome"] == "dead" and len(found["steps"]) == 1, r.stdout
    assert "connect" in found["failures"] and found["rate_rps"] is None


def test_a_plan_searches_each_configuration_and_answers_in_cores(tmp_path):
    # The queue does not use the cores, so both cpus levels sustain about
    # the M/M/1 figure for a p90: μ − ln(10)/SLO = 1000 − 115 = 885 req/s.
    plan = tmp_path / "plan.toml"
    plan.write_text(
        f"""
[experiment]
calibrate = false  # the generator's ceiling is tested in test_adaptive_run
name = "searched"
repetitions = 2

[factors]
cpus = [1, 2]

[target]
builtin = {{ model = "threads", workers = 64 }}

[load]
path = "/queue?service_us={SERVICE_US}"

[search]
slo = "p90<=20ms"
precision = "5%"
"""
    )
    store = tmp_path / "s.sqlite"
    r = run_cli("run", str(plan), "--store", str(store), timeout=400)
    assert r.returncode == 0, r.stdout + r.stderr
    from corebench.store import Store

    s = Store(store, read_only=True)
    try:
        runs = s.runs(s.newest_experiment())
    finally:
        s.close()
    searches = [as_json(run.search) for run in runs]
    truth = 1e6 / SERVICE_US - math.log(10) / SLO_S
    for found in searches:
        lo, hi = found["bracket"]
        # 2 s steps: a queue's p90 near 83% utilisation is autocorrelated, and
        # one CI run saw 15, 32 and 26 ms at the same rate (theory 13 ms): the
        # bracket lands within ±15%. The test above holds 12 s steps to ±10%.
        assert found["outcome"] == "found" and (lo + hi) / 2 == pytest.approx(truth, rel=0.15), found["bracket"]
    # The second round's search of each configuration starts below the
    # first's answer (capacity.seeded), without a probe.
    for first, second in [(a, b) for a in runs for b in runs if a.point_key == b.point_key and a.seq < b.seq]:
        assert first.search is not None and second.search is not None
        assert first.search.seeded_from_rps is None and first.search.probe_rps is not None
        assert second.search.seeded_from_rps == first.search.rate_rps and second.search.probe_rps is None
        assert second.search.start_rps is not None
        assert 0.85 * first.search.rate_rps <= second.search.start_rps <= first.search.rate_rps
    # Two searches a configuration: "enough" is read from the lower end of
    # a t interval on 1 df (CI: 489-1,227 for a mean of 775), so the
    # traffic asked is well below the queue's limit.
    rep = run_cli("report", str(store), "-o", str(tmp_path / "r.html"), "--traffic", "100")
    assert rep.returncode == 0, rep.stderr
    assert "To serve 100 req/s within p90<=20ms, errors<=1% you need 1 core" in rep.stdout, rep.stdout
    assert "Capacity within the objective" in (tmp_path / "r.html").read_text()
    doc = json.loads(run_cli("report", str(store), "--format", "json").stdout)
    (cap,) = [f for f in doc["findings"] if f["subject"].startswith("capacity within")]
    rates = {r["point"]: r["sustained_rps"] for r in doc["capacity"]}
    assert {f["name"]: f["value"] for f in cap["figures"]} == rates and set(rates) == {"cpus=1", "cpus=2"}
    from corebench.report import charts
    from corebench.report.data import load

    svg = dict(charts.all_charts(load(store)))["Latency vs offered rate"]
    steps = sum(len(f["steps"]) for f in searches)
    assert svg.count('id="line2d_') >= steps, "every step of both searches is drawn"
    assert "p90&lt;=20ms" in svg and "cpus=1" in svg and "cpus=2" in svg
    bad = run_cli("report", str(store), "--traffic", "-5", "-o", str(tmp_path / "x.html"))
    assert bad.returncode == 2 and "--traffic" in bad.stderr
