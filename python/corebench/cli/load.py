"""`corebench load URL`: one load test, with ab's flags and ab's report; or
an open-loop rate (wrk2), users with think time and URL lists (siege)."""

from __future__ import annotations

from pathlib import Path

import typer

from corebench.cli import app, common
from corebench.errors import UsageError


def _body(path: Path | None) -> bytes:
    if path is None:
        return b""
    try:
        return path.read_bytes()
    except OSError as e:
        raise UsageError(f"-p {path}: cannot read the body file ({e.strerror or e}); give a readable file") from None


@app.command("load")
def load(
    url: str | None = typer.Argument(
        None, help="http:// or https:// URL on a loopback address (with --urls: the base for bare paths)"
    ),
    concurrency: int | None = common.CONCURRENCY,
    requests: int | None = common.REQUESTS,
    duration: str | None = common.DURATION,
    keep_alive: bool = common.KEEP_ALIVE,
    http10: bool = common.HTTP10,
    method: str | None = typer.Option(None, "-m", "--method", help="Request method (default GET; POST with -p)."),
    head: bool = typer.Option(False, "-i", "--head", help="Send HEAD requests."),
    header: list[str] = common.HEADER,
    body_file: Path | None = typer.Option(
        None, "-p", "--body-file", help="Send this file as the request body (POST unless -m)."
    ),
    content_type: str | None = typer.Option(None, "-T", "--content-type", help="Content-Type of the body."),
    timeout: str | None = common.TIMEOUT,
    threads: int | None = common.THREADS,
    variable_length: bool = typer.Option(
        False, "-l", "--variable-length", help="Accept varying document lengths (ab's -l)."
    ),
    allow_remote: bool = common.ALLOW_REMOTE,
    busy_poll: str | None = common.BUSY_POLL,
    rate: str | None = common.RATE,
    ramp: str | None = common.RAMP,
    arrivals: str | None = common.ARRIVALS,
    users: int | None = typer.Option(
        None, "--users", help="Users (siege -c): each requests, thinks, and requests again; adds siege's summary."
    ),
    think: str | None = typer.Option(
        None,
        "--think",
        help="Think time of each user: 2s means uniform in 0..2s (siege -d), or MIN..MAX; 0 is siege's benchmark mode.",
    ),
    urls: Path | None = typer.Option(
        None, "--urls", help="A file of URLs in siege's format (URL, or URL POST body), taken in order."
    ),
    random_order: bool = typer.Option(False, "--random", help="Take --urls at random (siege -i)."),
    seed: int | None = typer.Option(None, "--seed", help="Seed of the random URL order and think times."),
    json_out: str | None = common.JSON_OUT,
    threshold: list[str] | None = common.THRESHOLD,
    print_config: bool = common.PRINT_CONFIG,
    hgrm: Path | None = common.HGRM,
    ray: str | None = common.RAY,
    agents: int = common.AGENTS,
    strict_spread: bool = common.STRICT_SPREAD,
    agent_cpus: float = common.AGENT_CPUS,
) -> None:
    """Load a URL like ab or wrk: closed loop, -c connections, -n requests or -t seconds."""
    if users is not None and concurrency is not None and users != concurrency:
        raise UsageError(f"--users {users} and -c {concurrency} disagree: users are the connections, give one")
    if think is not None and users is None:
        raise UsageError("--think: think time belongs to users: give --users N")
    if url is None and urls is None:
        raise UsageError("URL: give the URL to load, or a file of URLs with --urls FILE")
    body = _body(body_file)
    given = common.settings(
        url=url if url is not None else _first_url(urls),
        concurrency=users if users is not None else concurrency,
        requests=requests,
        duration=duration,
        keep_alive=keep_alive,
        http_version="1.0" if http10 else None,
        method="HEAD" if head else ("POST" if body and method is None else method),
        headers=common.headers(header),
        body=body,
        content_type=content_type,
        timeout=timeout,
        threads=threads,
        variable_length=variable_length,
        allow_remote=allow_remote,
        busy_poll=busy_poll,
        rate=rate,
        ramp=ramp,
        arrivals=arrivals,
        think=think if think is not None else ("0" if users is not None else None),
        urls=str(urls) if urls is not None else None,
        random=random_order,
        seed=seed,
    )
    config = common.to_config(given, local=ray is None)
    if print_config:
        common.print_config(config)
        return
    criteria = common.thresholds(threshold)
    common.run_and_report(config, json_out, hgrm, common.cluster(ray, agents, strict_spread, agent_cpus), criteria)


def _first_url(path: Path | None) -> str | None:
    """With --urls and no URL: the file's first URL is the base for bare paths."""
    if path is None:
        return None
    from corebench.config.urls import read_url_file

    return read_url_file(path)[0].url
