"""`corebench load URL`: one load test, with ab's flags and ab's report."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from corebench.cli import app
from corebench.cli.validate import build
from corebench.errors import UsageError
from corebench.units import parse_duration_s

# Config field -> the flag that sets it, so validation errors name the flag.
_FLAGS = {
    "url": "URL",
    "concurrency": "-c/--concurrency",
    "requests": "-n/--requests",
    "duration_s": "-t/--duration",
    "method": "-m/--method",
    "timeout_s": "-s/--timeout",
    "threads": "--threads",
    "headers": "-H/--header",
    "busy_poll_us": "--busy-poll",
}


def _headers(raw: list[str]) -> list[tuple[str, str]]:
    out = []
    for h in raw:
        name, sep, value = h.partition(":")
        if not sep or not name.strip():
            raise UsageError(f"-H {h!r}: a header is 'Name: value'")
        out.append((name.strip(), value.strip()))
    return out


def _body(path: Optional[Path]) -> bytes:
    if path is None:
        return b""
    try:
        return path.read_bytes()
    except OSError as e:
        raise UsageError(f"-p {path}: cannot read the body file ({e.strerror or e}); give a readable file") from None


def _duration(text: Optional[str], flag: str) -> Optional[float]:
    if text is None:
        return None
    try:
        return parse_duration_s(text)
    except ValueError as e:
        raise UsageError(f"{flag}: {e}") from None


@app.command("load")
def load(
    url: str = typer.Argument(..., help="http:// or https:// URL on a loopback address"),
    concurrency: int = typer.Option(1, "-c", "--concurrency", help="Concurrent connections (requests in flight)."),
    requests: Optional[int] = typer.Option(None, "-n", "--requests", help="Total requests (default 1, like ab)."),
    duration: Optional[str] = typer.Option(None, "-t", "-d", "--duration", help="Run length: 10s, 2m, 500ms; in-flight requests then finish."),
    keep_alive: bool = typer.Option(False, "-k", "--keep-alive", help="Reuse connections (HTTP keep-alive)."),
    http10: bool = typer.Option(False, "--http1.0", help="Send HTTP/1.0 requests."),
    method: str = typer.Option("GET", "-m", "--method", help="Request method."),
    head: bool = typer.Option(False, "-i", "--head", help="Send HEAD requests."),
    header: list[str] = typer.Option([], "-H", "--header", help="Extra header 'Name: value' (repeatable)."),
    body_file: Optional[Path] = typer.Option(None, "-p", "--body-file", help="Send this file as the request body (POST unless -m)."),
    content_type: Optional[str] = typer.Option(None, "-T", "--content-type", help="Content-Type of the body."),
    timeout: str = typer.Option("30s", "-s", "--timeout", help="Per-request timeout (ab's -s; default 30s)."),
    threads: int = typer.Option(0, "--threads", help="Worker threads (default: one per available CPU)."),
    variable_length: bool = typer.Option(False, "-l", "--variable-length", help="Accept varying document lengths (ab's -l)."),
    allow_remote: bool = typer.Option(False, "--allow-remote", help="Allow a target that is not on a loopback address."),
    busy_poll: str = typer.Option("0", "--busy-poll", help="Keep polling this long (e.g. 20us) after each batch instead of sleeping; only with the generator on cores of its own."),
    json_out: Optional[str] = typer.Option(None, "--json", help="Write the JSON result to FILE ('-' for stdout, replacing the text report)."),
    hgrm: Optional[Path] = typer.Option(None, "--hgrm", help="Write the total-latency percentile distribution (.hgrm) to FILE."),
) -> None:
    """Load a URL like ab or wrk: closed loop, -c connections, -n requests or -t seconds."""
    from corebench import engine, output
    from corebench.config.load import LoadConfig

    body = _body(body_file)
    if body and method == "GET":
        method = "POST"
    config = build(
        LoadConfig,
        _FLAGS,
        url=url,
        concurrency=concurrency,
        requests=requests,
        duration_s=_duration(duration, "-t/--duration"),
        keep_alive=keep_alive,
        http_version="1.0" if http10 else "1.1",
        method="HEAD" if head else method,
        headers=_headers(header),
        body=body,
        content_type=content_type,
        timeout_s=_duration(timeout, "-s/--timeout"),
        threads=threads,
        variable_length=variable_length,
        allow_remote=allow_remote,
        busy_poll_us=round(_duration(busy_poll, "--busy-poll") * 1e6),
    )
    result = engine.run(config)
    if json_out != "-":
        sys.stdout.write(output.get("text").render(result, config))
    if json_out:
        _write(json_out, output.get("json").render(result, config), "--json")
    if hgrm:
        _write(str(hgrm), output.get("hgrm").render(result, config), "--hgrm")
    if result.interrupted:
        raise typer.Exit(130)


def _write(dest: str, text: str, flag: str) -> None:
    if dest == "-":
        sys.stdout.write(text)
        return
    try:
        Path(dest).write_text(text)
    except OSError as e:
        raise UsageError(f"{flag} {dest}: cannot write ({e.strerror or e})") from None
