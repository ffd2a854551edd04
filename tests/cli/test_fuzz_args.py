"""Property-based fuzzing of the command line (hypothesis): whatever
arguments `corebench load` and `corebench run` are given, the typer app
(invoked through typer.testing.CliRunner) ends cleanly (exit 0), with the
parser's own usage error (exit 2), or with the project's UsageError, which
`corebench.cli.main` prints as one line and exit 2; never another exception,
which the user would see as a traceback.

The flags are read from the commands themselves, so new ones are fuzzed
too. No load is generated: `load` always gets `--print-config` (the
configuration is built and checked, then printed instead of run) and `run`
always gets `--dry-run` (the plan is loaded and checked, its runs listed).
URLs, proxies and URL files name loopback addresses or IP literals only,
and any random text is kept from looking like a URL, so nothing is looked up
or contacted."""

from __future__ import annotations

import os
import tempfile
import traceback
from pathlib import Path
from typing import Any
from unittest import mock

import click
import tomli_w
import typer
import typer.main
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from corebench.cli import app, register
from corebench.errors import UsageError
from tests.plan.test_fuzz_plan import PLANS
from tests.support.known_bugs import known

register()
COMMANDS = typer.main.get_command(app).commands  # type: ignore[attr-defined]
DIR = Path(tempfile.mkdtemp(prefix="corebench-fuzz-args-"))
(DIR / "body.json").write_bytes(b'{"a": 1}\n')
(DIR / "urls.txt").write_text("http://127.0.0.1:8080/a\n/b POST x=1\nhttp://[::1]:8080/c\n")
(DIR / "bad-urls.txt").write_text("not a url\n\x00\n")
RUNNER = CliRunner()

URLS = st.sampled_from(
    [
        "http://127.0.0.1:8080/",
        "http://127.0.0.1:8080/x?y=1",
        "https://[::1]:8443/",
        "http://localhost:1/",
        "http://127.0.0.1:0/",
        "http://127.0.0.1:65536/",
        "http://192.0.2.1/",  # TEST-NET-1: not loopback, refused before any connection
        "ftp://127.0.0.1/",
        "http://",
        "http:///x",
        "127.0.0.1:8080",
        "",
        "-",
    ]
)
PROXIES = st.sampled_from(["127.0.0.1:3128", "[::1]:3128", "127.0.0.1", "127.0.0.1:0", ":3128", "192.0.2.1:80", ""])
DURATIONS = st.sampled_from(
    ["10s", "2m", "500ms", "20us", "0", "0s", "-1s", "1", "1.5h", "soon", "", "0.5s..2s", "2s..1s", "9" * 400 + "s"]
)
PATHS = st.sampled_from(
    [str(DIR / n) for n in ("body.json", "urls.txt", "bad-urls.txt", "missing", "out.json", "")] + [str(DIR), "-"]
)


def safe(text: str) -> str:
    """Random text that cannot name a host to look up."""
    return text.replace("://", ":/").replace("@", "")


TEXT = st.text(max_size=16).map(safe)
NUMBERS = st.one_of(
    st.integers(-3, 3000).map(str),
    st.integers().map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(str),
    st.sampled_from(["1e3", "0x10", " 5", "5%", "100..5000", "10..", "..5", "1_000"]),
)
# Values at the edges of every reading: empty, zero, negative, beyond
# float's range, not a number.
EDGES = st.sampled_from(["", "0", "-1", "9" * 400, "9" * 400 + "s", "nan", "inf", "-inf", "1e400", "0.0", " ", "\x00"])
# Values by what a flag's name says it takes.
BY_NAME: dict[str, st.SearchStrategy[str]] = {
    "url": URLS,
    "proxy": PROXIES,
    "ray": st.sampled_from(["auto", "127.0.0.1:6379", "ray://127.0.0.1:10001", ""]),
    "header": st.sampled_from(["Accept: */*", "NoColon", ": x", "X-A:", "Host: a\r\nX: y", "Cookie: a=b"]),
    "cookie": st.sampled_from(["a=b", "a", "=b", "a=b; c=d", "a=b\r\nX: y", ""]),
    "auth": st.sampled_from(["user:secret", "nocolon", " :", ""]),
    "method": st.sampled_from(["GET", "POST", "HEAD", "get", "G E T", "", "M-SEARCH"]),
    "content_type": st.sampled_from(["application/json", "", "a\r\nb"]),
    "arrivals": st.sampled_from(["poisson", "uniform", "gamma", ""]),
    "threshold": st.sampled_from(["p99<20ms", "errors<0.1%", "rps>5000", "p42<1ms", "p99<20", "x", ""]),
    "rate": NUMBERS,
    "think": DURATIONS,
    "repetitions": st.one_of(st.sampled_from(["auto", "3", "0", "-1", "1001", "many"]), NUMBERS),
}


def value_of(param: click.Parameter) -> st.SearchStrategy[str]:
    return st.one_of(_value_of(param), EDGES)


