"""One measurement per machine at a time: two experiments (or a `load`
started while an experiment measures) load the same cores and each
measures the other, silently (concurrency 1 read 33k req/s beside another
experiment, 17.5k alone).

A measuring command claims the machine: an exclusive `flock` on a file in
/run/lock (the kernel drops it when the process ends, however it ends, so
no claim outlives its holder). A second one is refused in one line naming
the holder, unless given `--force`: then it measures beside it, leaves a
note of itself in the lock folder while it does, and both mark every run
that overlapped with what else was measuring (`RunLayout.sharing`), which
the analysis treats as a limit of the figures."""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
import time
from pathlib import Path

from corebench.errors import UsageError

LOCK_NAME = "corebench.lock"
HOLDER_NAME = "corebench.holder"
# Forced measurements that ended, one line each ("START END WHAT"), so a run
# they fell wholly inside is still marked; emptied by each new holder.
ENDED_NAME = "corebench.shared"
# One per forced measurement beside the holder: "corebench-shared-PID-N".
SHARED_PREFIX = "corebench-shared-"


class MachineBusy(UsageError):
    """Another corebench is measuring on this machine."""


def lock_dir() -> Path:
    """/run/lock where it can be written (world-writable on Debian), else
    the temporary folder."""
    run = Path("/run/lock")
    return run if run.is_dir() and os.access(run, os.W_OK) else Path(tempfile.gettempdir())


class Claim:
    """This process's claim on the machine: held (the lock) or forced
    (beside the holder). `others()` says who else measures now."""

    def __init__(self, what: str, force: bool, where: Path | None = None) -> None:
        self.what = what
        self.dir = where or lock_dir()
        self.held = False
        self.began_unix = time.time()
        self._closed = False
        self._name = f"{SHARED_PREFIX}{os.getpid()}-{id(self)}"
        self._fd: int | None = os.open(self.dir / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._fd)
            self._fd = None
            holder = self._holder() or "another corebench"
            if not force:
                raise MachineBusy(
                    f"the machine is busy: {holder} is measuring on it, and two measurements on one machine "
                    "measure each other; wait for it to end, or give --force to measure anyway (the runs of both "
                    "are then marked as sharing the machine)"
                ) from None
            self._note().write_text(f"{self.began_unix}\t{self._said()}")
            return
        self.held = True
        with contextlib.suppress(OSError):
            (self.dir / HOLDER_NAME).write_text(self._said())
            (self.dir / ENDED_NAME).write_text("")

    def _said(self) -> str:
        return f"{self.what} (pid {os.getpid()}, since {time.strftime('%H:%M:%S', time.localtime(self.began_unix))})"

    def _note(self) -> Path:
        return self.dir / self._name

    def _holder(self) -> str | None:
        try:
            return (self.dir / HOLDER_NAME).read_text().strip() or None
        except OSError:
            return None

    def others(self, since_unix: float | None = None) -> list[str]:
        """What else measures on this machine now: the holder (when this
        process is not it) and each forced measurement but this one; with
        `since_unix`, also the forced ones that ended after it."""
        out = [] if self.held else [h for h in [self._holder()] if h is not None]
        for note in self.dir.glob(f"{SHARED_PREFIX}*"):
            try:
                pid = int(note.name.removeprefix(SHARED_PREFIX).split("-")[0])
            except ValueError:
                continue
            if note.name == self._name:
                continue
            if not Path(f"/proc/{pid}").exists():
                with contextlib.suppress(OSError):
                    note.unlink()  # its process is gone: nothing of ours outlives it
                continue
            with contextlib.suppress(OSError, ValueError):
                out.append(note.read_text().split("\t", 1)[1].strip())
        if since_unix is not None:
            with contextlib.suppress(OSError):
                for line in (self.dir / ENDED_NAME).read_text().splitlines():
                    with contextlib.suppress(ValueError):
                        _, end, what = line.split("\t", 2)
                        if float(end) >= since_unix:
                            out.append(what)
        return sorted(set(out))

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        # Said to whoever still measures: a run it made beside this one.
        with contextlib.suppress(OSError), (self.dir / ENDED_NAME).open("a") as f:
            f.write(f"{self.began_unix}\t{time.time()}\t{self._said()}\n")
        if self._fd is not None:
            with contextlib.suppress(OSError):
                (self.dir / HOLDER_NAME).unlink()
            os.close(self._fd)
            self._fd = None
        else:
            with contextlib.suppress(OSError):
                self._note().unlink()

    def __enter__(self) -> Claim:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
