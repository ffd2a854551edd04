"""A real nginx (Debian's) on a free loopback port, in a directory of its own,
never touching the system's instance: a static page of a chosen size, and
stub_status so the server itself counts the requests it answered."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Nginx:
    def __init__(self, page_bytes: int = 44, workers: int = 1, connections: int = 20000,
                 cpu_affinity: str | None = None):
        """`cpu_affinity` is nginx's worker_cpu_affinity mask, e.g. "01" for CPU 0."""
        self.page_bytes, self.workers, self.connections = page_bytes, workers, connections
        self.cpu_affinity = cpu_affinity

    def __enter__(self) -> "Nginx":
        if not shutil.which("nginx"):
            raise RuntimeError("nginx not found: install Debian's nginx-light (scripts/install-system-deps)")
        self.root = tempfile.mkdtemp(prefix="corebench-nginx-")
        os.chmod(self.root, 0o755)
        www = os.path.join(self.root, "www")
        os.makedirs(www)
        with open(os.path.join(www, "page.html"), "wb") as f:
            f.write(b"x" * (self.page_bytes - 1) + b"\n")
        self.port = free_port()
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
  server {{
    listen 127.0.0.1:{self.port} backlog={max(4096, self.connections)};
    root {www};
    location = /status {{ stub_status; }}
  }}
}}
""")
        self.proc = subprocess.Popen(["nginx", "-c", conf, "-p", self.root],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
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

    def served(self) -> int:
        """nginx's request counter; it counts this status request too."""
        text = urllib.request.urlopen(f"http://127.0.0.1:{self.port}/status", timeout=5).read().decode()
        return int(text.split("\n")[2].split()[2])

    def served_since(self, before: int) -> int:
        """Requests answered since `before` was read, less the status request that read it."""
        return self.served() - before - 1

    def __exit__(self, *exc) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGQUIT)
            self.proc.wait(timeout=10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(self.proc.pid, signal.SIGKILL)
        shutil.rmtree(self.root, ignore_errors=True)
