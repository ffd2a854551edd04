"""`corebench replay ACCESS_LOG --target URL`: a real access log replayed in
its order, as fast as -c connections allow or at the log's own pace."""

from __future__ import annotations

from pathlib import Path

import typer

from corebench.cli import app, common


@app.command("replay")
def replay(
    log: Path = typer.Argument(..., help="Access log in Common or Combined Log Format (or --log-format)."),
    target: str = typer.Option(
        ..., "--target", help="The server to replay against: http://127.0.0.1:8080 (a path is a prefix)."
    ),
    speed: float | None = typer.Option(
        None,
        "--speed",
        help=(
            "Send each request at its time in the log, this many times faster (1 = real time); default: as fast as -c "
            "allows."
        ),
    ),
    log_format: str | None = typer.Option(
        None, "--log-format", help="Apache LogFormat string of the log, e.g. '%h %l %u %t \"%r\" %>s %b %D'."
    ),
    allow_unsafe: bool = typer.Option(False, "--allow-unsafe", help="Also replay methods other than GET and HEAD."),
    limit: int | None = typer.Option(None, "--limit", help="Replay at most this many of the log's requests."),
    looped: bool = typer.Option(False, "--loop", help="Start over at the end of the log (needs -t or -n)."),
    concurrency: int | None = common.CONCURRENCY,
    requests: int | None = common.REQUESTS,
    duration: str | None = common.DURATION,
    keep_alive: bool = common.KEEP_ALIVE,
    http10: bool = common.HTTP10,
    http2: bool = common.HTTP2,
    streams: int | None = common.STREAMS,
    header: list[str] = common.HEADER,
    timeout: str | None = common.TIMEOUT,
    threads: int | None = common.THREADS,
    allow_remote: bool = common.ALLOW_REMOTE,
    busy_poll: str | None = common.BUSY_POLL,
    linger: str | None = common.LINGER,
    io: str | None = common.IO,
    seed: int | None = typer.Option(None, "--seed", help="Seed of the engine's random choices, for a repeatable run."),
    json_out: str | None = common.JSON_OUT,
    quiet: bool = common.QUIET,
    force: bool = common.FORCE,
    monitor: str | None = common.MONITOR,
    threshold: list[str] | None = common.THRESHOLD,
    print_config: bool = common.PRINT_CONFIG,
    ray: str | None = common.RAY,
    agents: int = common.AGENTS,
    strict_spread: bool = common.STRICT_SPREAD,
    agent_cpus: float = common.AGENT_CPUS,
    agent_timeout: str | None = common.AGENT_TIMEOUT,
    hgrm: Path | None = common.HGRM,
) -> None:
    """Replay an access log against a server; every line is replayed or skipped with its reason."""
    flags = {**common.FLAGS, "url": "--target"}
    given = common.settings(
        flags,
        url=target,
        log=str(log),
        speed=speed,
        log_format=log_format,
        allow_unsafe=allow_unsafe,
        limit=limit,
        loop=looped,
        concurrency=concurrency,
        requests=requests,
        duration=duration,
        keep_alive=keep_alive,
        http=common.http(http10, http2),
        streams=streams,
        headers=common.headers(header),
        timeout=timeout,
        threads=threads,
        allow_remote=allow_remote,
        busy_poll=busy_poll,
        linger=linger,
        io=io,
        seed=seed,
    )
    config = common.to_config(given, flags, local=ray is None)
    if print_config:
        common.print_config(config)
        return
    criteria = common.thresholds(threshold)
    cluster = common.cluster(ray, agents, strict_spread, agent_cpus, agent_timeout)
    common.run_and_report(
        config, json_out, hgrm, cluster, criteria, quiet=quiet, force=force, command="replay", monitor=monitor
    )
