#!/usr/bin/env python3
"""`make demo`: the cores-worth-it experiment (examples/cores-worth-it)
against the built-in server, with 2-second runs so it ends within a few
minutes, then its HTML report; prints the report's path and verdict."""

import pathlib
import sys
import tomllib

from corebench.cli import main

out = pathlib.Path("out/demo")
out.mkdir(parents=True, exist_ok=True)
plan_src = pathlib.Path("examples/cores-worth-it/plan.toml")
plan = out / "cores-worth-it.toml"
plan.write_text(plan_src.read_text().replace('duration = "5s"', 'duration = "2s"'))
assert tomllib.loads(plan.read_text())["experiment"]["duration"] == "2s"
store = out / "cores-worth-it.sqlite"
for leftover in out.glob("cores-worth-it.sqlite*"):
    leftover.unlink()
code = main(["run", str(plan), "--store", str(store)])
if code not in (0, 1):
    sys.exit(code)
sys.exit(main(["report", str(store), "-o", str(out / "report.html")]))
