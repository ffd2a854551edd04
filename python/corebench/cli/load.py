"""`corebench load URL`: one load test, with ab's flags and ab's report; or
an open-loop rate (wrk2), users with think time and URL lists (siege).

Flags keep ab's letters and meanings, and wrk's where ab has none: where the
two differ on a letter, ab's wins (-t is ab's time limit, not wrk's threads;
-d ab's "no percentage table", not wrk's duration; -s ab's timeout, not
wrk's script; -T ab's Content-Type, not wrk's timeout, which is --timeout;
-v ab's verbosity, not wrk's version, which is -V/--version)."""

from __future__ import annotations

from pathlib import Path

import typer

from corebench import files
from corebench.cli import _version, app, common
from corebench.errors import UsageError
from corebench.output.options import ReportOptions
from corebench.units import parse_duration_s

EXAMPLES = """\b
Examples (URL: any loopback server, such as `corebench serve --port 8080`):
  corebench load -c 10 -n 1000 -k http://127.0.0.1:8080/                   # ab -c 10 -n 1000 -k
  corebench load -c 50 -t 2s -k -L http://127.0.0.1:8080/                  # wrk -c 50 -d 2s --latency
  corebench load -R 500 -t 2s -k http://127.0.0.1:8080/                    # wrk2 -R 500 -d 2s
  corebench load -n 100 -p body.json -T application/json http://127.0.0.1:8080/api
  corebench load -n 100 -u body.json -T application/json http://127.0.0.1:8080/api
  corebench load -n 200 -e percentiles.csv -g requests.tsv http://127.0.0.1:8080/
  corebench load -n 20 -v 3 -S -d http://127.0.0.1:8080/
  corebench load -n 20 -w -A user:secret -C session=abc http://127.0.0.1:8080/
  corebench load -n 20 -X 127.0.0.1:3128 -r http://127.0.0.1:8080/
"""


def _body(flag: str, path: Path | None) -> bytes | None:
    """The file's bytes, exactly (ab reads the whole file as the body)."""
    if path is None:
        return None
    try:
        return files.read_bytes(path, files.BODY_BYTES)
    except files.TooLarge as e:
        raise UsageError(f"{flag} {path}: {e}: a body is held in memory and sent whole; give a smaller file") from None
    except OSError as e:
        raise UsageError(
            f"{flag} {path}: cannot read the body file ({e.strerror or e}); give a readable file"
        ) from None


def _method(method: str | None, head: bool, post: Path | None, put: Path | None) -> str | None:
    """ab's rules: -p POSTs and -u PUTs a file, -i sends HEAD, one of them;
    -m names another method for the body."""
    if post is not None and put is not None:
        raise UsageError("-p/--body-file and -u/--put-file: ab sends one body, by POST or by PUT: give one")
    if head and (post is not None or put is not None):
        raise UsageError(f"-i/--head sends HEAD, which has no body: drop it or {'-p' if post else '-u'}")
    if head:
        return "HEAD"
    if method is not None:
        return method
    return "POST" if post is not None else "PUT" if put is not None else None


def _looks_like_duration(text: str | None) -> bool:
    if text is None or "://" in text or not text.isprintable() or " " in text:
        return False
    try:
        parse_duration_s(text)
    except ValueError:
        return False
    return True