def _value_of(param: click.Parameter) -> st.SearchStrategy[str]:
    name = param.name or ""
    if name in BY_NAME:
        return st.one_of(BY_NAME[name], TEXT)
    kind = getattr(param.type, "name", "")
    if kind in ("integer", "float"):
        return st.one_of(NUMBERS, TEXT)
    if kind == "path":
        return PATHS
    if name in ("duration", "timeout", "ramp", "busy_poll", "think"):
        return st.one_of(DURATIONS, NUMBERS)
    if name in ("json_out", "csv_out", "gnuplot_out", "hgrm", "store"):
        return PATHS
    return st.one_of(DURATIONS, NUMBERS, TEXT)


def flag_args(command: str, fixed: set[str]) -> st.SearchStrategy[list[str]]:
    """Some of a command's options, each as one of its spellings with a value."""
    choices = []
    for param in COMMANDS[command].params:
        if not isinstance(param, click.Option) or param.name in fixed:
            continue
        spellings = st.sampled_from(param.opts + param.secondary_opts)
        if param.is_flag:
            choices.append(spellings.map(lambda s: [s]))
        else:
            choices.append(st.tuples(spellings, value_of(param)).map(list))
    # Never "--": what follows it would be arguments, --print-config too.
    stray = st.sampled_from([["--no-such-flag"], ["-Z"], ["--help"], ["-V"]])
    extra = st.one_of(st.just(["extra-arg"]), TEXT.filter(lambda t: not t.startswith("-")).map(lambda t: [t]), stray)
    parts = st.lists(st.one_of(*choices, extra), max_size=7)
    return parts.map(lambda ps: [a for p in ps for a in p])


def _no_load(*args: Any, **kwargs: Any) -> None:
    raise AssertionError("a fuzzed command line went on to send load")


def invoke(args: list[str]) -> None:
    """The contract: exit 0, the parser's usage error (2), or a UsageError.
    Whatever the arguments, the functions that send load fail the test."""
    with (
        mock.patch("corebench.engine.run", _no_load),
        mock.patch("corebench.cli.common.run_and_report", _no_load),
        mock.patch("corebench.runner.run_experiment", _no_load),
    ):
        result = RUNNER.invoke(app, args)
    exc = result.exception
    if exc is None or isinstance(exc, SystemExit):
        assert result.exit_code in (0, 2), f"corebench {args}: exit {result.exit_code}\n{result.output}"
        return
    if known(exc):
        return
    if isinstance(exc, UsageError):
        message = str(exc)
        assert message and "\n" not in message, f"corebench {args}: not one line: {message!r}"
        return
    trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    raise AssertionError(f"corebench {' '.join(map(repr, args))} raised:\n{trace}")


# Bounded to stay well under a minute for the file on a busy two-core
# machine (each example is an in-process command, about 50 ms of CPU).
# COREBENCH_FUZZ_EXAMPLES=5000 for a deeper search than `make test`'s.
EXAMPLES = int(os.environ.get("COREBENCH_FUZZ_EXAMPLES", "100"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(url=st.one_of(URLS, TEXT), flags=flag_args("load", {"print_config", "version"}), url_first=st.booleans())
def test_load_ends_cleanly_or_in_one_line(url: str, flags: list[str], url_first: bool) -> None:
    args = ["load", url, *flags] if url_first else ["load", *flags, url]
    # Last, so no value-taking flag before it swallows it: no load is sent.
    invoke([*args, "--print-config"])


@st.composite
def plans(draw: st.DrawFn) -> Path:
    path = DIR / "plan.toml"
    path.write_text(tomli_w.dumps(draw(PLANS)))
    return path


@FUZZ
@given(plan=plans(), flags=flag_args("run", {"dry_run"}))
def test_run_ends_cleanly_or_in_one_line(plan: Path, flags: list[str]) -> None:
    args = ["run", str(plan), *flags, "--store", str(DIR / "fuzz.sqlite"), "--dry-run"]
    invoke(args)
    assert not (DIR / "fuzz.sqlite").exists(), "a dry run wrote a store"


def test_the_contract_is_checked() -> None:
    """The contract's checks on known outcomes, so that they are not vacuous."""
    ok = RUNNER.invoke(app, ["load", "-n", "5", "http://127.0.0.1:8080/", "--print-config"])
    assert ok.exit_code == 0 and '"requests": 5' in ok.output
    refused: Any = RUNNER.invoke(app, ["load", "-c", "0", "http://127.0.0.1:8080/", "--print-config"])
    assert isinstance(refused.exception, UsageError) and "-c/--concurrency" in str(refused.exception)
    assert RUNNER.invoke(app, ["load", "--no-such-flag"]).exit_code == 2


# Bugs the fuzzing found outside this test's reach, fixed: their inputs stay as regression tests.


def test_found_by_fuzzing_infinite_busy_poll_in_a_plan() -> None:
    plan = DIR / "busy.toml"
    plan.write_text('[target]\nurl = "http://127.0.0.1:8080/"\n[load]\nbusy_poll = inf\n')
    result = RUNNER.invoke(app, ["run", str(plan), "--store", str(DIR / "busy.sqlite"), "--dry-run"])
    if result.exception is not None and not isinstance(result.exception, UsageError | SystemExit):
        raise result.exception
    assert isinstance(result.exception, UsageError) and "busy_poll" in str(result.exception)
