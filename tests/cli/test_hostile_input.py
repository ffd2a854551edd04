"""A hostile-input corpus: every string a user gives that reaches the wire
(a header, the content type, a cookie, the URL's path, a URL list's line, a
plan's header and a factor level put into it) is tried with CR, LF, a
smuggled request, control bytes, bytes that are not UTF-8 and a large
size. Each is refused in one line naming the flag (exit 2), or sent exactly
as given: the recording server sees the requests asked for, no more, with
the value byte for byte. Never altered into another request.

argv cannot carry NUL (execve ends a string there), so NUL is tried in the
files (URL list, plan) only."""

from __future__ import annotations

import os
import re
import subprocess

import pytest
import tomli_w

from tests.conftest import run_cli
from tests.support.recording_server import RecordingServer

REQUESTS = 3
SMUGGLED = "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"
# Values as the user gives them: text, or bytes that are not UTF-8 (argv
# carries them; Python's argv decodes them with surrogateescape).
CORPUS: dict[str, str | bytes] = {
    "plain": "value-1",
    "tab and spaces": "a\tb  c",  # legal inside a field value (RFC 9110 §5.5)
    "utf-8": "caf\u00e9 \u20ac",
    "not utf-8": b"\xff\xfe\x80",
    "CR": "a\rb",
    "LF": "a\nb",
    "CRLF header": "a\r\nX-Smuggled: 1",
    "CRLF request": "a\r\n\r\n" + SMUGGLED,
    "SOH": "a\x01b",
    "DEL": "a\x7fb",
    "ESC": "\x1b[31mred",
    "large": "x" * 100_000,
}
# In files only: argv cannot hold NUL.
FILE_ONLY: dict[str, str | bytes] = {"NUL": "a\x00b"}


@pytest.fixture(scope="module")
def recorder():
    with RecordingServer() as srv:
        yield srv


def arg(value: str | bytes) -> str:
    return os.fsdecode(value) if isinstance(value, bytes) else value


def wire(value: str | bytes) -> str:
    """The value as the recording server reads it (latin-1 of its bytes)."""
    raw = value if isinstance(value, bytes) else value.encode()
    return raw.decode("latin-1")


def refused_in_one_line(p: subprocess.CompletedProcess, where: str) -> bool:
    if p.returncode != 2:
        return False
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("corebench: error:"), p.stderr[-2000:]
    assert where in lines[0], (where, lines[0][:300])
    return True


def check(recorder: RecordingServer, p: subprocess.CompletedProcess, where: str, sent_as: str, got) -> None:
    """Refused in one line naming `where`, or exactly REQUESTS requests each
    carrying `sent_as` byte for byte (as `got(request)` reads it)."""
    if refused_in_one_line(p, where):
        assert not recorder.requests, "a refused value sent nothing"
        return
    assert p.returncode == 0, (where, p.returncode, p.stderr[-2000:])
    reqs = list(recorder.requests)
    assert len(reqs) == REQUESTS, f"{where}: {len(reqs)} requests arrived for {REQUESTS} sent: one was smuggled"
    assert all(re.fullmatch(r"[A-Z]+ \S+ HTTP/1\.1", r.line) for r in reqs), reqs[0].line
    assert all(got(r) == sent_as for r in reqs), (where, got(reqs[0])[:200], sent_as[:200])


def load(recorder: RecordingServer, *args: str, url: str | None = None) -> subprocess.CompletedProcess:
    recorder.clear()
    return run_cli("load", "-n", str(REQUESTS), "-c", "1", "-k", *args, url or recorder.url, timeout=60)


@pytest.mark.parametrize("name", list(CORPUS))
def test_a_header_value(recorder, name):
    value = CORPUS[name]
    p = load(recorder, "-H", f"X-Given: {arg(value)}")
    check(recorder, p, "-H", wire(value), lambda r: r.header("X-Given"))


@pytest.mark.parametrize("name", list(CORPUS))
def test_a_header_name(recorder, name):
    value = CORPUS[name]
    p = load(recorder, "-H", f"X{arg(value)}: 1")
    check(recorder, p, "-H", "1", lambda r: r.header(f"X{wire(value)}"))


