#!/usr/bin/env python3
"""`make demo`: the cores-worth-it experiment (examples/cores-worth-it)
against the built-in server, shortened to end within about two minutes
(2-second runs, concurrency 25 and 150), then the same question asked as
capacity (examples/cores-worth-it/capacity.toml: the rate each core count
sustains within p99 <= 50 ms), with both HTML reports; prints their paths
and verdicts."""

import pathlib
import sys
import tomllib

from corebench.cli import main

out = pathlib.Path("out/demo")
out.mkdir(parents=True, exist_ok=True)
plan_src = pathlib.Path("examples/cores-worth-it/plan.toml")
plan = out / "cores-worth-it.toml"
text = plan_src.read_text().replace('duration = "5s"', 'duration = "2s"')
plan.write_text(text.replace("concurrency = [25, 75, 150]", "concurrency = [25, 150]"))
short = tomllib.loads(plan.read_text())
assert short["experiment"]["duration"] == "2s" and short["factors"]["concurrency"] == [25, 150]
for leftover in [*out.glob("cores-worth-it.sqlite*"), *out.glob("cores-capacity.sqlite*")]:
    leftover.unlink()
store = out / "cores-worth-it.sqlite"
code = main(["run", str(plan), "--store", str(store)])
if code not in (0, 1):
    sys.exit(code)
code = main(["report", str(store), "-o", str(out / "report.html")])
if code != 0:
    sys.exit(code)
capacity = out / "cores-capacity.sqlite"
code = main(["run", "examples/cores-worth-it/capacity.toml", "--store", str(capacity)])
if code not in (0, 1):
    sys.exit(code)
# 1,000 req/s: more than one core of this page sustains on the machines tried.
sys.exit(main(["report", str(capacity), "-o", str(out / "capacity.html"), "--traffic", "1000"]))
