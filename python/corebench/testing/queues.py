"""Single-server queues simulated exactly, for testing a capacity search
against theory: arrivals at a rate (Poisson, or evenly spaced),
exponential service at rate μ, first come first served, starting empty
or with a backlog (seconds of work already queued, as a step that follows
an overloaded one may find).

Waiting times follow Lindley's recursion (Lindley 1952),
W[n+1] = max(0, W[n] + S[n] − A[n+1]), computed in closed form: with
X[n] = Σ_{i<n} (S[i] − A[i+1]), W[n] = X[n] + max(W[0], −min_{k≤n} X[k])
(the running minimum of a random walk; W[0] the backlog), so a step of 100,000 requests is a
few array operations. A request's response time is its wait plus its
service.

Theory for the objective "p-th percentile of response time ≤ L": in an
M/M/1 queue the response time is exponential with rate μ − λ, so
P(T > L) = e^{−(μ−λ)L} and the highest rate meeting it is
λ* = μ + ln(1 − p)/L. For even (deterministic) arrivals, D/M/1 is a GI/M/1
queue: T is exponential with rate μ(1 − σ), σ the root in (0, 1) of
σ = exp(−μ(1 − σ)/λ) (Kleinrock, Queueing Systems vol. 1, 1975, §6.4), so
λ* = −μ(1 − σ*)/ln σ* with μ(1 − σ*) = −ln(1 − p)/L."""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from numpy.typing import NDArray

Arrivals = Literal["poisson", "uniform"]


def response_times(
    rate_rps: float,
    mu_rps: float,
    duration_s: float,
    arrivals: Arrivals,
    rng: np.random.Generator,
    backlog_s: float = 0.0,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(arrival time, response time) of every request arriving in
    `duration_s`, in seconds, from a queue holding `backlog_s` of work."""
    n = max(1, round(rate_rps * duration_s))
    gaps = rng.exponential(1 / rate_rps, n) if arrivals == "poisson" else np.full(n, 1 / rate_rps)
    at = np.cumsum(gaps)
    service = rng.exponential(1 / mu_rps, n)
    steps = np.concatenate(([0.0], service[:-1] - gaps[1:]))
    walk = np.cumsum(steps)
    wait = walk + np.maximum(-np.minimum.accumulate(walk), backlog_s)
    keep = at <= duration_s
    return at[keep], (wait + service)[keep]


def steady_backlog_s(rate_rps: float, mu_rps: float, arrivals: Arrivals, rng: np.random.Generator) -> float:
    """A wait drawn from the queue's stationary distribution, so that a
    step starts from steady state: in GI/M/1 an arrival waits with
    probability σ, and then an exponential time of rate μ(1 − σ) (σ = ρ for
    Poisson arrivals; Kleinrock 1975, §6.4)."""
    sigma = _sigma(rate_rps, mu_rps, arrivals)
    return float(rng.exponential(1 / sojourn_decay_rps(rate_rps, mu_rps, arrivals))) if rng.random() < sigma else 0.0


def sojourn_decay_rps(rate_rps: float, mu_rps: float, arrivals: Arrivals) -> float:
    """The rate of GI/M/1's exponential response time in steady state,
    μ(1 − σ) (Kleinrock 1975, §6.4): P(T > x) = exp(−μ(1 − σ)x)."""
    return mu_rps * (1 - _sigma(rate_rps, mu_rps, arrivals))


def _sigma(rate_rps: float, mu_rps: float, arrivals: Arrivals) -> float:
    """GI/M/1's σ: the root in (0, 1) of σ = A*(μ(1 − σ)), A* the
    Laplace transform of the gaps (ρ for Poisson, exp(−μ(1 − σ)/λ) for
    even gaps), found by iterating from 0 (it converges for ρ < 1)."""
    if rate_rps >= mu_rps:
        raise ValueError("the queue has no steady state at or above its service rate")
    if arrivals == "poisson":
        return rate_rps / mu_rps
    sigma = 0.0
    for _ in range(10_000):
        sigma = math.exp(-mu_rps * (1 - sigma) / rate_rps)
    return sigma


def limit_rps(mu_rps: float, percentile: float, bound_s: float, arrivals: Arrivals) -> float:
    """The highest arrival rate whose response time meets `percentile` ≤ `bound_s`."""
    decay = -math.log(1 - percentile / 100) / bound_s  # the rate of T's exponential at the limit
    if arrivals == "poisson":
        return mu_rps - decay
    sigma = 1 - decay / mu_rps
    if not 0 < sigma < 1:
        raise ValueError("no rate meets that objective at this service rate")
    return -decay / math.log(sigma)
