"""Where a configuration's target runs, and one start of it.

A `TargetHost` starts a target for a configuration and gives back a
`TargetSession`: its CPU layout, its filesystem image, its services and its
process, or why it could not start. The session is a context manager: on
leaving it, everything it started is stopped, its cgroups released and its
image unmounted, also after Ctrl-C. `LocalHost` runs targets on this
machine; a host elsewhere implements the same protocol (as `LoadBackend`
has a local engine and a cluster of agents)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

from corebench import __version__
from corebench.monitor.protocol import RunMonitor
from corebench.monitor.sampler import Monitor
from corebench.plan import Point
from corebench.plan.model import Target
from corebench.store import TargetInfo
from corebench.targets import filesystem, owned, process, recipes, services
from corebench.targets.cpus import CpuControl, Layout


class TargetSession:
    """One start of a configuration's target (or a server already running,
    for a `url` target), with what it needs while it runs."""

    def __init__(self, key: str, target: Target, layout: Layout, error: str | None = None) -> None:
        self.key = key
        self.target = target
        self.layout = layout
        # Why the target cannot serve; its runs fail at once with it.
        self.error = error
        self.info = TargetInfo()
        self.started: process.Started | None = None
        self.mounted: filesystem.Mounted | None = None
        self.services: list[services.StartedService] = []
        self.start_s = 0.0  # how long its start took

    def __enter__(self) -> TargetSession:
        return self

    def __exit__(self, kind: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    @property
    def base_url(self) -> str | None:
        return self.started.base_url if self.started is not None else self.target.url

    @property
    def pid(self) -> int | None:
        return self.started.proc.pid if self.started is not None else None

    def alive(self) -> bool:
        return self.started is not None and self.started.proc.poll() is None

    def serves(self) -> bool:
        """Whether the next run may use this session: a server already
        running, one started and alive, or one that failed to start (not
        retried within its visit: its runs fail with the same reason)."""
        return self.target.url is not None or self.alive() or self.error is not None

    def exited(self) -> str | None:
        """If the target's process exited, why, with the tail of its output;
        its process group's stragglers are stopped, and the next run starts
        it afresh."""
        if self.started is None or self.started.proc.poll() is None:
            return None
        code, output = self.started.proc.returncode, process.tail(self.started.log_path)
        why = f"the target exited with status {code} during the run; its output ends:\n{output}"
        process.stop(self.started.proc, self.target)
        self.started = None
        return why

    def devices(self) -> list[str]:
        """The block devices its filesystem image is on, by /proc/diskstats name."""
        if self.mounted is None or not self.mounted.facts:
            return []
        return [Path(self.mounted.facts["device"]).name]

    def groups(self) -> dict[str, int]:
        """Each service's process tree, by name."""
        return {s.name: s.proc.pid for s in self.services}

    def accounting(self) -> dict[str, list[str]]:
        """The cgroups that measure each process group apart."""
        return {"target": self.layout.accounting} | {s.name: self.layout.of(s.name).accounting for s in self.services}

    def monitor(self, generator_cores: int) -> RunMonitor:
        """The monitor of a run of this target (entered by the caller)."""
        return Monitor(
            self.pid,
            generator_cores,
            self.devices(),
            self.groups(),
            self.accounting(),
            target_cpus=self.layout.target_cpus,
        )

    def serve(self, values: dict[str, Any], plan_dir: Path, run_dir: Path, ready_path: str) -> process.Started:
        """Starts the target's process on the session's CPUs and waits until
        it answers `ready_path`; leaving the session stops it."""
        self.started = process.start(self.target, values, self.layout, plan_dir, run_dir, ready_path)
        return self.started

    def stop(self) -> None:
        """Stops what was started, releases the CPUs and unmounts the image
        (the target's log, on it, is kept beside it)."""
        if self.started is not None:
            process.stop(self.started.proc, self.target)
            self.started = None
        if self.services:
            services.stop_all(self.services)
            self.services = []
        CpuControl.release(self.layout)
        if self.mounted is not None:
            filesystem.unmount(self.mounted, keep=("target.log",))
            self.mounted = None