@pytest.mark.parametrize("name", list(CORPUS))
def test_a_content_type(recorder, name, tmp_path):
    value = CORPUS[name]
    body = tmp_path / "body"
    body.write_bytes(b"{}")
    p = load(recorder, "-p", str(body), "-T", arg(value))
    check(recorder, p, "-T", wire(value), lambda r: r.header("Content-Type") if r.body == b"{}" else None)


@pytest.mark.parametrize("name", list(CORPUS))
def test_a_cookie(recorder, name):
    value = CORPUS[name]
    p = load(recorder, "-C", f"k={arg(value)}")
    check(recorder, p, "-C", f"k={wire(value)}", lambda r: r.header("Cookie"))


@pytest.mark.parametrize("name", list(CORPUS))
def test_a_path(recorder, name):
    value = CORPUS[name]
    p = load(recorder, url=f"{recorder.url}p/{arg(value)}")
    # A character a request target cannot hold may be percent-encoded
    # (RFC 3986 §2.1); then its bytes are those given, encoded.
    check(recorder, p, "URL", target_of(value), lambda r: r.line.split(" ")[1])


def target_of(value: str | bytes) -> str:
    """The target a client sends for /p/VALUE: characters a request target
    may hold as they are, others as %XX of their UTF-8 bytes (what the
    WHATWG URL parser, which the engine follows, does)."""
    from urllib.parse import quote

    raw = value if isinstance(value, bytes) else value.encode()
    return "/p/" + quote(raw, safe="!$&'()*+,;=:@/?%~-._[]|^`{}\\\"<>")


@pytest.mark.parametrize("name", list(CORPUS) + list(FILE_ONLY))
def test_a_url_list_line(recorder, name, tmp_path):
    value = {**CORPUS, **FILE_ONLY}[name]
    raw = value if isinstance(value, bytes) else value.encode()
    urls = tmp_path / "urls.txt"
    urls.write_bytes(recorder.url.encode() + b"q/" + raw + b"\n")
    recorder.clear()
    p = run_cli("load", "-n", str(REQUESTS), "-c", "1", "-k", "--urls", str(urls), timeout=60)
    # A line is a URL: CR or LF in it ends the line, so the file holds
    # another URL (or a malformed one) rather than a smuggled request.
    if p.returncode == 0:
        reqs = list(recorder.requests)
        assert len(reqs) == REQUESTS and all(r.line.endswith(" HTTP/1.1") for r in reqs), [r.line for r in reqs]
        assert all(r.line.startswith("GET /q/") for r in reqs)
    else:
        assert refused_in_one_line(p, "urls"), p.stderr[-2000:]


@pytest.mark.parametrize("name", ["plain", "utf-8", "CRLF request", "SOH", "NUL", "large"])
def test_a_plans_header_and_a_factor_level_in_it(recorder, name, tmp_path):
    """Plan strings reach the wire too: [load] headers, with a factor's
    level substituted into them."""
    value = {**CORPUS, **FILE_ONLY}[name]
    text = arg(value)
    plan = {
        "experiment": {"name": "hostile", "calibrate": False, "repetitions": 1, "warmup": 0, "requests": REQUESTS},
        "factors": {"given": [text]},
        "target": {"url": recorder.url},
        "load": {"concurrency": 1, "headers": {"X-Level": "{given}", "X-Plan": text}},
    }
    path = tmp_path / "plan.toml"
    try:
        path.write_text(tomli_w.dumps(plan), errors="surrogateescape")
    except ValueError:
        pytest.skip("TOML cannot hold this value")
    recorder.clear()
    p = run_cli("run", str(path), "--store", str(tmp_path / "s.sqlite"), timeout=120)
    if p.returncode == 2:
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and str(path) in lines[0] and "headers" in lines[0], p.stderr[-2000:]
        assert not recorder.requests
        return
    assert p.returncode == 0, p.stderr[-2000:]
    reqs = list(recorder.requests)
    assert len(reqs) == REQUESTS, [r.line for r in reqs]
    assert all(r.header("X-Level") == r.header("X-Plan") == wire(value) for r in reqs)
