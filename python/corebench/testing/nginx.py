"""A real nginx (Debian's) on a free loopback port, in a directory of its own,
never touching the system's instance: a static page of a chosen size (for
every path, so a replayed log is answered), and stub_status so the server
itself counts the requests it answered."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request

import psutil

from corebench.targets.process import free_port


def _text(size: int) -> bytes:
    """Words in a fixed pseudo-random order: text that compresses as a web
    page does, the same on every start."""
    words = (
        b"the of and to in is for on that by this with you it not or be are from at as your all have new more".split()
    )
    out, x = bytearray(), 12345
    while len(out) < size:
        x = (x * 1103515245 + 12345) % 2**31
        out += words[x % len(words)] + b" "
    return bytes(out[: size - 1]) + b"\n"


class Nginx:
    def __init__(  # noqa: PLR0913 (each an nginx setting with its default, named by the caller)
        self,
        page_bytes: int = 44,
        workers: int = 1,
        connections: int = 20000,
        cpu_affinity: str | None = None,
        gzip_level: int | None = None,
        http2: bool = False,
        tls: bool = False,
    ):
        """`cpu_affinity` is nginx's worker_cpu_affinity mask, e.g. "01" for CPU 0.
        `gzip_level` compresses the page for every request that accepts gzip
        (a page of text, not one repeated byte): CPU work per request, as a
        dynamic page has. `http2` adds a second port speaking HTTP/2 with prior
        knowledge (h2c; nginx before 1.25 serves it alone on its port):
        `h2_url`, counted by the same stub_status. `tls` adds HTTPS ports with
        a self-signed certificate (openssl): `h2s_url` offers HTTP/2 by ALPN,
        `https_url` HTTP/1.1 alone."""
        self.page_bytes, self.workers, self.connections = page_bytes, workers, connections
        self.http2, self.tls = http2, tls
        self.cpu_affinity, self.gzip_level = cpu_affinity, gzip_level

    def __enter__(self) -> Nginx:
        if not shutil.which("nginx"):
            raise RuntimeError("nginx not found: install Debian's nginx-light (scripts/install-system-deps)")
        self.root = tempfile.mkdtemp(prefix="corebench-nginx-")
        os.chmod(self.root, 0o755)
        www = os.path.join(self.root, "www")
        os.makedirs(www)
        with open(os.path.join(www, "page.html"), "wb") as f:
            f.write(_text(self.page_bytes) if self.gzip_level else b"x" * (self.page_bytes - 1) + b"\n")
        gzip = (
            f"gzip on; gzip_comp_level {self.gzip_level}; gzip_min_length 0; gzip_types text/html;"
            if self.gzip_level
            else ""
        )
        self.port = free_port()
        self.h2_port = free_port() if self.http2 else None
        h2 = (
            f"listen 127.0.0.1:{self.h2_port} http2 backlog={max(4096, self.connections)};"
            f" http2_max_concurrent_streams 1024;"
            if self.http2
            else ""
        )
        self.tls_ports = (free_port(), free_port()) if self.tls else None
        tls = ""
        if self.tls_ports is not None:
            key, cert = os.path.join(self.root, "key.pem"), os.path.join(self.root, "cert.pem")
            subprocess.run(
                ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
                + ["-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=127.0.0.1"],
                check=True,
                capture_output=True,
            )
            tls = (
                f"listen 127.0.0.1:{self.tls_ports[0]} ssl http2; listen 127.0.0.1:{self.tls_ports[1]} ssl;"
                f" ssl_certificate {cert}; ssl_certificate_key {key};"
            )
        conf = os.path.join(self.root, "nginx.conf")
        with open(conf, "w") as f:
            f.write(f"""
worker_processes {self.workers};
worker_rlimit_nofile {self.connections + 100};
{f"worker_cpu_affinity {self.cpu_affinity};" if self.cpu_affinity else ""}
daemon off;
pid {self.root}/nginx.pid;
error_log {self.root}/error.log;
events {{ worker_connections {self.connections + 100}; }}
http {{
  access_log off;
  keepalive_requests 100000000;
  keepalive_timeout 120s;
  {gzip}
  server {{
    listen 127.0.0.1:{self.port} backlog={max(4096, self.connections)};
    {h2}
    {tls}
    root {www};
    location = /status {{ stub_status; }}
    # Every other path gets the page: a replayed log's paths are answered.
    location / {{ try_files $uri /page.html; }}
  }}
}}
""")
        self.proc = subprocess.Popen(
            ["nginx", "-c", conf, "-p", self.root],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                self.served()
                return self
            except OSError:
                time.sleep(0.05)
        self.__exit__(None, None, None)
        raise RuntimeError(f"nginx did not start (see {self.root}/error.log)")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/page.html"

    @property
    def h2_url(self) -> str:
        assert self.h2_port is not None, "started without http2"
        return f"http://127.0.0.1:{self.h2_port}/page.html"

    @property
    def h2s_url(self) -> str:
        assert self.tls_ports is not None, "started without tls"
        return f"https://127.0.0.1:{self.tls_ports[0]}/page.html"

    @property
    def https_url(self) -> str:
        assert self.tls_ports is not None, "started without tls"
        return f"https://127.0.0.1:{self.tls_ports[1]}/page.html"

    def _status(self) -> list[str]:
        text: str = urllib.request.urlopen(f"http://127.0.0.1:{self.port}/status", timeout=5).read().decode()
        return text.split("\n")

    def served(self) -> int:
        """nginx's request counter; it counts this status request too."""
        return int(self._status()[2].split()[2])

    def active(self) -> int:
        """The connections nginx holds open, this status request's included."""
        return int(self._status()[0].split(":")[1])

    def workers_cpu_s(self) -> float:
        """CPU seconds (user and system) the worker processes have used: the
        server's cost, to divide by its own count of requests."""
        workers = psutil.Process(self.proc.pid).children()
        return sum(sum(w.cpu_times()[:2]) for w in workers)

    def served_since(self, before: int) -> int:
        """Requests answered since `before` was read, less the status request that read it."""
        return self.served() - before - 1

    def __exit__(self, *exc: object) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGQUIT)
            self.proc.wait(timeout=10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(self.proc.pid, signal.SIGKILL)
        shutil.rmtree(self.root, ignore_errors=True)
