"""What `corebench load` and `corebench replay` share: the ab-style flags,
their parsing, and the run → report step."""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import typer

from corebench.cli.validate import build
from corebench.config import engine as _engine_models
from corebench.config.settings import LoadConfig, LoadSettings, SettingError, engine_config
from corebench.errors import UsageError
from corebench.output.options import ReportOptions

# Setting (LoadSettings field) -> the flag that sets it, so an error names the flag.
FLAGS = {
    "url": "URL",
    "concurrency": "-c/--concurrency",
    "requests": "-n/--requests",
    "duration": "-t/--duration",
    "keep_alive": "-k/--keep-alive",
    "http": "--http1.0/--http2",
    "streams": "--streams",
    "method": "-m/--method",
    "headers": "-H/--header",
    "body": "-p/--body-file",
    "content_type": "-T/--content-type",
    "timeout": "-s/--timeout",
    "threads": "--threads",
    "variable_length": "-l/--variable-length",
    "allow_remote": "--allow-remote",
    "busy_poll": "--busy-poll",
    "linger": "--linger",
    "io": "--io",
    "rate": "--rate",
    "ramp": "--ramp",
    "arrivals": "--arrivals",
    "think": "--think",
    "urls": "--urls",
    "random": "--random",
    "seed": "--seed",
    "log": "ACCESS_LOG",
    "speed": "--speed",
    "log_format": "--log-format",
    "allow_unsafe": "--allow-unsafe",
    "limit": "--limit",
    "loop": "--loop",
    "proxy": "-X/--proxy",
    "auth": "-A/--auth",
    "cookies": "-C/--cookie",
    "trace": "-g/--gnuplot",
    "heads": "-v/--verbosity",
}
_ENGINE_DEFAULTS = _engine_models.LoadConfig.model_fields

CONCURRENCY = typer.Option(
    None,
    "-c",
    "--concurrency",
    help=(
        "Concurrent connections (closed loop: requests in flight; open loop: the most connections used; default 1, or "
        "1000 with --rate/--speed)."
    ),
)
REQUESTS = typer.Option(None, "-n", "--requests", help="Total requests (default 1, like ab).")
DURATION = typer.Option(
    None, "-t", "-d", "--duration", help="Run length: 10s, 2m, 500ms; requests in flight then get 1 s more to finish."
)
KEEP_ALIVE = typer.Option(False, "-k", "--keep-alive", help="Reuse connections (HTTP keep-alive).")
HTTP10 = typer.Option(False, "--http1.0", help="Send HTTP/1.0 requests.")
HTTP2 = typer.Option(
    False,
    "--http2",
    help="Speak HTTP/2: with prior knowledge (h2c) on http://, agreed by ALPN on https://; refused in one line "
    "when the server does not speak it.",
)
STREAMS = typer.Option(
    None,
    "--streams",
    help="HTTP/2: requests in flight on each connection at once (h2load's -m; default 1); -c connections × this.",
)


def http(http10: bool, http2: bool) -> str | None:
    """The protocol the flags ask for (None: the default, HTTP/1.1)."""
    if http10 and http2:
        raise UsageError("--http1.0 and --http2 ask for two protocols: give one")
    return "1.0" if http10 else "2" if http2 else None


