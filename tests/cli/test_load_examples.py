"""Every example `corebench load` shows, in its --help and in the flag tables
of docs/load.md, runs against the built-in server and ends well: exit 0,
the report (or the format asked for) on stdout, the files it names written."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from corebench.targets.builtin import Served
from corebench.units import parse_duration_s
from tests.conftest import CLI, ROOT

DOCS = ROOT / "docs" / "load.md"
# The address the examples name for the server, and for -X's proxy: both are
# the built-in server here, which answers a proxy's absolute-form requests too.
SERVER, PROXY = "127.0.0.1:8080", "127.0.0.1:3128"
# The docs' node_exporter host.
EXPORTER = "10.0.0.5"


def help_examples() -> list[str]:
    env = {**os.environ, "COLUMNS": "250", "NO_COLOR": "1"}
    out = subprocess.run(CLI + ["load", "--help"], capture_output=True, text=True, env=env, timeout=60).stdout
    lines = [line.strip(" │") for line in out.splitlines()]
    return [line.split("  #")[0].strip() for line in lines if line.startswith("corebench load ")]


def doc_examples() -> list[str]:
    """The example column of every flag table (a table whose header starts with `| flag |`)."""
    out, in_table = [], False
    for line in DOCS.read_text().splitlines():
        if line.startswith("| flag |"):
            in_table = "example" in line
            continue
        if not line.startswith("|"):
            in_table = False
        elif in_table:
            out += re.findall(r"`(corebench load [^`]+)`", line)
    return out


def test_the_help_and_the_docs_show_examples():
    assert len(help_examples()) >= 8, help_examples()
    docs = doc_examples()
    assert len(docs) >= 30, docs
    # Every ab and wrk flag the issue asked for has a documented example.
    words = {w for e in docs for w in shlex.split(e)}
    for flag in ("-v", "-e", "-g", "-r", "-X", "-A", "-C", "-u", "-S", "-V", "-w", "-l", "-L", "-R", "-d", "-p"):
        assert flag in words, flag
    assert "--timeout" in words


@pytest.fixture(scope="module")
def server():
    with Served("--workers", "2") as s:
        yield s


@pytest.fixture(scope="module")
def workdir(tmp_path_factory, server):
    d = tmp_path_factory.mktemp("examples")
    (d / "body.json").write_text('{"name": "corebench", "n": 1}\n')
    base = server.url.rstrip("/")
    (d / "urls.txt").write_text(f"{base}/\n/static/2k\n/page.html POST a=1\n")
    return d


def check(args: list[str], p: subprocess.CompletedProcess, cwd: Path) -> None:
    assert p.returncode == 0, (args, p.stdout[-2000:], p.stderr[-2000:])
    flags = set(args)
    if "-V" in flags or "--version" in flags:
        assert p.stdout.startswith("corebench "), p.stdout
        return
    if "-w" in flags:
        assert "<table >" in p.stdout and p.stdout.rstrip().endswith("</table>"), p.stdout
    else:
        assert "Complete requests:" in p.stdout and "Failed requests:        0" in p.stdout, p.stdout
        assert "no request succeeded" not in p.stdout
    files = {"-e": "Percentage served,Time in ms\n0,", "-g": "starttime\tseconds\tctime", "--hgrm": "       Value"}
    for flag, start in files.items():
        if flag in flags:
            text = (cwd / args[args.index(flag) + 1]).read_text()
            assert text.startswith(start), (flag, text[:200])
    if "--json" in flags:
        r = json.loads((cwd / args[args.index("--json") + 1]).read_text())
        assert r["schema"] == "corebench.load/1" and r["failed"] == 0
    expected = {
        "-L": "Latency Distribution",
        "--latency": "Latency Distribution",
        "-S": "              min   avg   max",
        "-v": "INFO: ",
        "-p": "Total body sent:",
        "-u": "Total body sent:",
    }
    for flag, text in expected.items():
        if flag in flags:
            assert text in p.stdout, (flag, p.stdout)
    if "-d" in flags:
        assert "Percentage of the requests" not in p.stdout


def examples() -> list[str]:
    seen: dict[str, None] = {}
    for e in help_examples() + doc_examples():
        seen.setdefault(e)
    return list(seen)


@pytest.mark.parametrize("example", examples())
def test_every_example_runs(example, server, workdir):
    address = server.url.split("//")[1].rstrip("/")
    # Nothing leaves this machine: the docs' exporter host is asked here.
    here = [
        a.replace(SERVER, address).replace(PROXY, address).replace(EXPORTER, "127.0.0.1") for a in shlex.split(example)
    ]
    args = _at_most(MAX_RUN_S, here)
    assert args[:2] == ["corebench", "load"]
    p = subprocess.run(
        [sys.executable, "-m", "corebench", *args[1:]], capture_output=True, text=True, cwd=workdir, timeout=120
    )
    check(args, p, workdir)


# Each example's flags show in a short run: a documented 30 s run is run
# for this long (its -t shortened), not for its 30 s.
MAX_RUN_S = 3.0


def _at_most(seconds: float, args: list[str]) -> list[str]:
    out = list(args)
    for i, a in enumerate(out[:-1]):
        if a == "-t" and parse_duration_s(out[i + 1]) > seconds:
            out[i + 1] = f"{seconds:g}s"
    return out
