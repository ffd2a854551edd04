"""siege's URL file (urls.txt, `siege -f FILE`): one request per line, so
siege users can bring their files. siege's own parser (src/url.c, __url_parse
and __parse_post_data) is lenient; this one says which line is wrong instead."""

from __future__ import annotations

import pathlib
import re
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict

from corebench import files
from corebench.errors import UsageError

MAX_URLS = 1_000_000

# A scheme as siege's __url_has_scheme reads it, except that a digit after the
# colon makes a port: siege takes "localhost:8080/x" for scheme "localhost".
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:(?!\d)")
_METHOD = re.compile(r"^[A-Z]+$")
# siege's variables: "$(NAME)" or "${NAME}" uses, "NAME=value" definitions.
_VAR_USE = re.compile(r"\$[({]")
_VAR_DEF = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\s*=")
# "#" opens a comment at the start of a line or after whitespace, so a
# fragment ("/page#top") stays part of its URL.
_COMMENT = re.compile(r"(^|\s)#.*$")


class UrlEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str
    method: str = "GET"
    body: bytes = b""
    line: int  # 1-based line in the file


def _origin(url: str) -> tuple[str, str, int]:
    parts = urlsplit(url)
    default = 443 if parts.scheme == "https" else 80
    return parts.scheme, parts.hostname or "", parts.port or default


def _show(origin: tuple[str, str, int]) -> str:
    scheme, host, port = origin
    return f"{scheme}://[{host}]:{port}" if ":" in host else f"{scheme}://{host}:{port}"


def _absolute(where: str, url: str, base: str | None) -> str:
    if url.startswith("/") and not url.startswith("//"):
        if base is None:
            raise UsageError(f"{where}: {url!r} is a path with no host; write the full URL, or give a base URL")
        b = urlsplit(base)
        return f"{b.scheme}://{b.netloc}{url}"
    if url.startswith("//"):
        return "http:" + url
    # siege's __url_set_absolute: no scheme means http.
    return url if _SCHEME.match(url) else "http://" + url


def _check(where: str, url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise UsageError(f"{where}: {url!r} is not an http or https URL; corebench loads HTTP servers only")
    if not parts.hostname:
        raise UsageError(f"{where}: {url!r} has no host; write it as http://HOST[:PORT]/PATH")
    try:
        bad_port = parts.port == 0
    except ValueError:
        bad_port = True
    if bad_port:
        raise UsageError(f"{where}: {url!r} has a bad port; use a number from 1 to 65535") from None


def _body(where: str, folder: pathlib.Path, text: str) -> bytes:
    # siege's __parse_post_data: "<file" reads the body from a file, else the text is the body.
    if not text.startswith("<"):
        return text.encode()
    name = text[1:].strip()
    if not name:
        raise UsageError(f"{where}: '<' names no file; write '<FILE' with the body's file after it")
    path = folder / name
    try:
        return files.read_bytes(path, files.BODY_BYTES)
    except files.TooLarge as e:
        raise UsageError(f"{where}: the body file {str(path)!r} is {e}: a body is held in memory") from None
    except OSError as e:
        raise UsageError(
            f"{where}: cannot read the body file {str(path)!r} ({e.strerror}); "
            "check the path, which is relative to the URL file's folder"
        ) from None


def _entry(where: str, n: int, text: str, folder: pathlib.Path, base: str | None) -> UrlEntry:
    if _VAR_USE.search(text) or _VAR_DEF.match(text):
        raise UsageError(
            f"{where}: siege variables ($(NAME), NAME=value) are not supported; write the values into the URLs"
        )
    url, method, body = (re.split(r"\s+", text, maxsplit=2) + ["", ""])[:3]
    url = _absolute(where, url, base)
    _check(where, url)
    if not method:
        return UrlEntry(url=url, line=n)
    if not _METHOD.match(method):
        raise UsageError(
            f"{where}: {method!r} is not a method; write one in capitals after the URL (URL POST body, URL PUT <file)"
        )
    return UrlEntry(url=url, method=method, body=_body(where, folder, body), line=n)


def read_url_file(path: pathlib.Path, base: str | None = None) -> list[UrlEntry]:
    """Reads a siege URL file. `base` (an http URL) completes lines that are
    bare paths ("/x"). All URLs must share one origin: corebench loads one
    server at a time."""
    path = pathlib.Path(path)
    if base is not None:
        base = base if _SCHEME.match(base) else "http://" + base
        _check("the base URL", base)
    try:
        raw = files.read_bytes(path, files.URL_FILE_BYTES)
    except files.TooLarge as e:
        raise UsageError(f"{path}: the URL file is {e}; give fewer URLs") from None
    except OSError as e:
        raise UsageError(f"{path}: cannot read the URL file ({e.strerror}); check the path") from None
    entries: list[UrlEntry] = []
    origin: tuple[str, str, int] | None = None
    for n, line in enumerate(raw.split(b"\n"), start=1):
        where = f"{path}:{n}"
        try:
            text = line.decode()
        except UnicodeDecodeError:
            raise UsageError(f"{where}: the line is not UTF-8; save the file as UTF-8") from None
        text = _COMMENT.sub("", text).strip()
        if not text:
            continue
        if len(entries) == MAX_URLS:
            raise UsageError(f"{where}: more than {MAX_URLS:,} URLs; split the file or sample it")
        entry = _entry(where, n, text, path.parent, base)
        o = _origin(entry.url)
        if origin is None:
            origin = o
        elif o != origin:
            raise UsageError(
                f"{where}: {entry.url!r} is on {_show(o)}, not {_show(origin)} like the first URL; "
                "corebench loads one server at a time, so keep one origin per file"
            )
        entries.append(entry)
    if not entries:
        raise UsageError(f"{path}: the URL file has no URL; write one URL per line")
    return entries