HEADER = typer.Option([], "-H", "--header", help="Extra header 'Name: value' (repeatable).")
TIMEOUT = typer.Option(
    None,
    "-s",
    "--timeout",
    help=f"Per-request timeout (ab's -s, wrk's --timeout; default {_ENGINE_DEFAULTS['timeout_s'].default:g}s).",
)
THREADS = typer.Option(None, "--threads", help="Worker threads (default: one per available CPU).")
MONITOR = typer.Option(
    None,
    "--monitor",
    help="The target's host measured through Prometheus node_exporter during the load (its /metrics URL): "
    "its CPU, and the CPU per request it implies (an upper bound of the server's).",
)
FORCE = typer.Option(
    False,
    "--force",
    help="Measure even while another corebench measures on this machine (the runs of both are marked as sharing it).",
)
ALLOW_REMOTE = typer.Option(False, "--allow-remote", help="Allow a target that is not on a loopback address.")
BUSY_POLL = typer.Option(
    None,
    "--busy-poll",
    help=(
        "Keep polling this long (e.g. 20us) after each batch instead of sleeping; only with the generator on cores of "
        "its own."
    ),
)
LINGER = typer.Option(
    None,
    "--linger",
    help=(
        "HTTP/1.x with keep-alive: when a wait may hold responses, to wake once for many (less CPU for the generator "
        "and a server on the same machine): auto (default: where a probe shows it costs the server no load), off, or "
        "a percent of the response time to always hold for (1-25; a server with room to spare is offered up to that "
        "much less)."
    ),
)
IO = typer.Option(
    None,
    "--io",
    help=(
        "The load threads' I/O: auto (io_uring where the kernel allows it, for http://), uring, or epoll. "
        "The report names the one that ran."
    ),
)
JSON_OUT = typer.Option(
    None, "--json", help="Write the JSON result to FILE ('-' for stdout, replacing the text report)."
)
HGRM = typer.Option(None, "--hgrm", help="Write the total-latency percentile distribution (.hgrm) to FILE.")
RATE = typer.Option(
    None,
    "-R",
    "--rate",
    help=(
        "Open loop: requests per second (R, or START..END with --ramp), sent on schedule whatever the responses do; "
        "latency counts from the intended send time (wrk2's -R)."
    ),
)
RAY = typer.Option(
    None,
    "--ray",
    help=(
        "Spread the load over agents on this Ray cluster: HOST:PORT of its head, ray://HOST:PORT, or auto (needs "
        "corebench[ray])."
    ),
)
AGENTS = typer.Option(
    2,
    "--agents",
    help=(
        "With --ray: load agents, one per node where the cluster has the nodes; connections, users and rates are "
        "shared out."
    ),
)
AGENT_CPUS = typer.Option(
    1.0,
    "--agent-cpus",
    help="With --ray: the CPUs each agent reserves on its node, and (without --threads) its load threads.",
)
AGENT_TIMEOUT = typer.Option(
    None,
    "--agent-timeout",
    help="With --ray: how long an agent may stay silent before the run fails as lost (default 30s).",
)
STRICT_SPREAD = typer.Option(
    False, "--strict-spread", help="With --ray: every agent on a node of its own, or an error before any load."
)
PRINT_CONFIG = typer.Option(
    False,
    "--print-config",
    help="Print the engine configuration these flags give (JSON, every setting) and exit without loading.",
)
RAMP = typer.Option(
    None, "--ramp", help="With --rate START..END: ramp linearly over this long (e.g. 60s), then hold END."
)

ARRIVALS = typer.Option(
    None,
    "--arrivals",
    help=(
        "With --rate: space requests evenly (uniform, the default, as wrk2) or as a Poisson process (poisson: "
        "exponential gaps, as many independent users make)."
    ),
)


def headers(raw: list[str]) -> list[tuple[str, str]]:
    out = []
    for h in raw:
        name, sep, value = h.partition(":")
        if not sep or not name.strip():
            raise UsageError(f"-H {h!r}: a header is 'Name: value'")
        out.append((name.strip(), value.strip()))
    return out


def settings(flags: dict[str, str] = FLAGS, **given: Any) -> LoadSettings:
    """Flags as LoadSettings; a value the settings cannot read names its flag."""
    import pydantic

    try:
        return LoadSettings(**{k: v for k, v in given.items() if v is not None})
    except pydantic.ValidationError as e:
        err = e.errors()[0]
        key = str(err["loc"][0]) if err["loc"] else ""
        raise UsageError(f"{flags.get(key, key)}: {err['msg'].removeprefix('Value error, ')}") from None


def to_config(s: LoadSettings, flags: dict[str, str] = FLAGS, *, local: bool = True) -> LoadConfig:
    """The one translator, then the engine's own checks, errors naming flags.
    `local`: the connections open from this process (not a cluster's agents)."""
    from corebench import engine

    try:
        config = engine_config(s)
        engine.check(config, local=local)
    except SettingError as e:
        raise UsageError(f"{flags.get(e.key, e.key)}: {e}") from None
    return config


