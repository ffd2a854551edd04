#!/usr/bin/env python3
"""10,000 concurrent keep-alive connections to a local nginx for 10 s, on
each of corebench's transports in turn (io_uring, epoll): the errors (must
be zero), nginx's count against corebench's, and the generator's peak
resident memory (goal: under 100 MB), read from the kernel's accounting of
each finished corebench process.

    .venv/bin/python bench/many_connections.py [--conns 10000] [--seconds 10] [--io uring,epoll]
"""

import argparse
import contextlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

from corebench.testing.nginx import Nginx


def raise_nofile(needed: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = max(soft, needed)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, max(hard, want)))
    except (ValueError, OSError):
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
    got = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    print(f"open-file limit: {soft} -> {got}" + ("" if got >= needed else f" (the system forbids {needed})"))


def raise_backlogs(needed: int) -> None:
    """A connection storm of `needed` connects overflows the kernel's default
    accept and SYN queues (4096 and 2048 here), and the overflow ends as resets
    that are the kernel's doing, not the server's: raise them when allowed."""
    for key in ("net/core/somaxconn", "net/ipv4/tcp_max_syn_backlog"):
        path = f"/proc/sys/{key}"
        with open(path) as f:
            old = int(f.read())
        if old >= needed:
            continue
        try:
            with open(path, "w") as f:
                f.write(str(needed))
            print(f"{key.replace('/', '.')}: {old} -> {needed}")
        except OSError as e:
            print(f"{key.replace('/', '.')}: {old}, could not raise it ({e.strerror}); expect connect resets")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--conns", type=int, default=10000)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--io", default="uring,epoll", help="the transports to run, in turn")
    a = ap.parse_args()
    raise_nofile(a.conns + 1000)  # nginx and corebench each hold one fd per connection
    raise_backlogs(a.conns + 100)
    cli = os.path.join(os.path.dirname(sys.executable), "corebench")
    ok = True
    # Twice the connections: a connection the client replaced is still open
    # in nginx for a moment, and an nginx short of slots closes idle
    # keep-alive ones and refuses new ones, which would read as our errors.
    with Nginx(connections=2 * a.conns) as n:
        for io in a.io.split(","):
            ok &= measure(cli, n, io, a.conns, a.seconds)
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


def settled(n: Nginx, within_s: float = 10.0) -> int:
    """Waits (bounded) until nginx has closed the last run's connections: the
    generator's exit closes them all at once, and nginx holds each until it
    reads its end. One run that started at once lost 64 requests to
    "connection closed by server", most likely nginx short of connections
    freeing idle keep-alive ones with requests on their way in."""
    deadline = time.monotonic() + within_s
    while (held := n.active()) > 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    return held


def measure(cli: str, n: Nginx, io: str, conns: int, seconds: int) -> bool:
    if (held := settled(n)) > 1:
        print(f"--io {io}: nginx still holds {held} connections of the last run", file=sys.stderr)
    before = n.served()
    args = [cli, "load", "-k", "--io", io, "-c", str(conns), "-t", f"{seconds}s", "--json", "-", n.url]
    with tempfile.TemporaryFile() as err:
        p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=err)
        assert p.stdout is not None
        out = p.stdout.read()
        # This child's own peak (RUSAGE_CHILDREN would be the largest of all).
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        stderr = err.read().decode()
    counted = n.served_since(before)
    if p.returncode != 0:
        print(f"--io {io}: {stderr}", file=sys.stderr)
        return False
    r = json.loads(out)
    rss_mb = usage.ru_maxrss / 1024
    print(
        f"{r['io']}: {conns} keep-alive connections, {seconds}s: {r['responses']} responses "
        f"({r['throughput_rps']:.0f} req/s), {r['connections_opened']} connections opened, "
        f"{r['failed']} errors {r['errors']}, nginx counted {counted}"
    )
    for s in r["error_samples"]:
        print(f"  error sample: {s}")
    print(f"  generator peak RSS: {rss_mb:.1f} MB (Python interpreter included)")
    return r["failed"] == 0 and rss_mb < 100 and counted == r["responses"]


if __name__ == "__main__":
    sys.exit(main())
