"""Where throughput stops growing with load, and whether a closed-loop run
obeys Little's law."""

from __future__ import annotations

import numpy as np

# A closed loop keeps N requests in flight: N = X·R (Little 1961). A run
# whose measured X·R is this far from N lost time outside the measured
# requests (a saturated generator, connection set-up, retries).
LITTLE_TOLERANCE = 0.10


def kneedle(xs: list[float], ys: list[float]) -> float | None:
    """The knee of a concave, increasing curve (Satopää, Albrecht, Irwin and
    Raghavan, "Finding a 'Kneedle' in a Haystack", ICDCS workshops 2011):
    normalise both axes to [0, 1], take the difference curve y − x, and the
    knee is at its maximum. None when the curve has no knee (a straight
    line, fewer than 3 points)."""
    if len(xs) < 3:
        return None
    x, y = np.asarray(xs, float), np.asarray(ys, float)
    order = np.argsort(x)
    x, y = x[order], y[order]
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return None
    xn, yn = (x - x.min()) / np.ptp(x), (y - y.min()) / np.ptp(y)
    diff = yn - xn
    i = int(np.argmax(diff))
    if diff[i] <= 0.05 or i in (0, len(x) - 1):
        return None
    return float(x[i])


def saturation(xs: list[float], ys: list[float], share: float = 0.95) -> float | None:
    """The lowest load at which throughput reaches `share` of its maximum."""
    if not xs:
        return None
    top = max(ys)
    return min(x for x, y in zip(xs, ys, strict=True) if y >= share * top)


def little_ratio(
    concurrency: float, throughput_rps: float, mean_latency_s: float, duration_s: float | None = None
) -> float:
    """X·R / N: 1 for a closed loop that spent all its time in requests.
    Over a finite run of T seconds the law holds only up to its edges: the
    requests in flight when the run ends are not counted, about N·R/T of
    them, so the expected X·R/N is 1 − R/T, and the ratio is given against
    it (Little 1961 holds exactly only for a balanced flow; Denning & Buzen
    1978 on operational laws over a finite observation period)."""
    if not concurrency:
        return float("nan")
    ratio = throughput_rps * mean_latency_s / concurrency
    if duration_s and mean_latency_s < duration_s:
        ratio /= 1 - mean_latency_s / duration_s
    return ratio
