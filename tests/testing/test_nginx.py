"""The nginx the tests and benchmarks start: what it reports of itself."""

import time

import corebench


def test_workers_cpu_is_the_work_of_serving(nginx):
    before = nginx.workers_cpu_s()
    t0 = time.monotonic()
    r = corebench.load(nginx.url, concurrency=8, requests=20000, keep_alive=True)
    wall_s = time.monotonic() - t0
    used_s = nginx.workers_cpu_s() - before
    assert r.responses == 20000 and r.failed == 0
    # 20,000 requests take a worker milliseconds of CPU; it cannot have used
    # more than its wall time (two readings, each to a 10 ms clock tick).
    assert 0 < used_s <= wall_s * nginx.workers + 0.02
