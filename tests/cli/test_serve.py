"""`corebench serve`: the workloads, the three process models under 1,000
connections, bad requests, the access log, and a clean SIGTERM."""

import os
import re
import socket
import time
import urllib.request

import pytest

import corebench
from corebench.targets.builtin import Served
from tests.conftest import ACCESS_LOG, run_cli

MODELS = ["prefork", "threads", "async"]


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def raw(url: str, request: bytes) -> bytes:
    host, port = url.split("//")[1].strip("/").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(request)
        chunks = []
        while True:
            b = s.recv(65536)
            if not b:
                return b"".join(chunks)
            chunks.append(b)


@pytest.fixture(scope="module")
def server():
    with Served("--workers", "2") as s:
        yield s


@pytest.mark.parametrize("size, length", [("44", 44), ("2k", 2048), ("200kb", 204800), ("2m", 2097152)])
def test_static_sizes(server, size, length):
    status, body = get(server.url + f"static/{size}")
    assert status == 200 and len(body) == length


def test_dynamic_page_renders_the_time(server):
    before = time.time()
    status, body = get(server.url + "dynamic?work_us=500")
    stamp = float(re.search(rb"Rendered at ([\d.]+)", body).group(1))
    assert status == 200 and b'<div id="layout">' in body and before - 1 <= stamp <= time.time() + 1


def test_sleep_page_waits(server):
    t0 = time.monotonic()
    assert get(server.url + "sleep?ms=300")[0] == 200
    assert time.monotonic() - t0 >= 0.29


def test_every_other_path_is_a_deterministic_200(server):
    a = get(server.url + "blog/2007/03/cores?x=1")
    assert a[0] == 200 and a == get(server.url + "blog/2007/03/cores?x=1")
    assert get(server.url + "health") == (200, b"ok\n")


@pytest.mark.parametrize(
    "target, reason",
    [
        ("static/99g", b"not a size"),
        ("static/17m", b"not a size"),
        ("dynamic?work_us=99999999", b"not a whole number"),
        ("dynamic?work=5", b"unknown parameter"),
        ("sleep?ms=-1", b"not a whole number"),
        ("static/2k?x=1", b"unknown parameter"),
    ],
)
def test_bad_parameters_are_400_with_a_reason(server, target, reason):
    status, body = get(server.url + target)
    assert status == 400 and reason in body


@pytest.mark.parametrize(
    "request_bytes, status",
    [
        (b"\x16\x03\x01\x02\x00 not http\r\n\r\n", b"400"),
        (b"GET\r\n\r\n", b"400"),
        (b"GET / HTTP/1.1\r\nContent-Length: 999999999999\r\n\r\n", b"413"),
        (b"GET /" + b"a" * 20000 + b" HTTP/1.1\r\n\r\n", b"431"),
    ],
)
def test_malformed_requests_get_4xx_and_the_server_lives(server, request_bytes, status):
    reply = raw(server.url, request_bytes)
    assert reply.startswith(b"HTTP/1.1 " + status)
    assert get(server.url + "health")[0] == 200


@pytest.mark.parametrize("model", MODELS)
def test_each_model_answers_1000_connections(model):
    with Served("--model", model, "--workers", "4") as s:
        r = corebench.load(s.url + "static/2k", concurrency=1000, requests=4000, timeout=30)
        assert (r.responses, r.failed, r.status_counts) == (4000, 0, {200: 4000}), r.error_samples
        if model == "async":
            r = corebench.load(s.url + "static/2k", concurrency=1000, duration=1.0, keep_alive=True)
            assert r.failed == 0 and r.connections_opened == 1000, r.error_samples


def test_access_log_round_trip(tmp_path):
    log = tmp_path / "access.log"
    with Served("--workers", "2", "--access-log", str(log)) as s:
        r = corebench.load(s.url + "static/44?", concurrency=4, requests=200, keep_alive=True)
        assert r.responses == 200
    lines = log.read_text().splitlines()
    clf = re.compile(
        r"^127\.0\.0\.1 - - \[\d{2}/\w{3}/\d{4}:\d{2}:\d{2}:\d{2} \+0000\] "
        r'"GET /static/44\? HTTP/1\.1" 200 44 "-" "corebench/[\d.]+"$'
    )
    assert len(lines) == 200 and all(clf.match(line) for line in lines), lines[:2]


@pytest.mark.parametrize("model", MODELS)
def test_sigterm_stops_every_worker(model):
    s = Served("--model", model, "--workers", "3").__enter__()
    try:
        assert get(s.url + "health")[0] == 200
        want = 3 if model == "prefork" else 0
        deadline = time.monotonic() + 5
        while len(kids := s.children()) != want and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(kids) == want
        assert s.stop() == 0
        assert not any(os.path.exists(f"/proc/{k}") for k in kids)
    finally:
        s.__exit__(None, None, None)


