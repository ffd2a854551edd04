"""Servers for your own tests and benchmarks of corebench, or of anything that
sends HTTP load.

- `Nginx`: Debian's nginx on a free loopback port, in a folder of its own,
  serving one page of a chosen size; `served()` is nginx's own count of what
  it answered (stub_status), the truth a load generator's count is checked
  against.
- `MisbehavingServer`: an HTTP/1.1 server that answers in one chosen hostile
  way (garbage, resets, stalls, lies about lengths...), for showing that a
  client classifies the failure and ends in time.
- `NodeExporter`: Debian's Prometheus node_exporter on a free loopback
  port, to try a plan's `[target] monitor` (a running server's host
  measured through its exporter) on one machine.
- `free_port()`: a loopback port nobody listens on.

    import corebench
    from corebench.testing import Nginx

    with Nginx(page_bytes=1024) as n:
        before = n.served()
        result = corebench.load(n.url, concurrency=10, requests=1000)
        assert n.served_since(before) == result.responses == 1000
"""

from corebench.targets.process import free_port
from corebench.testing.misbehaving import MODES, MisbehavingServer
from corebench.testing.nginx import Nginx
from corebench.testing.node_exporter import NodeExporter

__all__ = ["MODES", "MisbehavingServer", "Nginx", "NodeExporter", "free_port"]