@app.command("load", epilog=EXAMPLES, context_settings={"allow_extra_args": True})
def load(
    ctx: typer.Context,
    url: str | None = typer.Argument(
        None, help="http:// or https:// URL on a loopback address (with --urls: the base for bare paths)"
    ),
    concurrency: int | None = common.CONCURRENCY,
    requests: int | None = common.REQUESTS,
    duration: str | None = typer.Option(
        None,
        "-t",
        "--duration",
        help="Run length: 10s, 2m, 500ms (ab's -t, wrk's -d); requests in flight then get 1 s more to finish, "
        "then count as timeouts.",
    ),
    keep_alive: bool = common.KEEP_ALIVE,
    http10: bool = common.HTTP10,
    http2: bool = common.HTTP2,
    streams: int | None = common.STREAMS,
    method: str | None = typer.Option(None, "-m", "--method", help="Request method (default GET; POST with -p)."),
    head: bool = typer.Option(False, "-i", "--head", help="Send HEAD requests."),
    header: list[str] = common.HEADER,
    body_file: Path | None = typer.Option(
        None, "-p", "--body-file", help="POST this file, its exact bytes, as the body (ab's -p; -m for another method)."
    ),
    put_file: Path | None = typer.Option(None, "-u", "--put-file", help="PUT this file, its exact bytes (ab's -u)."),
    content_type: str | None = typer.Option(
        None, "-T", "--content-type", help="Content-Type of the body (default text/plain, as ab)."
    ),
    auth: str | None = typer.Option(
        None, "-A", "--auth", help="USER:PASSWORD, sent as Basic authorization with every request (ab's -A)."
    ),
    cookie: list[str] = typer.Option(
        [], "-C", "--cookie", help="Cookie name=value, repeatable: all go in one Cookie header (ab's -C)."
    ),
    proxy: str | None = typer.Option(
        None,
        "-X",
        "--proxy",
        help="Send every request through this HTTP proxy, HOST[:PORT] on a loopback address (ab's -X).",
    ),
    timeout: str | None = common.TIMEOUT,
    threads: int | None = common.THREADS,
    variable_length: bool = typer.Option(
        False, "-l", "--variable-length", help="Accept varying document lengths (ab's -l)."
    ),
    receive_errors_ok: bool = typer.Option(
        False,
        "-r",
        "--receive-errors-ok",
        help="Go on after socket receive errors, counting them (ab's -r; corebench always does).",
    ),
    allow_remote: bool = common.ALLOW_REMOTE,
    busy_poll: str | None = common.BUSY_POLL,
    linger: str | None = common.LINGER,
    io: str | None = common.IO,
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
    verbosity: int = typer.Option(
        0,
        "-v",
        "--verbosity",
        help="ab's -v: 2 prints the request and first response heads and non-2xx codes; 3 every status code.",
    ),
    no_confidence: bool = typer.Option(
        False, "-S", "--no-confidence", help="Connection Times as min/avg/max, no sd, median or warnings (ab's -S)."
    ),
    no_percentiles: bool = typer.Option(
        False, "-d", "--no-percentiles", help="Leave out the percentage table (ab's -d; wrk's -d is -t here)."
    ),
    latency: bool = typer.Option(
        False, "-L", "--latency", help="Add wrk's latency distribution block (wrk2's for --rate) to the report."
    ),
    html: bool = typer.Option(False, "-w", "--html", help="Print the report as ab's HTML table instead (ab's -w)."),
    csv_out: str | None = typer.Option(
        None, "-e", "--csv", help="Write ab's CSV of the time within which each percentage 0..100 was served."
    ),
    gnuplot_out: str | None = typer.Option(
        None, "-g", "--gnuplot", help="Write ab's gnuplot/TSV file: one line per response (up to 1,000,000)."
    ),
    json_out: str | None = common.JSON_OUT,
    quiet: bool = common.QUIET,
    force: bool = common.FORCE,
    monitor: str | None = common.MONITOR,
    threshold: list[str] | None = common.THRESHOLD,
    print_config: bool = common.PRINT_CONFIG,
    hgrm: Path | None = common.HGRM,
    ray: str | None = common.RAY,
    agents: int = common.AGENTS,
    strict_spread: bool = common.STRICT_SPREAD,
    agent_cpus: float = common.AGENT_CPUS,
    agent_timeout: str | None = common.AGENT_TIMEOUT,
    version: bool = typer.Option(
        False, "-V", "--version", callback=_version, is_eager=True, help="Print the version and exit (ab -V)."
    ),
) -> None:
    """Load a URL like ab or wrk: closed loop, -c connections, -n requests or -t seconds."""
    stray = [a for a in (url, *ctx.args) if _looks_like_duration(a)]
    if no_percentiles and stray:
        raise UsageError(
            "-d: in corebench load, -d is ab's (leave out the percentage table); for a run length, as wrk's -d, "
            f"give -t {stray[0]}"
        )
    if ctx.args:
        raise UsageError(f"{ctx.args[0]!r}: an argument too many: give one URL")
    if verbosity < 0:
        raise UsageError(f"-v/--verbosity {verbosity}: give a level from 0 (ab's default) up")
    if users is not None and concurrency is not None and users != concurrency:
        raise UsageError(f"--users {users} and -c {concurrency} disagree: users are the connections, give one")
    if think is not None and users is None:
        raise UsageError("--think: think time belongs to users: give --users N")
    if url is None and urls is None:
        raise UsageError("URL: give the URL to load, or a file of URLs with --urls FILE")
    if ray is not None and gnuplot_out is not None:
        raise UsageError("-g/--gnuplot: a per-response file is written from one machine's load: drop --ray or -g")
    outputs = common.Outputs(
        files={
            name: dest
            for name, dest in (
                ("json", json_out),
                ("hgrm", str(hgrm) if hgrm is not None else None),
                ("csv", csv_out),
                ("gnuplot", gnuplot_out),
            )
            if dest
        },
        html=html,
        options=ReportOptions(
            confidence=not no_confidence, percentiles=not no_percentiles, latency=latency, verbosity=verbosity
        ),
    )
    outputs.check()
    body = _body("-p", body_file)
    if body is None:
        body = _body("-u", put_file)
    sends = body_file is not None or put_file is not None
    given = common.settings(
        url=url if url is not None else _first_url(urls),
        concurrency=users if users is not None else concurrency,
        requests=requests,
        duration=duration,
        keep_alive=keep_alive,
        http=common.http(http10, http2),
        streams=streams,
        method=_method(method, head, body_file, put_file),
        headers=common.headers(header),
        body=body,
        # ab sends a Content-Type with every body file, text/plain unless -T.
        content_type=content_type if content_type is not None or not sends else "text/plain",
        timeout=timeout,
        threads=threads,
        variable_length=variable_length,
        allow_remote=allow_remote,
        busy_poll=busy_poll,
        linger=linger,
        io=io,
        rate=rate,
        ramp=ramp,
        arrivals=arrivals,
        think=think if think is not None else ("0" if users is not None else None),
        urls=str(urls) if urls is not None else None,
        random=random_order,
        seed=seed,
        proxy=proxy,
        auth=auth,
        cookies=cookie,
        trace=gnuplot_out is not None or None,
        heads=verbosity >= 2 or None,
    )
    config = common.to_config(given, local=ray is None)
    if print_config:
        common.print_config(config)
        return
    criteria = common.thresholds(threshold)
    cluster = common.cluster(ray, agents, strict_spread, agent_cpus, agent_timeout)
    common.run_and_report(config, None, None, cluster, criteria, outputs, quiet=quiet, force=force, monitor=monitor)


def _first_url(path: Path | None) -> str | None:
    """With --urls and no URL: the file's first URL is the base for bare paths."""
    if path is None:
        return None
    from corebench.config.urls import read_url_file

    return read_url_file(path)[0].url
