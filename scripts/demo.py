#!/usr/bin/env python3
"""`make demo`: a load test against the built-in server, ending in the report.

Until the experiment runner lands, the demo starts `corebench serve` (async
model, 2 workers) on a free loopback port and loads its dynamic page (a
template rendered with the current time after 1 ms of CPU work, like the
framework page of the first field report) for 5 seconds with 8 keep-alive
connections, then prints corebench's ab-compatible report; the JSON result
and the latency distribution are written under out/demo/.
"""

import pathlib
import sys

from corebench.cli import main
from corebench.target.builtin import Served

out = pathlib.Path("out/demo")
out.mkdir(parents=True, exist_ok=True)
with Served("--model", "async", "--workers", "2") as server:
    url = f"{server.url}dynamic?work_us=1000"
    print(f"# demo: corebench serve (async, 2 workers), dynamic page with 1 ms of work: {url}\n", flush=True)
    code = main(["load", "-k", "-l", "-c", "8", "-t", "5s", "--json", str(out / "result.json"),
                 "--hgrm", str(out / "latency.hgrm"), url])
print(f"\n# demo: JSON result in {out / 'result.json'}, latency distribution in {out / 'latency.hgrm'}")
sys.exit(code)