def test_database_page(tmp_path):
    db = tmp_path / "cms.sqlite"
    with Served(
        "--workers", "2", "--model", "prefork", "--db-articles", "300", "--db-cache-kb", "64", "--db-file", str(db)
    ) as s:
        status, body = get(s.url + "db?article=42")
        assert status == 200 and b"Article 42:" in body and body.count(b'class="comment"') == 5
        r = corebench.load(s.url + "db", concurrency=4, requests=400, keep_alive=False, variable_length=True)
        assert (r.responses, r.failed, r.status_counts) == (400, 0, {200: 400}), r.error_samples
        assert get(s.url + "db?article=301")[0] == 400
    assert db.exists()


def test_database_page_needs_a_database(server):
    status, body = get(server.url + "db")
    assert status == 503 and b"--db-articles" in body


ACCESS_LOG_PATH = str(ACCESS_LOG)


def test_site_from_a_real_log():
    with Served("--workers", "2", "--site-from-log", ACCESS_LOG_PATH) as s:
        summary = s.proc.stderr.readline()
        assert re.search(r"site from the log: \d+ paths from 10000 lines", summary), summary
        # Lines of the log itself: the first time a target appears decides.
        status, body = get(s.url + "presentations/logstash-monitorama-2013/images/kibana-search.png")
        assert (status, len(body)) == (200, 203023)
        with open(ACCESS_LOG_PATH) as log:
            for line in log:
                m = re.search(r'"GET (\S+) HTTP/1\.[01]" (404) (\d+)', line)
                if m:
                    status, body = get(s.url + m.group(1).lstrip("/"))
                    assert (status, len(body)) == (404, int(m.group(3)))
                    break
        assert get(s.url + "health") == (200, b"ok\n")


def test_site_from_a_log_without_requests(tmp_path):
    junk = tmp_path / "junk.log"
    junk.write_bytes(b"\x00\x01 binary\nnot a log line\n")
    p = run_cli("serve", "--port", "0", "--site-from-log", str(junk), timeout=20)
    assert p.returncode == 2 and "none of its 2 lines" in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_ready_quickly():
    with Served("--workers", "1") as s:
        # The issue asks for under 1 s; a loaded CI machine gets slack here.
        assert s.ready_s < 5, s.ready_s


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["--workers", "0"], "--workers"),
        (["--model", "event"], "--model"),
        (["--stall", "soon"], "--stall"),
        (["--stall", "2s/1s"], "--stall"),
        (["--port", "70000"], "--port"),
        (["--db-cache-kb", "0"], "--db-cache-kb"),
        (["--db-articles", "5", "--db-file", "/nonexistent/dir/db.sqlite"], "db_file"),
        (["--access-log", "/nonexistent/dir/log"], "access_log"),
    ],
)
def test_bad_serve_flags(args, fragment):
    p = run_cli("serve", "--port", "0", *args, timeout=20)
    assert p.returncode == 2, (p.stdout, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0], p.stderr


def test_port_in_use_is_one_line():
    with Served("--workers", "1") as s:
        port = s.url.rsplit(":", 1)[1].strip("/")
        p = run_cli("serve", "--port", port, timeout=20)
    assert p.returncode == 2 and "cannot listen" in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_logged_pages_come_from_the_database(tmp_path):
    import urllib.request

    from corebench.targets.builtin import Served

    log = ACCESS_LOG
    with Served(
        "--workers", "1", "--db-articles", "300", "--db-file", str(tmp_path / "db.sqlite"), "--site-from-log", str(log)
    ) as srv:
        get = lambda path: urllib.request.urlopen(srv.url.rstrip("/") + path, timeout=10).read()  # noqa: E731
        a, again = get("/blog/tags/puppet?flav=rss20"), get("/blog/tags/puppet?flav=rss20")
        b = get("/presentations/logstash-monitorama-2013/images/kibana-search.png")
    assert a == again and a != b, "a logged path always reads the same article"
    assert b'class="comment"' in a and b'class="comment"' in b


@pytest.mark.parametrize("model", MODELS)
def test_sigterm_stops_workers_waiting_out_a_long_sleep(model):
    """Workers in a minute's /sleep, or queued behind a long /queue, for
    clients still connected: SIGTERM ends the server within 2 s (slack for
    a busy machine), every worker with it."""
    import socket

    with Served("--model", model, "--workers", "2") as s:
        port = int(s.url.rsplit(":", 1)[1].strip("/"))
        clients = []
        for path in ("/sleep?ms=60000", "/queue?service_us=10000000"):
            c = socket.create_connection(("127.0.0.1", port))
            c.sendall(f"GET {path} HTTP/1.1\r\nHost: t\r\n\r\n".encode())
            clients.append(c)
        time.sleep(0.5)
        kids = s.children()
        began = time.monotonic()
        assert s.stop() == 0
        took = time.monotonic() - began
        for c in clients:
            c.close()
    assert took < 2.0 + 1.5, f"{model}: {took:.2f} s after SIGTERM"
    assert not any(os.path.exists(f"/proc/{k}") for k in kids)
