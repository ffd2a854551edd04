"""`corebench serve`: the built-in target server, in its own process."""

from __future__ import annotations

import typer

from corebench.cli import app
from corebench.cli.validate import build
from corebench.errors import EngineUsageError, UsageError
from corebench.units import parse_duration_s

_FLAGS = {
    "port": "--port",
    "workers": "--workers",
    "model": "--model",
    "stall_ms": "--stall",
    "stall_every_ms": "--stall",
    "keep_alive_timeout_s": "--keep-alive-timeout",
    "db_articles": "--db-articles",
    "db_cache_kb": "--db-cache-kb",
    "db_file": "--db-file",
    "site_from_log": "--site-from-log",
    "jitter": "--jitter",
    "tls": "--tls",
}


def _stall(text: str | None) -> tuple[int, int]:
    if not text:
        return 0, 0
    pause, sep, every = text.partition("/")
    try:
        if not sep:
            raise ValueError("expected PAUSE/PERIOD")
        return round(parse_duration_s(pause) * 1000), round(parse_duration_s(every) * 1000)
    except ValueError as e:
        raise UsageError(f"--stall {text!r}: {e}; write it like 500ms/2s (stall 500 ms every 2 s)") from None


@app.command("serve")
def serve(
    port: int = typer.Option(8080, "--port", "-p", help="TCP port (0: a free one, printed when ready)."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on."),
    model: str = typer.Option(
        "async", "--model", help="prefork (N processes), threads (a pool of N threads) or async (N event loops)."
    ),
    workers: int | None = typer.Option(None, "--workers", "-w", help="Processes or threads (default: one per CPU)."),
    stall: str | None = typer.Option(None, "--stall", help="Stop answering for PAUSE every PERIOD, e.g. 500ms/2s."),
    access_log: str | None = typer.Option(
        None, "--access-log", help="Append a Combined Log Format line per request to FILE."
    ),
    keep_alive_timeout: str = typer.Option(
        "15s", "--keep-alive-timeout", help="Close idle keep-alive connections after this long."
    ),
    db_articles: int = typer.Option(
        0, "--db-articles", help="Turn on /db with a SQLite database of this many articles (5 comments each)."
    ),
    db_cache_kb: int = typer.Option(
        2000, "--db-cache-kb", help="SQLite page cache per worker, in KiB (the cache-size factor)."
    ),
    db_file: str | None = typer.Option(
        None, "--db-file", help="Where the database is kept (default: one file per size in the temp directory, reused)."
    ),
    site_from_log: str | None = typer.Option(
        None,
        "--site-from-log",
        help="Answer each path of this access log (Common/Combined) with the status and size it recorded.",
    ),
    jitter: float = typer.Option(
        0.0,
        "--jitter",
        help="Scale /dynamic's work and /sleep's pause, for this start, by a factor drawn uniformly "
        "within ±JITTER (0.2: ±20%): a target whose speed varies from start to start.",
    ),
    tls: bool = typer.Option(
        False,
        "--tls",
        help="HTTPS, with a self-signed certificate made at start; ALPN offers h2 and http/1.1 "
        "(HTTP/2 is also served in the clear, h2c).",
    ),
) -> None:
    """Serve the workloads of the field reports (see README) until SIGTERM or Ctrl-C."""
    from corebench import _engine
    from corebench.config.serve import ServeConfig

    stall_ms, stall_every_ms = _stall(stall)
    settings = dict(
        port=port,
        host=host,
        model=model,
        stall_ms=stall_ms,
        stall_every_ms=stall_every_ms,
        access_log=access_log,
        db_articles=db_articles,
        db_cache_kb=db_cache_kb,
        db_file=db_file,
        site_from_log=site_from_log,
        jitter=jitter,
        tls=tls,
    )
    try:
        settings["keep_alive_timeout_s"] = parse_duration_s(keep_alive_timeout)
    except ValueError as e:
        raise UsageError(f"--keep-alive-timeout: {e}") from None
    if workers is not None:
        settings["workers"] = workers
    config = build(ServeConfig, _FLAGS, **settings)
    try:
        _engine.serve(config.model_dump_json())
    except EngineUsageError as e:
        raise UsageError(str(e)) from None
