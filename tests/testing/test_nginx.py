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


def test_active_counts_the_connections_held_open(nginx):
    import socket

    def settle(want: int) -> int:
        deadline = time.monotonic() + 10
        while (held := nginx.active()) != want and time.monotonic() < deadline:
            time.sleep(0.02)
        return held

    base = settle(1)  # the status request's own connection
    host, port = nginx.url.split("/")[2].split(":")
    socks = [socket.create_connection((host, int(port)), timeout=5) for _ in range(3)]
    try:
        for s in socks:
            s.sendall(b"GET /page.html HTTP/1.1\r\nHost: x\r\n\r\n")
            assert s.recv(4096).startswith(b"HTTP/1.1 200")
        assert settle(base + 3) == base + 3
    finally:
        for s in socks:
            s.close()
    assert settle(base) == base
