"""The clock behind requests per second per core-GHz: the plan's when given,
else the host's as stored, else said to be unknown."""

from corebench.analysis.analyse import clock
from corebench.store import HostFacts


def test_the_plans_clock_comes_first_then_the_hosts():
    assert clock({"machine": {"clock_ghz": 2.6}}, HostFacts(mhz=3400.0)) == (2.6, "the plan's [machine] clock_ghz")
    ghz, source = clock({}, HostFacts(mhz=2445.426))
    assert ghz == 2.445 and "host's reported clock" in source
    assert clock({}, HostFacts(mhz=None)) == (None, "")