def cluster(
    ray: str | None, agents: int, strict_spread: bool, agent_cpus: float = 1.0, agent_timeout: str | None = None
) -> Any | None:
    """The --ray settings, or None for a load from this process alone."""
    if ray is None:
        if strict_spread:
            raise UsageError("--strict-spread: spreading agents needs a cluster: give --ray ADDRESS")
        return None
    from corebench.cluster import ClusterConfig

    if agents < 1:
        raise UsageError(f"--agents {agents}: give at least 1 agent")
    if not agent_cpus > 0:
        raise UsageError(f"--agent-cpus {agent_cpus:g}: give a positive number of CPUs")
    more = {} if agent_timeout is None else {"agent_timeout": agent_timeout}
    flags = {"agent_timeout": "--agent-timeout", "agent_cpus": "--agent-cpus", "agents": "--agents"}
    return build(
        ClusterConfig, flags, address=ray, agents=agents, strict_spread=strict_spread, agent_cpus=agent_cpus, **more
    )


def print_config(config: LoadConfig) -> None:
    """The whole engine configuration, defaults included: what a run would do."""
    sys.stdout.write(config.model_dump_json(indent=2, exclude={"body"}) + "\n")


QUIET = typer.Option(
    False,
    "-q",
    "--quiet",
    help="No live progress line (ab's -q); it is also off when stderr is not a terminal.",
)

THRESHOLD = typer.Option(
    None,
    "--threshold",
    help="Pass/fail criterion, repeatable (k6's thresholds): p99<20ms, errors<0.1%, rps>5000. Exit 99 when one fails.",
)


def thresholds(texts: list[str] | None) -> list[Any]:
    """Parsed before any load: a malformed criterion is bad input."""
    if not texts:
        return []  # without importing the plan package (35 ms of a load's start)
    from corebench.plan import thresholds as th

    out = []
    for text in texts or []:
        try:
            out.append(th.parse(text))
        except ValueError as e:
            raise UsageError(f"--threshold {e}") from None
    return out


# The flag that sends each file format somewhere, for errors.
FILE_FLAGS = {"json": "--json", "hgrm": "--hgrm", "csv": "-e/--csv", "gnuplot": "-g/--gnuplot"}


@dataclass(frozen=True)
class Outputs:
    """Where a run's formats go. stdout holds one: the text report, unless
    ab's -w prints the HTML table instead or a file format is sent to '-'.
    `files` maps a format to its destination, in the order written."""

    files: dict[str, str] = field(default_factory=dict)
    html: bool = False
    options: ReportOptions | None = None  # the text report's layout

    def on_stdout(self) -> list[str]:
        """The flags that claim stdout besides the text report."""
        claims = [f"{FILE_FLAGS[name]} -" for name, dest in self.files.items() if dest == "-"]
        return (["-w/--html"] if self.html else []) + claims

    @property
    def text_on_stdout(self) -> bool:
        return not self.on_stdout()

    def check(self) -> None:
        """Before any load: one format on stdout; the text report's own
        options only where the text report is printed."""
        claims = self.on_stdout()
        if len(claims) > 1:
            raise UsageError(
                f"{claims[0]} and {claims[1]}: both would write to stdout, which holds one format: "
                "write all but one of them to a file"
            )
        o = self.options
        if not claims or o is None:
            return
        for flag, used in (
            ("-L/--latency", o.latency),
            ("-S/--no-confidence", not o.confidence),
            ("-d/--no-percentiles", not o.percentiles),
        ):
            if used:
                raise UsageError(f"{flag}: changes the text report, which {claims[0]} replaces: drop one of them")


