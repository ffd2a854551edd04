"""siege's URL file format, rule by rule."""

import pydantic
import pytest

from corebench.config.urls import MAX_URLS, UrlEntry, read_url_file
from corebench.errors import UsageError


def _file(tmp_path, text, name="urls.txt"):
    p = tmp_path / name
    p.write_text(text)
    return p


def _error(path, **kw) -> str:
    with pytest.raises(UsageError) as e:
        read_url_file(path, **kw)
    msg = str(e.value)
    assert "\n" not in msg and ";" in msg  # one line: what is wrong; how to fix
    return msg


def test_plain_urls_with_comments_and_blanks(tmp_path):
    p = _file(tmp_path, "# a comment\n\n  http://h:8080/a  \nhttp://h:8080/b # trailing\n\thttp://h:8080/c#frag\n")
    assert read_url_file(p) == [
        UrlEntry(url="http://h:8080/a", line=3),
        UrlEntry(url="http://h:8080/b", line=4),
        UrlEntry(url="http://h:8080/c#frag", line=5),
    ]


def test_entries_are_frozen(tmp_path):
    e = read_url_file(_file(tmp_path, "http://h/\n"))[0]
    with pytest.raises(pydantic.ValidationError):
        e.url = "http://other/"


def test_post_body_text(tmp_path):
    p = _file(tmp_path, "http://h/form POST name=jo&x=1 # sent\nhttp://h/put PUT  a  b \nhttp://h/del DELETE\n")
    assert read_url_file(p) == [
        UrlEntry(url="http://h/form", method="POST", body=b"name=jo&x=1", line=1),
        UrlEntry(url="http://h/put", method="PUT", body=b"a  b", line=2),
        UrlEntry(url="http://h/del", method="DELETE", line=3),
    ]


def test_post_body_from_file_relative_to_url_file(tmp_path, monkeypatch):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "body.json").write_bytes(b'{"a": 1}\n\x00')
    p = _file(tmp_path, "http://h/api POST <sub/body.json\nhttp://h/api PUT < sub/body.json\n")
    monkeypatch.chdir("/")  # the path must not depend on the working directory
    assert [e.body for e in read_url_file(p)] == [b'{"a": 1}\n\x00'] * 2


def test_unreadable_body_file(tmp_path):
    p = _file(tmp_path, "http://h/\nhttp://h/api POST <missing.json\n")
    msg = _error(p)
    assert msg.startswith(f"{p}:2: cannot read the body file") and "missing.json" in msg


def test_no_scheme_means_http(tmp_path):
    p = _file(tmp_path, "localhost:8080/x\nlocalhost:8080\n")
    assert [e.url for e in read_url_file(p)] == ["http://localhost:8080/x", "http://localhost:8080"]
    assert read_url_file(_file(tmp_path, "127.0.0.1/a\n"))[0].url == "http://127.0.0.1/a"


def test_bare_path_needs_base(tmp_path):
    p = _file(tmp_path, "/x\n/y?q=1 POST a=b\n")
    assert _error(p).startswith(f"{p}:1: '/x' is a path with no host")
    got = read_url_file(p, base="http://127.0.0.1:8080/ignored/path")
    assert got == [
        UrlEntry(url="http://127.0.0.1:8080/x", line=1),
        UrlEntry(url="http://127.0.0.1:8080/y?q=1", method="POST", body=b"a=b", line=2),
    ]


def test_base_shares_origin_with_full_urls(tmp_path):
    p = _file(tmp_path, "/x\nhttp://127.0.0.1:9999/y\n")
    msg = _error(p, base="http://127.0.0.1:8080")
    assert msg.startswith(f"{p}:2:") and "http://127.0.0.1:8080" in msg


def test_bad_base(tmp_path):
    assert "base URL" in _error(_file(tmp_path, "/x\n"), base="ftp://h/")


def test_unreadable_file(tmp_path):
    p = tmp_path / "nope.txt"
    assert _error(p).startswith(f"{p}: cannot read the URL file")


@pytest.mark.parametrize("text", ["", "\n\n", "# only comments\n   # more\n"])
def test_empty_file(tmp_path, text):
    p = _file(tmp_path, text)
    assert _error(p).startswith(f"{p}: the URL file has no URL")


@pytest.mark.parametrize(
    "url, what",
    [
        ("ftp://h/file", "not an http or https URL"),
        ("mailto:x@y", "not an http or https URL"),
        ("http:h/x", "has no host"),
        ("http:///path", "has no host"),
        ("https://", "has no host"),
        ("http://h:99999/", "bad port"),
        ("http://h:0/", "bad port"),
    ],
)
def test_bad_urls(tmp_path, url, what):
    p = _file(tmp_path, f"http://h/\n{url}\n")
    msg = _error(p)
    assert msg.startswith(f"{p}:2:") and what in msg


@pytest.mark.parametrize("line", ["http://h/ post a=1", "http://h/ Post", "http://h/ 123", "http://h/ GE-T"])
def test_method_must_be_uppercase_token(tmp_path, line):
    p = _file(tmp_path, line + "\n")
    msg = _error(p)
    assert msg.startswith(f"{p}:1:") and "is not a method" in msg


@pytest.mark.parametrize("line", ["HOST=127.0.0.1", "BASE = http://h", "http://$(HOST)/x", "http://${HOST}/x"])
def test_variables_are_refused(tmp_path, line):
    p = _file(tmp_path, f"http://h/\n{line}\n")
    msg = _error(p)
    assert msg.startswith(f"{p}:2:") and "variables" in msg


@pytest.mark.parametrize("other", ["https://h/", "http://h:81/", "http://g/"])
def test_one_origin(tmp_path, other):
    p = _file(tmp_path, f"http://h/a\nhttp://H:80/b\n\n{other}\n")
    msg = _error(p)
    assert msg.startswith(f"{p}:4:") and "http://h:80" in msg


def test_not_utf8(tmp_path):
    p = tmp_path / "urls.txt"
    p.write_bytes(b"http://h/\nhttp://h/\xff\n")
    assert _error(p).startswith(f"{p}:2:")


def test_crlf_lines(tmp_path):
    p = tmp_path / "urls.txt"
    p.write_bytes(b"http://h/a\r\nhttp://h/b POST x\r\n")
    assert [(e.url, e.body) for e in read_url_file(p)] == [("http://h/a", b""), ("http://h/b", b"x")]


def test_cap(tmp_path, monkeypatch):
    import corebench.config.urls as urls

    monkeypatch.setattr(urls, "MAX_URLS", 3)
    p = _file(tmp_path, "http://h/\n" * 3)
    assert len(read_url_file(p)) == 3
    p = _file(tmp_path, "http://h/\n# c\n" * 4)
    msg = _error(p)
    assert msg.startswith(f"{p}:7:") and "more than 3 URLs" in msg
    assert MAX_URLS == 1_000_000
