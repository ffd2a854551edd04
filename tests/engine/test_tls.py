"""https:// URLs: TLS through rustls against a local server with a
self-signed certificate (not verified, as ab and wrk do not)."""

import http.server
import shutil
import ssl
import subprocess
import threading

import pytest

import corebench


class _Quiet(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        body = b"secure hello"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def https_url(tmp_path):
    if not shutil.which("openssl"):
        pytest.skip("openssl not installed")
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
        ],
        check=True,
        capture_output=True,
    )
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Quiet)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    yield f"https://localhost:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("keep_alive", [False, True])
def test_https(https_url, keep_alive):
    r = corebench.load(https_url, concurrency=2, requests=40, keep_alive=keep_alive, timeout=10)
    assert r.failed == 0, r.error_samples
    assert r.responses == 40 and r.bytes.body == 40 * len(b"secure hello")
    if keep_alive:
        assert r.connections_opened == 2