def run_and_report(
    config: Any,
    json_out: str | None,
    hgrm: Path | None,
    cluster: Any | None = None,
    criteria: list[Any] | None = None,
    outputs: Outputs | None = None,
    quiet: bool = False,
    force: bool = False,
    command: str = "load",
    monitor: str | None = None,
) -> None:
    """Runs the load (here, with the live progress line on a terminal unless
    `quiet`; or on a cluster's agents), prints the text report (unless stdout
    holds another format), writes files. `outputs`, when given, says where
    every format goes (`json_out` and `hgrm` then unused)."""
    from corebench import machine, output
    from corebench.cli import live

    if outputs is None:
        files = {"json": json_out, "hgrm": str(hgrm) if hgrm is not None else None}
        outputs = Outputs(files={k: v for k, v in files.items() if v})
    outputs.check()
    try:
        # SIGTERM as Ctrl-C: the load stops and what it measured is reported
        # and written, never lost to the default action's instant death.
        watch = _watch(monitor)
        with (
            stopped_by_signals() as got,
            machine.Claim(f"corebench {command}", force) as claim,
            watch or contextlib.nullcontext(),
        ):
            result = live.run(config, quiet) if cluster is None else _distributed(config, cluster)
            sharing = claim.others(claim.began_unix)
    except SettingError as e:
        # Refused at the start of the run (a server that does not speak the
        # HTTP/2 asked for): named by its flag, as the checks before it are.
        raise UsageError(f"{FLAGS.get(e.key, e.key)}: {e}") from None
    dead = result.successes == 0 and not result.interrupted
    aside = sys.stdout if outputs.text_on_stdout else sys.stderr
    if dead:
        # Said first, where a reader looks, and on stderr when stdout holds another format.
        aside.write(f"corebench: no request succeeded: {result.requests:,} sent; {result.failures()}\n")
    options = outputs.options
    if outputs.text_on_stdout:
        sys.stdout.write(output.get("text", options).render(result, config))
    else:
        if options is not None and options.verbosity >= 2:
            # ab's -v lines belong to the text report; beside another format, on stderr.
            sys.stderr.write(output.get("verbose", options).render(result, config))
        if outputs.html:
            sys.stdout.write(output.get("html").render(result, config))
    for name, dest in outputs.files.items():
        write(dest, output.get(name).render(result, config), FILE_FLAGS[name])
    if result.trace is not None and result.trace.left_out:
        print(
            f"corebench: -g/--gnuplot: the file holds {len(result.trace.total_us):,} responses; "
            f"{result.trace.left_out:,} more were not kept (a trace keeps about 1,000,000)",
            file=sys.stderr,
        )
    _watch_generator(result)
    _say_host(watch, result, aside)
    said_sharing(sharing, "measured")
    failed = _judge(criteria or [], result, aside)
    if result.interrupted:
        raise typer.Exit(128 + (got[0] if got else signal.SIGINT))
    if dead:
        raise typer.Exit(1)
    if failed:
        raise typer.Exit(99)


def monitor_url(url: str | None) -> None:
    """--monitor's URL checked before anything runs."""
    if url is not None and not url.startswith(("http://", "https://")):
        raise UsageError(f"--monitor {url!r}: give node_exporter's URL, e.g. http://HOST:9100/metrics")


def _watch(url: str | None) -> Any:
    """An exporter to scrape during the load, where --monitor names one."""
    if url is None:
        return None
    from corebench.monitor.exporter import Exporter

    monitor_url(url)
    return Exporter(url)


def _say_host(watch: Any, result: Any, out: Any) -> None:
    if watch is not None:
        out.write(host_line(watch, result) + "\n")


def host_line(watch: Any, result: Any) -> str:
    """The target host's CPU over the load, and the CPU per successful
    request it implies (D = U / X, Denning & Buzen 1978): the whole host's,
    so an upper bound of the server's own."""
    from corebench.store import MonitorSummary

    s = watch.summary(MonitorSummary())
    if not s.cores or s.host_cpu is None:
        why = s.scrape_error or "fewer than two good scrapes"
        return f"Target host CPU:        unknown: node_exporter gave no figures ({why})"
    per = (
        f"; {s.host_cpu / result.goodput_rps * 1000:.3f} ms of CPU per successful request"
        if result.goodput_rps > 0
        else ""
    )
    local = " (that host ran this load too: its CPU holds the generator's)" if s.exporter_local else ""
    return (
        f"Target host CPU:        {s.host_cpu:.2f} of its {len(s.cores)} CPUs busy over the load (node_exporter, "
        f"{s.scrapes} scrapes, {s.scrape_errors} failed){per}, the whole host's: an upper bound of the server's{local}"
    )


