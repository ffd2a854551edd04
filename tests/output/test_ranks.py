"""Ranks read from the engine's histogram encoding agree with a second
HdrHistogram implementation, value for value."""

import random

import pytest

from corebench.output.ranks import Ranks
from tests.output.hdr import histogram


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_rank_is_the_highest_equivalent_of_the_sorted_value(seed):
    rng = random.Random(seed)
    # Sub-millisecond to an hour: every bucket size, with runs of empty buckets between.
    values = sorted(int(rng.lognormvariate(7, 2.5)) + 1 for _ in range(5000))
    values[-1] = 3_600_000_000
    h = histogram(values)
    ranks = Ranks(h.encode().decode())
    assert ranks.count == len(values)
    assert [ranks.value_at_rank(r) for r in range(1, len(values) + 1)] == [
        h.get_highest_equivalent_value(v) for v in values
    ]
    # Out-of-range ranks are clamped to the fastest and the slowest.
    assert ranks.value_at_rank(0) == ranks.value_at_rank(1)
    assert ranks.value_at_rank(len(values) + 7) == h.get_highest_equivalent_value(values[-1])


def test_the_engines_own_encoding_is_read(nginx):
    import corebench

    r = corebench.load(nginx.url, concurrency=2, requests=400, keep_alive=True)
    total = r.latency_us.total
    ranks = Ranks(total.histogram)
    assert ranks.count == total.count == 400
    assert ranks.value_at_rank(400) == total.max_us
    # The engine's percentiles are values of its histogram's buckets, as the ranks are.
    values = {ranks.value_at_rank(k) for k in range(1, 401)}
    assert {p.value_us for p in total.percentiles} <= values


def test_an_empty_histogram_and_a_foreign_blob():
    assert Ranks(histogram([]).encode().decode()).value_at_rank(1) == 0
    with pytest.raises(ValueError, match="not a compressed V2 HdrHistogram"):
        Ranks("AAAAAAAAAAA=")
