#!/usr/bin/env python3
"""10,000 concurrent keep-alive connections to a local nginx for 10 s: the
errors (must be zero) and the generator's peak resident memory (goal: under
100 MB), read from the kernel's accounting of the finished corebench process.

    .venv/bin/python bench/many_connections.py [--conns 10000] [--seconds 10]
"""

import argparse
import contextlib
import json
import os
import resource
import subprocess
import sys

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
    a = ap.parse_args()
    raise_nofile(a.conns + 1000)  # nginx and corebench each hold one fd per connection
    raise_backlogs(a.conns + 100)
    cli = os.path.join(os.path.dirname(sys.executable), "corebench")
    with Nginx(connections=a.conns + 100) as n:
        before = n.served()
        p = subprocess.run(
            [cli, "load", "-k", "-c", str(a.conns), "-t", f"{a.seconds}s", "--json", "-", n.url],
            capture_output=True,
            text=True,
        )
        counted = n.served_since(before)
    if p.returncode != 0:
        print(p.stderr, file=sys.stderr)
        return 1
    r = json.loads(p.stdout)
    rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(
        f"{a.conns} keep-alive connections, {a.seconds}s: {r['responses']} responses "
        f"({r['throughput_rps']:.0f} req/s), {r['connections_opened']} connections opened, "
        f"{r['failed']} errors {r['errors']}, nginx counted {counted}"
    )
    for s in r["error_samples"]:
        print(f"  error sample: {s}")
    print(f"generator peak RSS: {rss_mb:.1f} MB (Python interpreter included)")
    ok = r["failed"] == 0 and rss_mb < 100 and counted == r["responses"]
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