class TargetHost(Protocol):
    """Where targets run. Entered once per experiment (its work folder made)
    and left once (everything it holds removed)."""

    starts: int  # targets started so far

    def __enter__(self) -> TargetHost: ...

    def __exit__(self, kind: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None: ...

    def close(self) -> None:
        """Removes what the host holds; leaving it does too, once."""
        ...

    def server_version(self, target: Target) -> str | None:
        """What the target reports itself to be (its version command's first line)."""
        ...

    def facts(self) -> dict[str, Any] | None:
        """The target's machine (system.check.facts), where it is not this one."""
        ...

    def start(self, point: Point, key: str, plan_dir: Path) -> TargetSession:
        """The target of `point` started on its CPUs and ready, or a session
        that says why not (its `error`); raises only on Ctrl-C or SIGTERM,
        having stopped what it started."""
        ...


class LocalHost:
    """Targets on this machine: CPU sets through cgroups or affinity, the
    filesystem images and each start's folder in a work folder of its own."""

    def __init__(self, control: CpuControl) -> None:
        self.control = control
        self._work_dir: Path | None = None
        self.starts = 0

    @property
    def work_dir(self) -> Path:
        """The work folder, made on entering the host."""
        assert self._work_dir is not None, "enter the host first"
        return self._work_dir

    def __enter__(self) -> LocalHost:
        self._work_dir = Path(tempfile.mkdtemp(prefix=owned.WORK_PREFIX))
        os.chmod(self._work_dir, 0o755)  # servers that drop privileges read their folders in it
        owned.claim(self._work_dir)  # its images are not a killed run's leftovers
        return self

    def __exit__(self, kind: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Removes the work folder (once; the sessions are stopped first)."""
        if self._work_dir is not None:
            shutil.rmtree(self._work_dir, ignore_errors=True)
            self._work_dir = None

    def server_version(self, target: Target) -> str | None:
        t = recipes.expand(target)
        return version_of(t.version_command, t.builtin is not None)

    def facts(self) -> dict[str, Any] | None:
        return None  # this machine: the experiment's own host facts

    def start(self, point: Point, key: str, plan_dir: Path) -> TargetSession:
        t = point.target
        try:
            own = {name: svc.cpus for name, svc in t.services.items()}
            layout = self.control.layout(t.cpus, own, t.smt, t.numa) if t.url is None else self.control.layout(None)
        except (OSError, RuntimeError, ValueError) as e:
            return TargetSession(key, t, self.control.layout(None), f"CPU layout: {e}")
        session = TargetSession(key, t, layout)
        if t.url is not None:
            session.info = TargetInfo(kind="url", base_url=t.url)
            return session
        began = time.monotonic()
        run_dir = self.work_dir / f"target-{self.starts}"
        self.starts += 1
        try:
            _start(session, point, plan_dir, run_dir)
        except (process.TargetError, filesystem.FilesystemError) as e:
            session.stop()
            session.error = f"target not started: {e}"
            return session
        except BaseException:
            session.stop()  # start() stopped the process; its cgroups and filesystem go too
            raise
        session.start_s = time.monotonic() - began
        return session


def _start(session: TargetSession, point: Point, plan_dir: Path, run_dir: Path) -> None:
    t = point.target
    if t.filesystem is not None:
        session.mounted = filesystem.mount(t.filesystem, run_dir)
        session.info.filesystem = dict(session.mounted.facts)
    values = dict(point.levels)
    if t.services:
        session.services = services.start_all(t.services, point.levels, session.layout, plan_dir, run_dir)
        session.info.services = {s.name: s.facts() for s in session.services}
        values |= services.values_of(session.services)
    started = session.serve(values, plan_dir, run_dir, point.load.path)
    session.info = session.info.model_copy(
        update={
            "kind": "builtin" if t.builtin else t.recipe or "command",
            "pid": started.proc.pid,
            "argv": started.argv,
            "base_url": started.base_url,
            "ready_s": started.ready_s,
            "cpus_allowed": process.cpus_allowed(started.proc.pid),
        }
    )


def version_of(command: list[str] | None, builtin: bool) -> str | None:
    """A server's own word on its version: the first line its version
    command prints (stdout, else stderr), or why it could not be asked."""
    if builtin:
        return f"corebench serve {__version__}"
    if not command:
        return None
    try:
        p = subprocess.run(command, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError) as e:
        return f"unknown ({e})"
    out = (p.stdout or p.stderr).strip().splitlines()
    return out[0] if out else None
