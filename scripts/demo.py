#!/usr/bin/env python3
"""`make demo`: a load test against a local server, ending in the report.

Until the experiment runner and the built-in server land, the demo starts a
private nginx on a free loopback port (a 2 KB page, as in the first field
report), loads it for 5 seconds with 50 keep-alive connections, and prints
corebench's ab-compatible report; the JSON result and the latency
distribution are written under out/demo/.
"""

import pathlib
import sys

from corebench.cli import main
from corebench.target.nginx import Nginx

out = pathlib.Path("out/demo")
out.mkdir(parents=True, exist_ok=True)
with Nginx(page_bytes=2048) as nginx:
    print(f"# demo: nginx (1 worker) serving a 2 KB page at {nginx.url}\n", flush=True)
    code = main(["load", "-k", "-c", "50", "-t", "5s", "--json", str(out / "result.json"),
                 "--hgrm", str(out / "latency.hgrm"), nginx.url])
print(f"\n# demo: JSON result in {out / 'result.json'}, latency distribution in {out / 'latency.hgrm'}")
sys.exit(code)
