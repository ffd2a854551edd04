"""`corebench replay ACCESS_LOG --target URL`: a real access log replayed in
its order, as fast as -c connections allow or at the log's own pace."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from corebench.cli import app, common
from corebench.cli.validate import build


@app.command("replay")
def replay(
    log: Path = typer.Argument(..., help="Access log in Common or Combined Log Format (or --log-format)."),
    target: str = typer.Option(..., "--target", help="The server to replay against: http://127.0.0.1:8080 (a path is a prefix)."),
    speed: Optional[float] = typer.Option(None, "--speed", help="Send each request at its time in the log, this many times faster (1 = real time); default: as fast as -c allows."),
    log_format: Optional[str] = typer.Option(None, "--log-format", help="Apache LogFormat string of the log, e.g. '%h %l %u %t \"%r\" %>s %b %D'."),
    allow_unsafe: bool = typer.Option(False, "--allow-unsafe", help="Also replay methods other than GET and HEAD."),
    limit: Optional[int] = typer.Option(None, "--limit", help="Replay at most this many of the log's requests."),
    looped: bool = typer.Option(False, "--loop", help="Start over at the end of the log (needs -t or -n)."),
    concurrency: Optional[int] = common.CONCURRENCY,
    requests: Optional[int] = common.REQUESTS,
    duration: Optional[str] = common.DURATION,
    keep_alive: bool = common.KEEP_ALIVE,
    http10: bool = common.HTTP10,
    header: list[str] = common.HEADER,
    timeout: str = common.TIMEOUT,
    threads: int = common.THREADS,
    allow_remote: bool = common.ALLOW_REMOTE,
    busy_poll: str = common.BUSY_POLL,
    json_out: Optional[str] = common.JSON_OUT,
    ray: Optional[str] = common.RAY,
    agents: int = common.AGENTS,
    strict_spread: bool = common.STRICT_SPREAD,
    agent_cpus: float = common.AGENT_CPUS,
    hgrm: Optional[Path] = common.HGRM,
) -> None:
    """Replay an access log against a server; every line is replayed or skipped with its reason."""
    from corebench.config.load import LoadConfig, ReplayConfig

    config = build(
        LoadConfig,
        {**common.FLAGS, "url": "--target", "replay.speed": "--speed", "replay.limit": "--limit"},
        url=target,
        variable_length=True,
        replay=build(
            ReplayConfig,
            {"speed": "--speed", "limit": "--limit", "path": "ACCESS_LOG"},
            path=str(log), log_format=log_format, allow_unsafe=allow_unsafe, limit=limit, looped=looped, speed=speed,
        ),
        **common.common_settings(
            concurrency=concurrency, open_loop=speed is not None, requests=requests, duration_text=duration,
            keep_alive=keep_alive, http10=http10, header=header, timeout=timeout, threads=threads,
            allow_remote=allow_remote, busy_poll=busy_poll,
        ),
    )
    common.run_and_report(config, json_out, hgrm, common.cluster(ray, agents, strict_spread, agent_cpus))
