"""`corebench load URL`: one load test, with ab's flags and ab's report; or
an open-loop rate (wrk2), users with think time and URL lists (siege)."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any, Optional

import typer

from corebench.cli import app, common
from corebench.cli.validate import build
from corebench.errors import UsageError
from corebench.units import parse_span_s


def _body(path: Optional[Path]) -> bytes:
    if path is None:
        return b""
    try:
        return path.read_bytes()
    except OSError as e:
        raise UsageError(f"-p {path}: cannot read the body file ({e.strerror or e}); give a readable file") from None


def _think(text: Optional[str], users: Optional[int]) -> Optional[tuple[float, float]]:
    """`--think 2s` is siege's -d: uniform in 0..2s; `--think 0.5s..2s` a range."""
    if text is None:
        return None if users is None else (0.0, 0.0)
    if users is None:
        raise UsageError("--think: think time belongs to users: give --users N")
    try:
        return parse_span_s(text)
    except ValueError as e:
        raise UsageError(f"--think: {e}") from None


def _urls(path: Optional[Path], url: Optional[str]) -> tuple[str, list[dict[str, Any]]]:
    if path is None:
        if url is None:
            raise UsageError("URL: give the URL to load, or a file of URLs with --urls FILE")
        return url, []
    from corebench.config.urls import read_url_file

    entries = read_url_file(path, base=url)
    specs = [{"url": e.url, "method": e.method, "body_base64": base64.b64encode(e.body).decode()} for e in entries]
    return url or entries[0].url, specs


@app.command("load")
def load(
    url: Optional[str] = typer.Argument(None, help="http:// or https:// URL on a loopback address (with --urls: the base for bare paths)"),
    concurrency: Optional[int] = common.CONCURRENCY,
    requests: Optional[int] = common.REQUESTS,
    duration: Optional[str] = common.DURATION,
    keep_alive: bool = common.KEEP_ALIVE,
    http10: bool = common.HTTP10,
    method: str = typer.Option("GET", "-m", "--method", help="Request method."),
    head: bool = typer.Option(False, "-i", "--head", help="Send HEAD requests."),
    header: list[str] = common.HEADER,
    body_file: Optional[Path] = typer.Option(None, "-p", "--body-file", help="Send this file as the request body (POST unless -m)."),
    content_type: Optional[str] = typer.Option(None, "-T", "--content-type", help="Content-Type of the body."),
    timeout: str = common.TIMEOUT,
    threads: int = common.THREADS,
    variable_length: bool = typer.Option(False, "-l", "--variable-length", help="Accept varying document lengths (ab's -l)."),
    allow_remote: bool = common.ALLOW_REMOTE,
    busy_poll: str = common.BUSY_POLL,
    rate: Optional[str] = common.RATE,
    ramp: Optional[str] = common.RAMP,
    users: Optional[int] = typer.Option(None, "--users", help="Users (siege -c): each requests, thinks, and requests again; adds siege's summary."),
    think: Optional[str] = typer.Option(None, "--think", help="Think time of each user: 2s means uniform in 0..2s (siege -d), or MIN..MAX; 0 is siege's benchmark mode."),
    urls: Optional[Path] = typer.Option(None, "--urls", help="A file of URLs in siege's format (URL, or URL POST body), taken in order."),
    random_order: bool = typer.Option(False, "--random", help="Take --urls at random (siege -i)."),
    seed: int = typer.Option(1, "--seed", help="Seed of the random URL order and think times."),
    json_out: Optional[str] = common.JSON_OUT,
    hgrm: Optional[Path] = common.HGRM,
    ray: Optional[str] = common.RAY,
    agents: int = common.AGENTS,
    strict_spread: bool = common.STRICT_SPREAD,
    agent_cpus: float = common.AGENT_CPUS,
) -> None:
    """Load a URL like ab or wrk: closed loop, -c connections, -n requests or -t seconds."""
    from corebench.config.load import LoadConfig

    if users is not None and concurrency is not None and users != concurrency:
        raise UsageError(f"--users {users} and -c {concurrency} disagree: users are the connections, give one")
    body = _body(body_file)
    if body and method == "GET":
        method = "POST"
    url, url_specs = _urls(urls, url)
    rate_cfg = common.rate(rate, ramp)
    config = build(
        LoadConfig,
        common.FLAGS,
        url=url,
        method="HEAD" if head else method,
        body=body,
        content_type=content_type,
        # Different URLs have different lengths: ab's length rule means nothing there.
        variable_length=variable_length or bool(url_specs),
        rate=rate_cfg,
        think_s=_think(think, users),
        urls=url_specs,
        random_order=random_order,
        seed=seed,
        **common.common_settings(
            concurrency=users if users is not None else concurrency, open_loop=rate_cfg is not None,
            requests=requests, duration_text=duration, keep_alive=keep_alive, http10=http10, header=header,
            timeout=timeout, threads=threads, allow_remote=allow_remote, busy_poll=busy_poll,
        ),
    )
    common.run_and_report(config, json_out, hgrm, common.cluster(ray, agents, strict_spread, agent_cpus))
