"""A session on a real two-node Ray cluster against a loopback nginx:
merged counts equal the server's, the merged histogram equals the agents'
added by hand (with the Python HdrHistogram, an independent
implementation), each agent did its share."""

import json

import pytest
from hdrh.histogram import HdrHistogram

import corebench
from corebench.cluster import ClusterConfig
from corebench.cluster.session import Session


@pytest.fixture(scope="module")
def session(ray_cluster):
    with Session(ClusterConfig(address=ray_cluster.address, agents=2, strict_spread=True)) as s:
        yield s


def test_agents_are_placed_on_distinct_nodes(session):
    assert len({a.info["node_id"] for a in session.agents}) == 2


def test_closed_loop_merges_exactly(session, nginx):
    before = nginx.served()
    cfg = corebench.LoadConfig(url=nginx.url, concurrency=8, requests=4000, keep_alive=True, threads=1)
    r = session.run(cfg)
    assert nginx.served_since(before) == r.responses == r.requests == 4000
    assert [a.requests for a in r.agents] == [2000, 2000]
    assert [a.concurrency for a in r.agents] == [4, 4]
    assert len({a.node for a in r.agents}) == 2
    by_hand = None
    for raw in session.last_parts:
        h = HdrHistogram.decode(json.loads(raw)["stats"]["total_us"])
        if by_hand is None:
            by_hand = h
        else:
            by_hand.add(h)
    total = r.latency_us.total
    merged = HdrHistogram.decode(total.histogram)
    # The merge is exact: the same count in every bucket.
    assert merged.get_total_count() == by_hand.get_total_count() == 4000
    assert list(merged.counts) == list(by_hand.counts)
    for p in total.percentiles:
        # HdrHistogram's Rust and Python ports round the rank q*n apart (ceil
        # of q*n with float error, against q*n + 0.5): the value is that of
        # one of the two neighbouring ranks.
        rank = p.percentile / 100 * 4000
        near = {by_hand.get_value_at_percentile(100 * k / 4000) for k in (int(rank), int(rank) + 1)}
        assert p.value_us in near, (p, near)
    assert total.max_us == by_hand.get_max_value()
    assert sum(s.completed for s in r.timeline) == 4000


def test_open_loop_rate_is_shared_and_kept(session, nginx):
    before = nginx.served()
    cfg = corebench.LoadConfig(
        url=nginx.url, concurrency=50, rate={"rps": 2000}, duration_s=2.0, keep_alive=True, threads=1
    )
    r = session.run(cfg)
    s = r.schedule
    assert (s.sent, s.dropped) == (4000, 0)
    assert nginx.served_since(before) == r.responses == 4000
    assert [a.sent for a in r.agents] == [2000, 2000]
    assert abs(s.target_rps - 2000) < 1e-6
