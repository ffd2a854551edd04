"""Debian's Prometheus node_exporter on a free loopback port, with the
collectors corebench reads (cpu, diskstats, netdev, meminfo, uname): a stand-in
for the exporter on a server host, to try a plan's `[target] monitor`
before the lab exists."""

from __future__ import annotations

import shutil
import subprocess
import time

from corebench.monitor.exporter import ExporterError, fetch
from corebench.targets.process import free_port

BINARY = "prometheus-node-exporter"
COLLECTORS = ("cpu", "diskstats", "netdev", "meminfo", "uname")


class NodeExporter:
    """`url` is its /metrics; started on entry, stopped on exit."""

    def __init__(self) -> None:
        self.port = 0
        self.url = ""
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> NodeExporter:
        binary = shutil.which(BINARY)
        if binary is None:
            raise FileNotFoundError(f"{BINARY} is not installed (apt-get install {BINARY})")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/metrics"
        argv = [binary, f"--web.listen-address=127.0.0.1:{self.port}", "--collector.disable-defaults"]
        self.proc = subprocess.Popen(
            argv + [f"--collector.{c}" for c in COLLECTORS],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                fetch(self.url)
                return self
            except ExporterError:
                if self.proc.poll() is not None:
                    break
                time.sleep(0.05)
        self.__exit__()
        raise RuntimeError(f"{BINARY} did not answer on {self.url}")

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
