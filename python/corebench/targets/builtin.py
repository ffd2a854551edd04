"""The built-in server (`corebench serve`) in its own process on a free
port, optionally pinned to CPUs: for tests, benchmarks and the demo."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time


class Served:
    """`Served("--model", "prefork", "--workers", "2", cpus={0})`: the flags of
    `corebench serve`; `cpus` pins the server and its workers."""

    def __init__(self, *args: str, cpus: set[int] | None = None):
        self.args, self.cpus = args, cpus

    def __enter__(self) -> Served:
        self.started = time.monotonic()
        cpus = self.cpus
        pin = (lambda: os.sched_setaffinity(0, cpus)) if cpus else None
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "corebench", "serve", "--port", "0", *self.args],
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=pin,
        )
        assert self.proc.stderr is not None  # stderr=PIPE
        line = self.proc.stderr.readline()
        self.ready_s = time.monotonic() - self.started
        m = re.search(r"listening on (https?://[\d.:]+/)", line)
        if not m:
            self.proc.kill()
            raise RuntimeError(f"corebench serve did not start: {line}{self.proc.stderr.read()}")
        self.url = m.group(1)
        return self

    def children(self) -> list[int]:
        out = []
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    with open(f"/proc/{d}/stat") as f:
                        fields = f.read().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                if int(fields[1]) == self.proc.pid:
                    out.append(int(d))
        return out

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=10)
        finally:
            assert self.proc.stderr is not None  # stderr=PIPE
            self.proc.stderr.close()

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.stop()
        if self.proc.poll() is None:
            self.proc.kill()