def said_sharing(sharing: list[str], did: str) -> None:
    """On stderr: a --force measurement beside another corebench's."""
    if sharing:
        print(
            f"corebench: {did} while another corebench measured on this machine ({'; '.join(sharing)}): each "
            "figure is partly the other's load",
            file=sys.stderr,
        )


def _judge(criteria: list[Any], result: Any, out: Any) -> bool:
    """Each threshold with its measured value; True when one failed."""
    if not criteria:
        return False
    from corebench.plan.thresholds import judge

    verdicts = judge(criteria, result)
    for t, value, ok in verdicts:
        out.write(f"threshold {t.text}: {t.shown(value)}  {'ok' if ok else 'FAILED'}\n")
    return not all(ok for _, _, ok in verdicts)


def _watch_generator(result: Any) -> None:
    """One line when the generator's own CPU neared what its threads can
    use: the run may have measured the generator, not the server."""
    if result.agents or result.busy_poll_us or not result.duration_s or not result.threads:
        return  # agents are watched by the cluster session; a busy-polling generator is busy by design
    # From the result's module, not the monitor's: psutil's import is 10-25 ms of a load's start.
    from corebench.result import CLIENT_BOUND_MIN_S, CLIENT_BOUND_SHARE

    if result.duration_s < CLIENT_BOUND_MIN_S or not result.successes:
        # Too short to say; or nothing succeeded (the report's first line
        # says what failed): a generator busy retrying refused connects
        # says nothing of a server's limit, and more threads would not help.
        return

    used = result.generator_cpu_s / result.duration_s
    if used >= CLIENT_BOUND_SHARE * result.threads:
        print(
            f"corebench: warning: the generator used {used:.2f} of the {result.threads} cores its threads can use "
            f"({used / result.threads:.0%}): it may have been the limit rather than the server; give it more "
            "threads (--threads), more cores, or more machines (--ray)",
            file=sys.stderr,
        )


def _distributed(config: Any, cluster: Any) -> Any:
    from corebench import cluster as dist

    try:
        return dist.run(config, cluster)
    except dist.AgentFailed as e:
        print(f"corebench: the run failed: {e}", file=sys.stderr)
        raise typer.Exit(1) from None


def write(dest: str, text: str, flag: str) -> None:
    if dest == "-":
        sys.stdout.write(text)
        return
    path = Path(dest)
    if path.exists() and not path.is_file():
        # A device or a pipe (/dev/stdout, a fifo): written as it is, never renamed over.
        try:
            path.write_text(text)
        except OSError as e:
            raise UsageError(f"{flag} {dest}: cannot write ({e.strerror or e})") from None
        return
    # Written beside it under a temporary name, then renamed: a write that
    # fails (a full disk) leaves the old file or none, never a torn one.
    part = path.with_name(f".{path.name}.{os.getpid()}.part")
    try:
        part.write_text(text)
        os.replace(part, path)
    except OSError as e:
        with contextlib.suppress(OSError):
            part.unlink()
        why = f"{flag} {dest}: cannot write ({e.strerror or e})"
        if e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EIO):
            # The machine's trouble, not the user's input: exit 1, not 2.
            print(f"corebench: error: {why}; nothing was written", file=sys.stderr)
            raise typer.Exit(1) from None
        raise UsageError(why) from None


@contextlib.contextmanager
def stopped_by_signals() -> Iterator[list[int]]:
    """Ctrl-C and SIGTERM both stop a long command as Ctrl-C does (a
    KeyboardInterrupt, which the engine turns into an interrupted run);
    yields the signals received, for the exit status 128 + signal."""
    got: list[int] = []

    def stop(signum: int, _frame: object) -> None:
        got.append(signum)
        raise KeyboardInterrupt

    previous = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield got
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
