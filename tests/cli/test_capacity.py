"""`corebench capacity` against a server whose answer queueing theory knows:
the built-in server's `/queue` is an exact M/M/1 queue (Lindley's
recursion, exponential service), so the highest rate meeting a p99 bound
has a closed form, for Poisson arrivals (M/M/1) and for even spacing
(D/M/1). Each search takes about a minute: they are the slow part of this
file, and run the queue at 1,000 req/s so that a busy 2-core machine's
wake-up latency (a few hundred µs) is small against the 20 ms bound."""

import json
import math

import pytest

from corebench.targets.builtin import Served
from corebench.testing import free_port
from tests.conftest import run_cli

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


@pytest.fixture(scope="module")
def queue():
    # Threads, not async: a sleeping thread wakes within tens of µs, an
    # event loop's timer within a millisecond. Enough threads that no
    # request waits for one.
    with Served("--model", "threads", "--workers", "256") as s:
        yield s.url + f"queue?service_us={SERVICE_US}"


@pytest.mark.parametrize("arrivals, limit", [("poisson", mm1_limit), ("uniform", dm1_limit)])
def test_capacity_finds_the_queueing_theory_limit(queue, tmp_path, arrivals, limit):
    out, html = tmp_path / "cap.json", tmp_path / "cap.html"
    r = run_cli(
        "capacity", queue, "--slo", f"p99<={SLO_S * 1000:g}ms", "--arrivals", arrivals, "-k",
        "--json", str(out), "-o", str(html), timeout=400,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    found = json.loads(out.read_text())
    lo, hi = found["bracket"]
    truth = limit(1e6 / SERVICE_US, SLO_S)
    assert found["outcome"] == "found" and found["arrivals"] == arrivals
    assert hi / lo <= 1.02 / 0.98 + 1e-9, "bracketed within the default ±2%"
    assert (lo + hi) / 2 == pytest.approx(truth, rel=0.05), f"{arrivals}: found {lo:.0f}–{hi:.0f}, theory {truth:.0f}"
    assert f"Sustains {lo:,.0f} req/s within p99<=20ms" in r.stdout
    steps = found["steps"]
    assert all(s["duration_s"] * s["rate_rps"] >= 5000 * 0.999 for s in steps), "a p99 judged on 5,000 requests"
    page = html.read_text()
    assert "Latency vs offered rate" in page and "<svg" in page and f"Sustains {lo:,.0f}" in page


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


def test_a_dead_server_is_said_and_exits_1():
    r = run_cli("capacity", f"http://127.0.0.1:{free_port()}/", "--slo", "p99<=20ms", timeout=60)
    assert r.returncode == 1 and "No request succeeded" in r.stdout, r.stdout + r.stderr
