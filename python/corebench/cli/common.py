"""What `corebench load` and `corebench replay` share: the ab-style flags,
their parsing, and the run → report step."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Optional

import typer

from corebench.errors import UsageError
from corebench.units import parse_duration_s, parse_rate

# Config field -> the flag that sets it, so validation errors name the flag.
FLAGS = {
    "url": "URL",
    "concurrency": "-c/--concurrency",
    "requests": "-n/--requests",
    "duration_s": "-t/--duration",
    "method": "-m/--method",
    "timeout_s": "-s/--timeout",
    "threads": "--threads",
    "headers": "-H/--header",
    "busy_poll_us": "--busy-poll",
    "rate": "--rate",
    "think_s": "--think",
    "seed": "--seed",
    "replay": "ACCESS_LOG",
}

CONCURRENCY = typer.Option(None, "-c", "--concurrency", help="Concurrent connections (closed loop: requests in flight; open loop: the most connections used; default 1, or 1000 with --rate/--speed).")
REQUESTS = typer.Option(None, "-n", "--requests", help="Total requests (default 1, like ab).")
DURATION = typer.Option(None, "-t", "-d", "--duration", help="Run length: 10s, 2m, 500ms; in-flight requests then finish.")
KEEP_ALIVE = typer.Option(False, "-k", "--keep-alive", help="Reuse connections (HTTP keep-alive).")
HTTP10 = typer.Option(False, "--http1.0", help="Send HTTP/1.0 requests.")
HEADER = typer.Option([], "-H", "--header", help="Extra header 'Name: value' (repeatable).")
TIMEOUT = typer.Option("30s", "-s", "--timeout", help="Per-request timeout (ab's -s; default 30s).")
THREADS = typer.Option(0, "--threads", help="Worker threads (default: one per available CPU).")
ALLOW_REMOTE = typer.Option(False, "--allow-remote", help="Allow a target that is not on a loopback address.")
BUSY_POLL = typer.Option("0", "--busy-poll", help="Keep polling this long (e.g. 20us) after each batch instead of sleeping; only with the generator on cores of its own.")
JSON_OUT = typer.Option(None, "--json", help="Write the JSON result to FILE ('-' for stdout, replacing the text report).")
HGRM = typer.Option(None, "--hgrm", help="Write the total-latency percentile distribution (.hgrm) to FILE.")
RATE = typer.Option(None, "--rate", help="Open loop: requests per second (R, or START..END with --ramp), sent on schedule whatever the responses do; latency counts from the intended send time.")
RAY = typer.Option(None, "--ray", help="Spread the load over agents on this Ray cluster: HOST:PORT of its head, ray://HOST:PORT, or auto (needs corebench[ray]).")
AGENTS = typer.Option(2, "--agents", help="With --ray: load agents, one per node where the cluster has the nodes; connections, users and rates are shared out.")
AGENT_CPUS = typer.Option(1.0, "--agent-cpus", help="With --ray: the CPUs each agent reserves on its node, and (without --threads) its load threads.")
STRICT_SPREAD = typer.Option(False, "--strict-spread", help="With --ray: every agent on a node of its own, or an error before any load.")
RAMP = typer.Option(None, "--ramp", help="With --rate START..END: ramp linearly over this long (e.g. 60s), then hold END.")


def headers(raw: list[str]) -> list[tuple[str, str]]:
    out = []
    for h in raw:
        name, sep, value = h.partition(":")
        if not sep or not name.strip():
            raise UsageError(f"-H {h!r}: a header is 'Name: value'")
        out.append((name.strip(), value.strip()))
    return out


def duration(text: Optional[str], flag: str) -> Optional[float]:
    if text is None:
        return None
    try:
        return parse_duration_s(text)
    except ValueError as e:
        raise UsageError(f"{flag}: {e}") from None


def rate(text: Optional[str], ramp: Optional[str]) -> Optional[dict[str, Any]]:
    """`--rate 5000` or `--rate 100..5000 --ramp 60s`."""
    if text is None:
        if ramp is not None:
            raise UsageError("--ramp: a ramp needs --rate START..END")
        return None
    try:
        start, end = parse_rate(text)
    except ValueError as e:
        raise UsageError(f"--rate: {e}") from None
    if end is None:
        if ramp is not None:
            raise UsageError("--ramp: give the rate as a range START..END, like --rate 100..5000")
        return {"rps": start}
    if ramp is None:
        raise UsageError(f"--rate {text}: a range needs --ramp DURATION, like --ramp 60s")
    return {"rps": start, "end_rps": end, "ramp_s": duration(ramp, "--ramp")}


def common_settings(
    *, concurrency: Optional[int], open_loop: bool, requests: Optional[int], duration_text: Optional[str],
    keep_alive: bool, http10: bool, header: list[str], timeout: str, threads: int, allow_remote: bool,
    busy_poll: str,
) -> dict[str, Any]:
    return dict(
        # An open loop opens connections as it needs them, up to -c.
        concurrency=concurrency if concurrency is not None else (1000 if open_loop else 1),
        requests=requests,
        duration_s=duration(duration_text, "-t/--duration"),
        keep_alive=keep_alive,
        http_version="1.0" if http10 else "1.1",
        headers=headers(header),
        timeout_s=duration(timeout, "-s/--timeout"),
        threads=threads,
        allow_remote=allow_remote,
        busy_poll_us=round((duration(busy_poll, "--busy-poll") or 0) * 1e6),
    )


def cluster(ray: Optional[str], agents: int, strict_spread: bool, agent_cpus: float = 1.0) -> Optional[Any]:
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
    return ClusterConfig(address=ray, agents=agents, strict_spread=strict_spread, agent_cpus=agent_cpus)


def run_and_report(config: Any, json_out: Optional[str], hgrm: Optional[Path], cluster: Optional[Any] = None) -> None:
    """Runs the load (here, or on a cluster's agents), prints the text report
    (unless --json -), writes files."""
    from corebench import engine, output

    result = engine.run(config) if cluster is None else _distributed(config, cluster)
    if json_out != "-":
        sys.stdout.write(output.get("text").render(result, config))
    if json_out:
        write(json_out, output.get("json").render(result, config), "--json")
    if hgrm:
        write(str(hgrm), output.get("hgrm").render(result, config), "--hgrm")
    if result.interrupted:
        raise typer.Exit(130)


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
    try:
        Path(dest).write_text(text)
    except OSError as e:
        raise UsageError(f"{flag} {dest}: cannot write ({e.strerror or e})") from None
